/* SPDX-License-Identifier: MIT */
/* test_calloc.c - calloc returns zeroed memory when the block it hands out
 * is recycled: from another thread's frees (through the central cache, and
 * through the transfer cache after a cross-thread free: run with
 * ALLOY_CONF=heaps:2, so that the two threads' heaps differ, and
 * decay_ms:-1, so that no decay pass moves them meanwhile), from the page
 * heap's dirty pages, in an explicit heap, and after a purge.  Each source
 * block is filled with 0xff first, and the test checks that calloc really
 * handed some of those blocks out again.  Only the alloy_* names are called. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloy.h"
#include "alloy/ctl.h"
#include "alloy/heap.h"
#include "check.h"
#include "classes.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)
#define MAXN 128

static const unsigned char zeros[64 * 1024];

static int all_zero(const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i += sizeof zeros)
        if (memcmp(p + i, zeros, n - i < sizeof zeros ? n - i : sizeof zeros) != 0)
            return 0;
    return 1;
}

static unsigned per_class(size_t size) {
    size_t n = 512 * KiB / size;
    return n < 4 ? 4 : n > MAXN ? MAXN : (unsigned)n;
}

/* The sizes the threads use: every class, then large blocks. */
#define NLARGE 4
static const size_t large_sizes[NLARGE] = {256 * KiB + 1, 300000, 700 * KiB, MiB};
#define NSIZES (NCLASSES + NLARGE)
static size_t size_of(unsigned k) {
    return k < NCLASSES ? class_size[k] : large_sizes[k - NCLASSES];
}

static void *dirty[NSIZES][MAXN]; /* blocks thread A dirtied */
static unsigned heap_of_a;

/* Thread A dirties blocks of every size and frees 7 of every 8; the 8th
 * stays live until the end, so that the spans keep the freed blocks on
 * their free lists instead of going back to the page heap. */
static void *thread_a(void *arg) {
    heap_of_a = alloy_heap_id(alloy_heap_get_default());
    for (unsigned k = 0; k < NSIZES; k++) {
        size_t size = size_of(k);
        for (unsigned i = 0; i < per_class(size); i++) {
            dirty[k][i] = alloy_malloc(size);
            memset(dirty[k][i], 0xff, alloy_malloc_usable_size(dirty[k][i]));
        }
        for (unsigned i = 0; i < per_class(size); i++)
            if (i % 8 != 7)
                alloy_free(dirty[k][i]);
    }
    alloy_thread_flush(); /* everything to the central caches (exit would too) */
    return arg;
}

static void free_pins(void) {
    for (unsigned k = 0; k < NSIZES; k++)
        for (unsigned i = 7; i < per_class(size_of(k)); i += 8)
            alloy_free(dirty[k][i]);
}

/* Does p's block overlap one of the blocks of size k that thread A dirtied
 * and freed?  (A span of one large object goes back to the page heap when
 * it is freed, and comes out again wherever the page heap places it: not
 * always at the same start.) */
static int was_dirty(unsigned k, const void *p) {
    uintptr_t a = (uintptr_t)p, n = size_of(k);
    for (unsigned i = 0; i < per_class(size_of(k)); i++) {
        uintptr_t d = (uintptr_t)dirty[k][i];
        if (i % 8 != 7 && a < d + n && d < a + n)
            return 1;
    }
    return 0;
}

/* A page-heap block (above MAX_BINNED, classes.h) may come from the pages
 * of a freed block of any such size (issue 33): does p's overlap one? */
static int was_dirty_pages(const void *p, size_t size) {
    for (unsigned k = 0; k < NSIZES; k++) {
        if (size_of(k) <= MAX_BINNED)
            continue;
        uintptr_t a = (uintptr_t)p, n = size_of(k);
        for (unsigned i = 0; i < per_class(n); i++) {
            uintptr_t d = (uintptr_t)dirty[k][i];
            if (i % 8 != 7 && a < d + n && d < a + size)
                return 1;
        }
    }
    return 0;
}

static unsigned bad_b, reused_b, sizes_reused_b, pages_reused_b;

