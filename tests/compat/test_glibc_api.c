/* SPDX-License-Identifier: MIT */
/* test_glibc_api.c - alloy's numbers behind glibc's extensions: every
 * mallinfo2 field against the alloy_ctl figure docs/STATS.md maps it to
 * (exact, one thread, nothing moving), direct maps as glibc's mmapped
 * chunks, mallinfo's clamping, malloc_trim's answer and its effect.
 *
 * usage: test_glibc_api [all | xml FILE]
 *   xml FILE: write malloc_info to FILE, and print the figures it must
 *   agree with on stdout, as key=value (check_malloc_info.py reads both)
 */
#include <limits.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "alloy.h"
#include "alloy/ctl.h"

static uint64_t ctl(const char *name) {
    uint64_t v = 0;
    size_t len = sizeof v;
    CHECK_EQ_U(alloy_ctl(name, &v, &len, NULL, 0), 0);
    return v;
}

static void identities(void) {
    struct mallinfo2 m = mallinfo2();
    alloy_stats_t s = {.size = sizeof s};
    CHECK_EQ_U(alloy_stats_read(&s), 0);
    CHECK_EQ_U(m.uordblks + m.fordblks, m.arena);
    CHECK_EQ_U(m.uordblks + m.hblkhd, s.allocated);
    CHECK_EQ_U(m.arena + m.hblkhd, s.mapped);
    CHECK_EQ_U(m.fsmblks, s.tcache_bytes);
    CHECK_EQ_U(m.usmblks, s.peak_active);
    CHECK_EQ_U(m.keepcost, s.pageheap_free_bytes);
    uint64_t fast = 0, rest = 0;
    for (unsigned c = 0; c < s.nclasses; c++) {
        alloy_class_stats_t cs = {.size = sizeof cs};
        CHECK_EQ_U(alloy_class_stats_read(c, &cs), 0);
        fast += cs.tcache_bytes / cs.class_size;
        rest += cs.central_bytes / cs.class_size;
    }
    CHECK_EQ_U(m.smblks, fast);
    CHECK_EQ_U(m.ordblks, rest);
}

static void direct_maps(void) {
    struct mallinfo2 before = mallinfo2();
    char *a = malloc(40 << 20), *b = malloc(50 << 20); /* above 32 MiB: direct maps */
    a[0] = b[0] = 1;
    struct mallinfo2 m = mallinfo2();
    CHECK_EQ_U(m.hblks, before.hblks + 2);
    CHECK(m.hblkhd >= before.hblkhd + (90 << 20));
    identities();
    free(a);
    free(b);
    m = mallinfo2();
    CHECK_EQ_U(m.hblks, before.hblks);
    CHECK_EQ_U(m.hblkhd, before.hblkhd);
    /* mallinfo's int fields stop at INT_MAX: 3 GiB of direct maps (address
     * space only, never touched) */
    void *huge = malloc((size_t)3 << 30);
    if (huge) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
        struct mallinfo mi = mallinfo();
#pragma GCC diagnostic pop
        CHECK_EQ_U(mi.hblkhd, INT_MAX);
        CHECK(mi.uordblks >= 0 && mi.arena > 0);
        free(huge);
    } else {
        fprintf(stderr, "note: 3 GiB of address space refused; mallinfo's clamp not checked\n");
    }
}

static void trim(void) {
    enum { N = 2000 };
    static char *blocks[N];
    for (int i = 0; i < N; i++) {
        blocks[i] = malloc(16384);
        memset(blocks[i], 1, 16384);
    }
    for (int i = 0; i < N; i++)
        free(blocks[i]);
    CHECK(ctl("stats.pageheap_free_bytes") + ctl("stats.tcache_bytes") > 0);
    CHECK_EQ_U(malloc_trim(0), 1);
    CHECK_EQ_U(ctl("stats.pageheap_free_bytes"), 0); /* all of it went back */
    CHECK_EQ_U(ctl("thread.tcache.bytes"), 0);       /* the caller's cache first */
    CHECK_EQ_U(malloc_trim(0), 0);                   /* nothing left to give back */
    identities();
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "xml")) {
        char *keep[64];
        for (int i = 0; i < 64; i++)
            keep[i] = malloc((size_t)(i + 1) * 100);
        char *big = malloc(40 << 20);
        FILE *f = fopen(argv[2], "w");
        if (!f || malloc_info(0, f) != 0)
            return 1;
        fclose(f);
        struct mallinfo2 m = mallinfo2();
        printf("hblks=%zu hblkhd=%zu mapped=%zu\n", m.hblks, m.hblkhd, m.arena + m.hblkhd);
        free(big);
        for (int i = 0; i < 64; i++)
            free(keep[i]);
        return 0;
    }
    char *volatile live = malloc(5000);
    live[0] = 1;
    identities();
    direct_maps();
    trim();
    free(live);
    return CHECK_DONE();
}
