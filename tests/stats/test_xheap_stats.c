/* SPDX-License-Identifier: MIT */
/* test_xheap_stats.c - the counters when blocks cross heaps through the
 * thread caches: thread A, bound to automatic heap 0, allocates blocks of
 * several classes; thread B, bound to heap 1, frees all of them, so that
 * some of heap 0's blocks sit in the cache of a thread bound to heap 1.
 * Run with ALLOY_CONF=heaps:2.  Usage: test_xheap_stats flushed|cached
 *   flushed: B flushes its cache; every block went back to heap 0, and
 *            every counter is back where it started.
 *   cached:  B keeps its cache.  At this quiescent point (both threads
 *            alive, idle in a barrier) no block of those classes is live, so
 *            stats.allocated must equal the sum of the per-class allocated
 *            bytes plus large_allocated (docs/ARCHITECTURE.md, Accounting),
 *            and must be back at its starting value. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "alloy.h"
#include "alloy/ctl.h"
#include "alloy/heap.h"
#include "check.h"

#define N 1000
static const size_t sizes[] = {48, 384, 1000, 5000};
#define NS (sizeof sizes / sizeof sizes[0])
static void *blocks[NS][N];
static pthread_barrier_t barrier;
static int flush_b;
static unsigned heap_a = 99, heap_b = 99;

static void *thread_a(void *arg) {
    unsigned id = 0;
    CHECK(alloy_ctl("thread.heap", NULL, NULL, &id, sizeof id) == 0);
    heap_a = alloy_heap_id(alloy_heap_get_default());
    pthread_barrier_wait(&barrier); /* main reads the starting point */
    pthread_barrier_wait(&barrier);
    for (unsigned k = 0; k < NS; k++)
        for (int i = 0; i < N; i++)
            blocks[k][i] = alloy_malloc(sizes[k]);
    alloy_thread_flush();           /* A's own cache is empty: only B's holds blocks */
    pthread_barrier_wait(&barrier); /* B frees */
    pthread_barrier_wait(&barrier); /* main reads */
    pthread_barrier_wait(&barrier);
    return arg;
}

static void *thread_b(void *arg) {
    unsigned id = 1;
    CHECK(alloy_ctl("thread.heap", NULL, NULL, &id, sizeof id) == 0);
    heap_b = alloy_heap_id(alloy_heap_get_default());
    pthread_barrier_wait(&barrier);
    pthread_barrier_wait(&barrier);
    pthread_barrier_wait(&barrier); /* A has allocated */
    for (unsigned k = 0; k < NS; k++)
        for (int i = 0; i < N; i++)
            alloy_free(blocks[k][i]); /* heap 0's blocks, into a heap-1 cache */
    if (flush_b)
        alloy_thread_flush();
    pthread_barrier_wait(&barrier);
    pthread_barrier_wait(&barrier);
    return arg;
}

static size_t class_sum(void) {
    size_t sum = 0;
    for (unsigned c = 0; c < 208; c++) {
        alloy_class_stats_t cs = {.size = sizeof cs};
        CHECK(alloy_class_stats_read(c, &cs) == 0);
        sum += cs.allocated;
    }
    return sum;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "cached";
    flush_b = !strcmp(mode, "flushed");
    unsigned heaps = 0;
    size_t len = sizeof heaps;
    CHECK(alloy_ctl("heaps.count", &heaps, &len, NULL, 0) == 0);
    CHECK_EQ_U(heaps, 2); /* ALLOY_CONF=heaps:2 */

    pthread_barrier_init(&barrier, NULL, 3);
    pthread_t a, b;
    pthread_create(&a, NULL, thread_a, NULL);
    pthread_create(&b, NULL, thread_b, NULL);
    pthread_barrier_wait(&barrier); /* both threads exist and are bound */
    alloy_thread_flush();
    alloy_stats_t s0 = {.size = sizeof s0};
    CHECK(alloy_stats_read(&s0) == 0);
    size_t classes0 = class_sum();
    CHECK_EQ_U(s0.allocated, classes0 + s0.large_allocated);
    pthread_barrier_wait(&barrier);
    pthread_barrier_wait(&barrier);
    pthread_barrier_wait(&barrier); /* quiescent: A and B wait in the barrier */
    CHECK_EQ_U(heap_a, 0);
    CHECK_EQ_U(heap_b, 1);

    alloy_stats_t s = {.size = sizeof s}, h0 = {.size = sizeof h0}, h1 = {.size = sizeof h1};
    CHECK(alloy_stats_read(&s) == 0);
    CHECK(alloy_heap_stats_read(0, &h0) == 0 && alloy_heap_stats_read(1, &h1) == 0);
    size_t classes = class_sum();
    /* what holds either way: the per-heap figures are clamped estimates
     * when a thread caches another heap's blocks, so they never add up to
     * less than the exact total, and to exactly it once caches are flushed */
    CHECK(h0.allocated + h1.allocated >= s.allocated);
    if (flush_b)
        CHECK_EQ_U(s.allocated, h0.allocated + h1.allocated);
    CHECK(s.allocated <= s.active && s.active <= s.resident && s.resident <= s.mapped);
    CHECK_EQ_U(classes, classes0); /* the per-class view: none of the blocks is live */
    if (s.allocated != classes + s.large_allocated || s.allocated != s0.allocated)
        fprintf(
            stderr,
            "%s: stats.allocated %zu (heap 0: %zu, heap 1: %zu), per-class sum %zu + large %zu; "
            "%zu before; %zu bytes in thread caches\n",
            mode, s.allocated, h0.allocated, h1.allocated, classes, s.large_allocated, s0.allocated,
            s.tcache_bytes);
    CHECK_EQ_U(s.allocated, classes + s.large_allocated);
    CHECK_EQ_U(s.allocated, s0.allocated);
    if (flush_b)
        CHECK_EQ_U(s.tcache_bytes, s0.tcache_bytes);

    pthread_barrier_wait(&barrier);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    alloy_thread_flush();
    CHECK(alloy_stats_read(&s) == 0);
    CHECK_EQ_U(class_sum(), classes0);
    CHECK_EQ_U(s.tcache_bytes, 0);
    return CHECK_DONE();
}
