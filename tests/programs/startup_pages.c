/* SPDX-License-Identifier: MIT */
/* startup_pages.c - run under LD_PRELOAD=liballoy.so: one malloc(16), then
 * counts the pages of liballoy's text that the process has mapped
 * (/proc/self/pagemap's present bits over the r-xp mapping), and fails if
 * they are more than the bound given (argv[1]).  The kernel maps the 64 KiB
 * around each fault of a file's page, so code the start-up runs from all
 * over the text maps all of it (38 pages before cmake/startup-text.ld);
 * gathered at the text's start, it maps the headers' first 64 KiB and
 * little else.  Uses no stdio, which would add allocations of its own. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char maps[1 << 16];

int main(int argc, char **argv) {
    long bound = argc > 1 ? atol(argv[1]) : 0;
    volatile char *p = malloc(16);
    if (!p)
        return 2;
    p[0] = 1;
    int fd = open("/proc/self/maps", O_RDONLY);
    size_t len = 0;
    ssize_t r;
    while (fd >= 0 && (r = read(fd, maps + len, sizeof maps - 1 - len)) > 0)
        len += (size_t)r;
    if (fd >= 0)
        close(fd);
    maps[len] = 0;
    int pm = open("/proc/self/pagemap", O_RDONLY);
    if (pm < 0)
        return 2;
    long present = 0, pages = 0;
    for (char *l = maps; *l;) {
        char *e = strchr(l, '\n');
        if (!e)
            break;
        *e = 0;
        char *q;
        unsigned long lo = strtoul(l, &q, 16), hi = strtoul(q + 1, &q, 16);
        if (strstr(l, "liballoy") && !strncmp(q + 1, "r-xp", 4))
            for (unsigned long a = lo; a < hi; a += 4096, pages++) {
                uint64_t ent = 0;
                if (pread(pm, &ent, sizeof ent, (off_t)(a / 4096 * 8)) == sizeof ent && ent >> 63)
                    present++;
            }
        l = e + 1;
    }
    close(pm);
    char msg[160];
    int n = snprintf(msg, sizeof msg, "liballoy text: %ld of %ld pages mapped (bound %ld)\n",
                     present, pages, bound);
    if (write(1, msg, (size_t)n) < 0)
        return 2;
    if (!pages)
        return 3; /* not run under liballoy.so */
    return present > bound;
}
