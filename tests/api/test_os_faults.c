/* SPDX-License-Identifier: MIT */
/* test_os_faults.c - the kernel refuses to give memory back: madvise and
 * munmap fail, and alloy counts each refusal (os_failures), keeps going,
 * and loses nothing.  The program defines madvise and munmap itself, which
 * the statically linked library then calls: each fails with EINVAL while
 * its flag is set, and is the system call otherwise.
 *
 *   madvise  the freed tail of a large block, all written, is purged while
 *            madvise fails: its pages stay dirty (still counted as free, not as
 *            purged), so the calloc that takes them again clears them; a
 *            purge that marked them clean handed out 0xff bytes;
 *   munmap   a direct map (64 MiB) and the page heap's wholly free blocks
 *            are unmapped while munmap fails: counted, and the program
 *            goes on allocating.
 * The mode is the first argument. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "alloy.h"
#include "check.h"

#define MiB ((size_t)1 << 20)

static volatile int fail_madvise, fail_munmap;
static volatile unsigned madvise_refused, munmap_refused;

int madvise(void *addr, size_t len, int advice) {
    if (fail_madvise) {
        madvise_refused++;
        errno = EINVAL;
        return -1;
    }
    return (int)syscall(SYS_madvise, addr, len, advice);
}

int munmap(void *addr, size_t len) {
    if (fail_munmap) {
        munmap_refused++;
        errno = EINVAL;
        return -1;
    }
    return (int)syscall(SYS_munmap, addr, len);
}

static alloy_stats_t stats(void) {
    alloy_stats_t s = {.size = sizeof s};
    CHECK(alloy_stats_read(&s) == 0);
    return s;
}

static int all_zero(const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return 0;
    return 1;
}

static void refused_madvise(void) {
    /* free pages inside a block that stays mapped (a block wholly free
     * would be unmapped instead): the tail of a block that realloc shrinks
     * in place */
    unsigned char *p = alloy_calloc(1, 4 * MiB);
    CHECK(p != NULL);
    memset(p, 0xff, 4 * MiB);
    CHECK(alloy_realloc(p, MiB) == p);
    alloy_stats_t before = stats();
    fail_madvise = 1;
    alloy_purge();
    fail_madvise = 0;
    alloy_stats_t after = stats();
    CHECK(madvise_refused > 0);
    CHECK_EQ_U(after.os_failures - before.os_failures, madvise_refused);
    /* the pages are still dirty: free, not purged */
    CHECK(after.pageheap_free_bytes >= 2 * MiB);
    CHECK_EQ_U(after.purges, before.purges);
    unsigned char *q = alloy_calloc(1, 2 * MiB);
    CHECK(q && all_zero(q, 2 * MiB));
    CHECK(q >= p + MiB && q < p + 4 * MiB); /* it was the tail */
    alloy_free(q);
    alloy_free(p);
    /* and a purge that the kernel accepts gives them back */
    alloy_purge();
    CHECK(stats().purges > after.purges);
}

static void refused_munmap(void) {
    unsigned char *big = alloy_malloc(64 * MiB); /* a direct map */
    CHECK(big != NULL);
    memset(big, 1, MiB);
    unsigned char *blocks[8];
    for (int i = 0; i < 8; i++) { /* page-heap blocks that purge will unmap */
        blocks[i] = alloy_malloc(3 * MiB);
        CHECK(blocks[i] != NULL);
        memset(blocks[i], 2, 4096);
    }
    alloy_stats_t before = stats();
    fail_munmap = 1;
    alloy_free(big);
    for (int i = 0; i < 8; i++)
        alloy_free(blocks[i]);
    alloy_purge();
    fail_munmap = 0;
    alloy_stats_t after = stats();
    CHECK(munmap_refused > 0);
    CHECK_EQ_U(after.os_failures - before.os_failures, munmap_refused);
    /* it goes on */
    for (int i = 0; i < 8; i++) {
        blocks[i] = alloy_calloc(1, 3 * MiB);
        CHECK(blocks[i] && all_zero(blocks[i], 3 * MiB));
    }
    for (int i = 0; i < 8; i++)
        alloy_free(blocks[i]);
    big = alloy_malloc(64 * MiB);
    CHECK(big != NULL);
    alloy_free(big);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "madvise"))
        refused_madvise();
    else if (!strcmp(mode, "munmap"))
        refused_munmap();
    else {
        fprintf(stderr, "usage: test_os_faults madvise|munmap\n");
        return 2;
    }
    return CHECK_DONE();
}
