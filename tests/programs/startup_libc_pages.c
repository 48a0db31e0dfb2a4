/* SPDX-License-Identifier: MIT */
/* startup_libc_pages.c - one malloc(16), then whether the pages of libc's
 * text that hold __register_atfork (pthread_atfork's) and clock_gettime are
 * mapped (/proc/self/pagemap's present bits).  A program that never forks
 * with threads and never reads a clock does not run them, and glibc's own
 * malloc does not either; an allocator that calls them at start-up makes
 * the kernel map the 64 KiB of libc's text around each (fault-around).
 * Run twice by the tests: without LD_PRELOAD it checks that this libc's
 * start-up leaves those pages unmapped (else it exits 77: skipped, the
 * test says nothing on this libc); under LD_PRELOAD=liballoy.so it fails
 * if either is mapped.  Reads /proc with open and read, not stdio. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

extern int __register_atfork(void (*)(void), void (*)(void), void (*)(void), void *);

static int present(int pm, const void *p) {
    uint64_t ent = 0;
    if (pread(pm, &ent, sizeof ent, (off_t)((uintptr_t)p / 4096 * 8)) != sizeof ent)
        return -1;
    return (int)(ent >> 63);
}

int main(int argc, char **argv) {
    int under_alloy = argc > 1 && !strcmp(argv[1], "alloy");
    char *volatile p = malloc(16);
    if (!p)
        return 2;
    p[0] = 1;
    /* (the addresses come from the GOT: taking them runs nothing in libc) */
    const void *fns[2] = {(const void *)__register_atfork, (const void *)clock_gettime};
    const char *names[2] = {"__register_atfork", "clock_gettime"};
    int pm = open("/proc/self/pagemap", O_RDONLY);
    if (pm < 0)
        return 2;
    int mapped[2];
    for (int i = 0; i < 2; i++)
        mapped[i] = present(pm, fns[i]);
    close(pm);
    free(p);
    int bad = 0;
    for (int i = 0; i < 2; i++) {
        char msg[160];
        int n = snprintf(msg, sizeof msg, "%s: libc page of %s %s\n",
                         under_alloy ? "liballoy" : "libc alone", names[i],
                         mapped[i] < 0 ? "unknown"
                         : mapped[i]   ? "mapped"
                                       : "not mapped");
        if (write(1, msg, (size_t)n) < 0)
            return 2;
        if (mapped[i] != 0)
            bad = 1;
    }
    if (!under_alloy)
        return bad ? 77 : 0;
    return bad;
}