static void *thread_b(void *arg) {
    /* bind to A's heap, so that A's freed blocks are what B gets */
    unsigned id = heap_of_a;
    CHECK(alloy_ctl("thread.heap", NULL, NULL, &id, sizeof id) == 0);
    static void *got[MAXN];
    for (unsigned k = 0; k < NSIZES; k++) {
        size_t size = size_of(k);
        unsigned n = per_class(size), reused = 0;
        for (unsigned i = 0; i < n; i++) {
            /* calloc(n, size) in several shapes that multiply to the size */
            unsigned char *p = i % 3 == 0   ? alloy_calloc(1, size)
                               : i % 3 == 1 ? alloy_calloc(size / 8, 8)
                                            : alloy_calloc(8, size / 8);
            got[i] = p;
            if (!p || !all_zero(p, size / 8 * 8)) {
                if (bad_b++ < 5)
                    fprintf(stderr, "calloc of %zu in thread B: not zero (%p)\n", size, (void *)p);
            }
            reused += size > MAX_BINNED ? was_dirty_pages(p, size) : was_dirty(k, p);
        }
        reused_b += reused;
        sizes_reused_b += reused > 0 && size <= MAX_BINNED;
        pages_reused_b += reused > 0 && size > MAX_BINNED;
        for (unsigned i = 0; i < n; i++)
            alloy_free(got[i]);
    }
    return arg;
}

/* Cross-thread free: C, bound to heap 1, allocates and dirties; the main
 * thread, bound to heap 0, frees them, which gives them in batches to the
 * node's transfer cache (and its flush the rest); D, bound to heap 1 in its
 * turn (the least loaded, once C has gone), callocs them back. */
static void *dirty_blocks[MAXN];
static size_t dirty_size;
static unsigned reused_d, bad_d;

static void *thread_c(void *arg) {
    for (unsigned i = 0; i < MAXN; i++) {
        dirty_blocks[i] = alloy_malloc(dirty_size);
        memset(dirty_blocks[i], 0xff, alloy_malloc_usable_size(dirty_blocks[i]));
    }
    return arg;
}

static void *thread_d(void *arg) {
    void *got[MAXN];
    reused_d = bad_d = 0;
    for (unsigned i = 0; i < MAXN; i++) {
        unsigned char *p = alloy_calloc(1, dirty_size);
        got[i] = p;
        bad_d += !p || !all_zero(p, dirty_size);
        for (unsigned j = 0; j < MAXN; j++)
            reused_d += dirty_blocks[j] == p;
    }
    for (unsigned i = 0; i < MAXN; i++)
        alloy_free(got[i]);
    return arg;
}

static void cross_thread_free(void) {
    const size_t sizes[] = {8, 48, 384, 1000, 4096, 20000};
    unsigned heaps = 0;
    size_t len = sizeof heaps;
    CHECK(alloy_ctl("opt.heaps", &heaps, &len, NULL, 0) == 0);
    CHECK_EQ_U(heaps, 2); /* ALLOY_CONF=heaps:2 */
    for (unsigned s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        dirty_size = sizes[s];
        pthread_t t;
        pthread_create(&t, NULL, thread_c, NULL);
        pthread_join(t, NULL);
        for (unsigned i = 0; i < MAXN; i++)
            alloy_free(dirty_blocks[i]); /* another heap's: sent home */
        alloy_thread_flush();            /* (the last, partial batch too) */
        pthread_create(&t, NULL, thread_d, NULL);
        pthread_join(t, NULL);
        CHECK_EQ_U(bad_d, 0);
        /* the first miss takes the whole queue, keeps what its list holds
         * and puts the rest into their spans (a span that gets every object
         * back goes to the page heap): some must come back */
        if (reused_d < 8)
            fprintf(stderr, "size %zu: %u of %u reused\n", dirty_size, reused_d, MAXN);
        CHECK(reused_d >= 8);
    }
}

/* Dirty blocks of every kind, freed, the free pages purged in the given way,
 * then calloc of the same sizes. */
