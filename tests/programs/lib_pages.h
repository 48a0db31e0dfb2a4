/* SPDX-License-Identifier: MIT */
/* lib_pages.h - how many pages of liballoy's mappings with permissions
 * `perm` (for example "r-xp": its text) process pid has mapped: each page's
 * present bit in /proc/PID/pagemap, over the mappings /proc/PID/maps names.
 * Reads /proc with open and read (stdio would allocate, in a process whose
 * allocations are being counted).  For startup_pages.c and exit_pages.c. */
#ifndef ALLOY_TEST_LIB_PAGES_H
#define ALLOY_TEST_LIB_PAGES_H
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

static char lib_pages_maps[1 << 16];

/* The pages present, with *pages the mappings' pages; -1 when pagemap
 * cannot be read. */
static long lib_pages(pid_t pid, const char *perm, long *pages) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    int fd = open(path, O_RDONLY);
    size_t len = 0;
    ssize_t r;
    while (fd >= 0 && (r = read(fd, lib_pages_maps + len, sizeof lib_pages_maps - 1 - len)) > 0)
        len += (size_t)r;
    if (fd >= 0)
        close(fd);
    lib_pages_maps[len] = 0;
    snprintf(path, sizeof path, "/proc/%d/pagemap", (int)pid);
    int pm = open(path, O_RDONLY);
    if (pm < 0)
        return -1;
    long present = 0;
    *pages = 0;
    for (char *s = lib_pages_maps; *s;) {
        char *e = strchr(s, '\n');
        if (!e)
            break;
        *e = 0;
        char *q;
        unsigned long lo = strtoul(s, &q, 16), hi = strtoul(q + 1, &q, 16);
        if (strstr(s, "liballoy") && !strncmp(q + 1, perm, 4))
            for (unsigned long at = lo; at < hi; at += 4096, (*pages)++) {
                uint64_t ent = 0;
                if (pread(pm, &ent, sizeof ent, (off_t)(at / 4096 * 8)) == sizeof ent && ent >> 63)
                    present++;
            }
        s = e + 1;
    }
    close(pm);
    return present;
}

#endif
