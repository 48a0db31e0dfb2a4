/* SPDX-License-Identifier: MIT */
/* test_secure.c - what the secure flavour adds, beyond test_badinput and
 * test_checked and test_quarantine (the quarantine, a setting):
 *   - a span's objects are handed out in a random order (not by address,
 *     and not by a fixed stride);
 *   - a large block (300000 bytes) has the release flavour's layout, no
 *     guard page of its own: its usable size is its pages as the page heap
 *     rounds them (74 to 80), all writable; a memset one byte past them
 *     aborts with "memset(): heap overflow" (checked.c);
 *   - a block of its own (4 MiB) is its page-heap block, whose mapping has
 *     an inaccessible page just before and just after it (ay_os_map_chunk):
 *     the kernel says so (a guard region's bit in /proc/self/pagemap where
 *     madvise(MADV_GUARD_INSTALL) made it, a mapping without access in
 *     /proc/self/maps where mprotect did), and touching it faults; memory
 *     that merely happens to be unmapped there is no guard;
 *   - usable sizes leave room for the tag, and writing all of them is fine.
 * Built against liballoy_secure.a (test secure-parts) and, to show that the
 * checks can fail, against liballoy.a (test secure-parts-release, which
 * must fail). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloy.h"
#include "check.h"
#include "child.h"

/* Is the page at a a guard: in a mapping without access (/proc/self/maps:
 * mprotect's guard), or marked a guard region in /proc/self/pagemap (bit
 * 58: madvise's MADV_GUARD_INSTALL, Linux 6.13 and later)?  Unmapped memory
 * is not. */
static int is_guard_page(uintptr_t a) {
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return 0;
    char line[512], perms[8] = "";
    int mapped = 0;
    while (!mapped && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && a >= lo && a < hi)
            mapped = 1;
    }
    fclose(f);
    if (!mapped)
        return 0;
    if (strncmp(perms, "---", 3) == 0)
        return 1;
    int fd = open("/proc/self/pagemap", O_RDONLY);
    uint64_t entry = 0;
    int ok = fd >= 0 && pread(fd, &entry, sizeof entry, (off_t)(a / 4096 * sizeof entry)) ==
                            (ssize_t)sizeof entry;
    if (fd >= 0)
        close(fd);
    return ok && (entry >> 58 & 1);
}

static char *volatile hidden;
static volatile char sink;

static int dies_touching(char *p) {
    pid_t pid = fork();
    if (pid == 0) {
        hidden = p;
        sink = *hidden;
        _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV;
}

/* memset, called through a pointer: the library's own, never inlined */
static void *(*volatile memset_p)(void *, int, size_t) = memset;
static char *big;

static void memset_past_big(void) { memset_p(big, 1, malloc_usable_size(big) + 1); }

int main(void) {
    /* random order: of 400 fresh 48-byte blocks, in address order would be
     * every step up */
    enum { N = 400 };
    static char *b[N];
    unsigned up = 0;
    for (int i = 0; i < N; i++) {
        b[i] = malloc(48);
        up += i > 0 && b[i] > b[i - 1];
    }
    fprintf(stderr, "secure: %u of %u steps go up in address\n", up, N - 1);
    CHECK(up < (N - 1) * 3 / 4);
    /* ... nor by a fixed stride: fewer than an eighth of the steps repeat
     * the step before (in address order every step does, and so would
     * nearly every step of an order that strides through a run) */
    unsigned repeats = 0;
    for (int i = 2; i < N; i++)
        repeats += b[i] - b[i - 1] == b[i - 1] - b[i - 2];
    fprintf(stderr, "secure: %u of %u steps repeat the step before\n", repeats, N - 2);
    CHECK(repeats < (N - 2) / 8);
    for (int i = 0; i < N; i++)
        free(b[i]);

    /* a large block: the page heap's pages, as in the release flavour, and
     * a memset past them aborts */
    big = malloc(300000);
    CHECK(malloc_usable_size(big) == 80 * 4096);
    memset(big, 1, malloc_usable_size(big));
    char out[1024];
    int status = child_run(memset_past_big, out, sizeof out);
    int aborted = status != -1 && WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT &&
                  strstr(out, "memset(): heap overflow") != NULL;
    if (!aborted)
        fprintf(stderr, "memset past the block: status %#x, stderr: %s\n", status, out);
    CHECK(aborted);
    free(big);

    /* a block of its own (4 MiB) is its page-heap block: it starts on a
     * huge page (thp:auto aligns the mapping to 2 MiB), fills the mapping,
     * and the mapping's guard pages are just before and just after it */
    char *own = malloc(4u << 20);
    CHECK(((uintptr_t)own & ((2u << 20) - 1)) == 0);
    CHECK(malloc_usable_size(own) == 4u << 20);
    memset(own, 1, 4u << 20);
    CHECK(is_guard_page((uintptr_t)own - 1) && dies_touching(own - 1));
    CHECK(is_guard_page((uintptr_t)own + malloc_usable_size(own)) &&
          dies_touching(own + malloc_usable_size(own)));
    free(own);

    /* the usable size is all usable (the tag is beyond it) */
    for (size_t n = 0; n < 2000; n += 7) {
        char *q = malloc(n);
        size_t u = malloc_usable_size(q);
        CHECK(u >= n);
        memset(q, 0x5a, u);
        free(q); /* the tag must still be intact */
    }
    return CHECK_DONE();
}
