/* SPDX-License-Identifier: MIT */
/* test_align.c - aligned allocation: every power-of-two alignment from 8
 * bytes to 64 MiB through alloy_memalign, alloy_posix_memalign and
 * alloy_aligned_alloc; the blocks are aligned, their usable size covers the
 * request, every usable byte can be written without touching a neighbour,
 * realloc keeps their contents, and freeing them gives the bytes back.
 * Only the alloy_* names are called. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "alloy.h"
#include "alloy/heap.h"
#include "check.h"
#include "pattern.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

enum { MEMALIGN, POSIX, ALIGNED_ALLOC, NAPI };

static void *aligned(int api, size_t align, size_t size) {
    void *p = NULL;
    switch (api) {
    case MEMALIGN: return alloy_memalign(align, size);
    case POSIX: return alloy_posix_memalign(&p, align, size) == 0 ? p : NULL;
    default: return alloy_aligned_alloc(align, size);
    }
}

static size_t allocated_now(void) {
    alloy_stats_t s = {.size = sizeof s};
    CHECK(alloy_stats_read(&s) == 0);
    return s.allocated;
}

/* Write the whole of [0, n), then read it all back. */
static int write_all(unsigned char *p, size_t n, unsigned seed) {
    fill(p, 0, n, seed);
    return first_bad(p, n, seed) == n;
}

static int reported;

static void one(int api, size_t align, size_t size, unsigned seed) {
    unsigned char *p = aligned(api, align, size);
    size_t usable = p ? alloy_malloc_usable_size(p) : 0;
    int ok = p && (uintptr_t)p % align == 0 && usable >= size && usable > 0;
    /* the whole request, and the bytes past it up to the end of the usable
     * size (sampled: a 1-byte request aligned to 64 MiB has 64 MiB of them) */
    ok = ok && write_all(p, size, seed);
    for (size_t i = size; ok && i < usable; i += i - size < 65536 ? 1 : 65521)
        p[i] = 0xee;
    if (ok && usable > size) {
        p[usable - 1] = 0xef;
        ok = p[usable - 1] == 0xef && (size == 0 || first_bad(p, size, seed) == size);
    }
    if (!ok && reported++ < 10)
        fprintf(stderr, "api %d align %zu size %zu: %p usable %zu\n", api, align, size, (void *)p,
                usable);
    CHECK(ok);
    alloy_free(p);
}

/* Every alignment, a spread of sizes, each API. */
static void every_alignment(void) {
    for (size_t align = 8; align <= 4 * MiB; align <<= 1) {
        const size_t sizes[] = {0,     1,         align / 2 + 1, align - 8,
                                align, align + 1, 3 * align / 2, 100000};
        for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
            for (int api = 0; api < NAPI; api++)
                one(api, align, sizes[i], (unsigned)(i * 3 + (unsigned)api));
    }
}

/* Alignments above 4 MiB: 8, 16 and 64 MiB, the whole size written. */
static void huge_alignment(void) {
    const size_t aligns[] = {8 * MiB, 16 * MiB, 64 * MiB};
    for (unsigned a = 0; a < 3; a++) {
        size_t align = aligns[a];
        const size_t sizes[] = {1, 4096, MiB + 1, 5 * MiB, align};
        for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
            for (int api = 0; api < NAPI; api++)
                if (api != ALIGNED_ALLOC || sizes[i] < align)
                    one(api, align, sizes[i], 10 * a + i);
    }
    /* several live at once: no two overlap */
    unsigned char *live[6];
    for (int k = 0; k < 6; k++) {
        size_t align = k % 2 ? 16 * MiB : 8 * MiB;
        live[k] = aligned(k % 3, align, 3 * MiB + 100);
        CHECK(live[k] && (uintptr_t)live[k] % align == 0);
        if (live[k])
            memset(live[k], 0x10 + k, 3 * MiB + 100);
    }
    for (int k = 0; k < 6; k++) {
        int same = 1;
        for (size_t i = 0; live[k] && i < 3 * MiB + 100; i += 4093)
            same &= live[k][i] == 0x10 + k;
        CHECK(live[k] && same && live[k][3 * MiB + 99] == 0x10 + k);
        alloy_free(live[k]);
    }
}

/* Many blocks of one (align, size) live together, each filled over its whole
 * usable size with its own byte: none may clobber another. */