static void after_purge(int how) {
    const size_t sizes[] = {8, 100, 3000, 40000, 262144, 300000, 900000, 3 * MiB};
    enum { N = sizeof sizes / sizeof sizes[0] };
    void *p[N][8];
    for (unsigned s = 0; s < N; s++)
        for (int i = 0; i < 8; i++) {
            p[s][i] = alloy_malloc(sizes[s]);
            memset(p[s][i], 0xff, alloy_malloc_usable_size(p[s][i]));
        }
    for (unsigned s = 0; s < N; s++)
        for (int i = 0; i < 8; i++)
            alloy_free(p[s][i]);
    alloy_thread_flush();
    alloy_stats_t before = {.size = sizeof before}, after = {.size = sizeof after};
    CHECK(alloy_stats_read(&before) == 0);
    if (how == 0) {
        alloy_purge();
    } else if (how == 1) {
        CHECK(alloy_ctl("purge", NULL, NULL, NULL, 0) == 0);
    } else {
        unsigned count = 0;
        size_t len = sizeof count;
        CHECK(alloy_ctl("heaps.count", &count, &len, NULL, 0) == 0 && count >= 1);
        for (unsigned i = 0; i < count; i++) {
            char name[32];
            snprintf(name, sizeof name, "heap.%u.purge", i);
            CHECK(alloy_ctl(name, NULL, NULL, NULL, 0) == 0);
        }
    }
    CHECK(alloy_stats_read(&after) == 0);
    CHECK(after.purges > before.purges || before.pageheap_free_bytes == 0);
    CHECK_EQ_U(after.pageheap_free_bytes, 0); /* nothing dirty left */
    for (unsigned s = 0; s < N; s++) {
        for (int i = 0; i < 8; i++) {
            unsigned char *q = alloy_calloc(1, sizes[s]);
            CHECK(q && all_zero(q, sizes[s]));
            p[s][i] = q;
        }
        /* and blocks dirtied after the purge, recycled at once */
        for (int i = 0; i < 8; i++) {
            memset(p[s][i], 0xff, sizes[s]);
            alloy_free(p[s][i]);
            unsigned char *q = alloy_calloc(sizes[s], 1);
            CHECK(q && all_zero(q, sizes[s]));
            p[s][i] = q;
        }
        for (int i = 0; i < 8; i++)
            alloy_free(p[s][i]);
    }
}

/* realloc shrinks a large block in place and gives its tail back (the
 * bug: the tail kept the span's "clean" mark from when it came from the
 * OS, so a calloc that got those pages skipped the clear and returned
 * 0xff bytes).  A fresh calloc'd block, all written, shrunk to a quarter;
 * a calloc of two quarters then takes the freed tail. */
static void after_shrink(void) {
    unsigned char *p = alloy_calloc(1, 4 * MiB);
    CHECK(p != NULL);
    memset(p, 0xff, 4 * MiB);
    unsigned char *q = alloy_realloc(p, MiB);
    CHECK(q == p);
    unsigned char *r = alloy_calloc(2, MiB);
    CHECK(r && all_zero(r, 2 * MiB));
    CHECK(r >= p + MiB && r < p + 4 * MiB); /* it was the tail */
    alloy_free(r);
    alloy_free(q);
}

static void explicit_heap(void) {
    alloy_heap_t *h = alloy_heap_create();
    CHECK(h != NULL);
    if (!h)
        return;
    const size_t sizes[] = {16, 200, 5000, 100000, 400000, 2 * MiB};
    for (unsigned s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        void *p[16];
        for (int i = 0; i < 16; i++) {
            p[i] = alloy_heap_malloc(h, sizes[s]);
            memset(p[i], 0xff, alloy_malloc_usable_size(p[i]));
        }
        for (int i = 0; i < 16; i++)
            alloy_heap_free(h, p[i]);
        unsigned reused = 0;
        for (int i = 0; i < 16; i++) {
            unsigned char *q = alloy_heap_calloc(h, 1, sizes[s]);
            CHECK(q && all_zero(q, sizes[s]));
            for (int j = 0; j < 16; j++)
                reused += q == p[j];
            p[i] = q;
        }
        CHECK(reused > 0 || sizes[s] > MiB);
        for (int i = 0; i < 16; i++)
            alloy_heap_free(h, p[i]);
    }
    CHECK(alloy_heap_destroy(h) == 0);
}

int main(void) {
    make_classes();
    after_shrink();
    pthread_t a, b;
    pthread_create(&a, NULL, thread_a, NULL);
    pthread_join(a, NULL);
    pthread_create(&b, NULL, thread_b, NULL);
    pthread_join(b, NULL);
    free_pins();
    CHECK_EQ_U(bad_b, 0);
    /* the blocks really were recycled: most of them, of most class sizes;
     * a page-heap block (above MAX_BINNED) may get the pages of a freed
     * span of small blocks, which was_dirty_pages does not see, or fresh
     * ones while A's freed blocks are kept whole (pageheap.h): a quarter
     * of those sizes (21 of 60 in the debug flavour, about 50 in release) */
    if (sizes_reused_b < NBINNED * 9 / 10 || pages_reused_b < (NSIZES - NBINNED) / 4)
        fprintf(stderr,
                "thread B got blocks of thread A for %u of %u class sizes, %u of %u others\n",
                sizes_reused_b, NBINNED, pages_reused_b, NSIZES - NBINNED);
    CHECK(sizes_reused_b >= NBINNED * 9 / 10);
    CHECK(pages_reused_b >= (NSIZES - NBINNED) / 4);
    CHECK(reused_b > 1000);

    cross_thread_free();
    for (int how = 0; how < 3; how++)
        after_purge(how);
    explicit_heap();
    return CHECK_DONE();
}