static void neighbours(void) {
    const size_t aligns[] = {16, 64, 256, 4096, 4096, 8192, 64 * KiB};
    const size_t sizes[] = {24, 100, 1000, 4096, 5000, 300, 70000};
    for (unsigned k = 0; k < sizeof aligns / sizeof aligns[0]; k++) {
        unsigned char *b[48];
        for (int i = 0; i < 48; i++) {
            b[i] = aligned(i % NAPI, aligns[k], sizes[k]);
            CHECK(b[i] && (uintptr_t)b[i] % aligns[k] == 0);
            if (!b[i])
                return;
            memset(b[i], i + 1, alloy_malloc_usable_size(b[i]));
        }
        for (int i = 0; i < 48; i++) {
            size_t u = alloy_malloc_usable_size(b[i]), bad = u;
            for (size_t j = 0; j < u && bad == u; j++)
                if (b[i][j] != i + 1)
                    bad = j;
            if (bad != u)
                fprintf(stderr, "align %zu size %zu block %d: byte %zu of %zu clobbered\n",
                        aligns[k], sizes[k], i, bad, u);
            CHECK(bad == u);
        }
        for (int i = 0; i < 48; i++)
            alloy_free(b[i]);
    }
}

/* realloc of aligned blocks keeps the contents (the new block need not keep
 * the alignment). */
static void realloc_aligned(void) {
    const struct {
        size_t align, size, to[3];
    } cases[] = {
        {64, 100, {10000, 50, 300000}},
        {4096, 5000, {100, 1 << 20, 4000}},
        {8192, 20000, {20001, 2 * MiB, 100}},
        {64 * KiB, 3000, {300000, 70000, 8}},
        {2 * MiB, 100, {5000, 3 * MiB, 200}},
        {8 * MiB, 3 * MiB, {20 * MiB, 300000, 4 * MiB}},
        {64 * MiB, 2 * MiB, {70 * MiB, 1000, 1 * MiB}},
    };
    for (unsigned k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        unsigned char *p = aligned((int)(k % NAPI), cases[k].align, cases[k].size);
        CHECK(p && (uintptr_t)p % cases[k].align == 0);
        if (!p)
            return;
        size_t have = cases[k].size;
        fill(p, 0, have, k);
        for (int step = 0; step < 3; step++) {
            size_t to = cases[k].to[step], keep = have < to ? have : to;
            unsigned char *q = alloy_realloc(p, to);
            CHECK(q != NULL && alloy_malloc_usable_size(q) >= to);
            if (!q)
                return;
            size_t bad = first_bad(q, keep, k);
            if (bad != keep)
                fprintf(stderr, "realloc of a %zu-aligned block %zu -> %zu: byte %zu differs\n",
                        cases[k].align, have, to, bad);
            CHECK(bad == keep);
            fill(q, keep, to, k);
            p = q;
            have = to;
        }
        alloy_free(p);
    }
}

/* Aligned blocks of an explicit heap, and their release by destroy. */
static void heap_aligned(void) {
    alloy_heap_t *h = alloy_heap_create();
    CHECK(h != NULL);
    if (!h)
        return;
    size_t sum = 0;
    for (size_t align = 8; align <= 16 * MiB; align <<= 1) {
        unsigned char *p = alloy_heap_aligned_alloc(h, align, 3000);
        CHECK(p && (uintptr_t)p % align == 0 && alloy_malloc_usable_size(p) >= 3000);
        if (p)
            memset(p, 1, 3000);
        sum += alloy_malloc_usable_size(p);
    }
    /* an explicit heap is uncached: exactly the usable sizes are allocated */
    alloy_stats_t s = {.size = sizeof s};
    CHECK(alloy_heap_stats_read(alloy_heap_id(h), &s) == 0);
    CHECK_EQ_U(s.allocated, sum);
    CHECK(alloy_heap_destroy(h) == 0);
}

int main(void) {
    make_pattern();
    alloy_thread_flush();
    size_t base = allocated_now();

    /* the bad alignments still fail as documented */
    void *q = (void *)1;
    CHECK(alloy_posix_memalign(&q, 3 * MiB, 100) == EINVAL && q == (void *)1);
    errno = 0;
    CHECK(alloy_aligned_alloc(3 * MiB, 100) == NULL && errno == EINVAL);
    unsigned char *m = alloy_memalign(3 * MiB, 100); /* rounded up to 4 MiB, as glibc does */
    CHECK(m && (uintptr_t)m % (4 * MiB) == 0);
    alloy_free(m);

    every_alignment();
    huge_alignment();
    neighbours();
    realloc_aligned();
    heap_aligned();

    alloy_thread_flush();
    CHECK_EQ_U(allocated_now(), base); /* every aligned block was given back */
    alloy_stats_t s = {.size = sizeof s};
    CHECK(alloy_stats_read(&s) == 0);
    CHECK(s.allocated <= s.active && s.active <= s.resident && s.resident <= s.mapped);
    CHECK_EQ_U(s.large_allocated, 0);
    return CHECK_DONE();
}
