/* SPDX-License-Identifier: MIT */
/* test_heaps.c - heaps: threads spread over the automatic heaps, frees that
 * cross heaps go back to the owner, explicit heaps are created, used and
 * destroyed while other threads allocate, and the totals are the sums of
 * the per-heap counters.  Run with ALLOY_CONF=heaps:3. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alloy.h"
#include "alloy/heap.h"
#include "check.h"

#define NT 4
#define PASS 2000

static void *passed[NT][PASS];
static pthread_barrier_t barrier;
static volatile int stop;
static unsigned bound[NT];

/* Each thread allocates a batch, then frees its neighbour's batch: every
 * free crosses to the heap another thread is bound to. */
static void *crosser(void *arg) {
    int id = (int)(intptr_t)arg;
    bound[id] = alloy_heap_id(alloy_heap_get_default());
    for (int round = 0; round < 20; round++) {
        for (int i = 0; i < PASS; i++) {
            passed[id][i] = malloc(16 + (size_t)((i * 29 + id) % 3000));
            memset(passed[id][i], id, 16);
        }
        pthread_barrier_wait(&barrier);
        int from = (id + 1) % NT;
        for (int i = 0; i < PASS; i++) {
            if (((unsigned char *)passed[from][i])[15] != from)
                __atomic_store_n(&stop, 2, __ATOMIC_RELAXED);
            free(passed[from][i]);
        }
        pthread_barrier_wait(&barrier);
    }
    return NULL;
}

static void *background_allocator(void *arg) {
    unsigned n = 0;
    while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
        void *p[64];
        for (int i = 0; i < 64; i++)
            p[i] = malloc(8 + (n++ * 97) % 20000);
        for (int i = 0; i < 64; i++)
            free(p[i]);
    }
    return arg;
}

static int stats_add_up(void) {
    alloy_stats_t total = {.size = sizeof total};
    if (alloy_stats_read(&total) != 0)
        return 0;
    size_t allocated = 0, active = 0, mapped = 0, tcache = 0;
    for (unsigned id = 0; id < 256; id++) {
        alloy_stats_t h = {.size = sizeof h};
        if (alloy_heap_stats_read(id, &h) != 0)
            continue;
        allocated += h.allocated;
        active += h.active;
        mapped += h.mapped;
        tcache += h.tcache_bytes;
    }
    /* a heap's allocated subtracts what its threads cache, which may be
     * another heap's blocks, and is never below 0: the sum is the total, or
     * above it by at most the thread-cache bytes */
    return allocated >= total.allocated && allocated - total.allocated <= total.tcache_bytes &&
           total.active == active && total.mapped == mapped + total.metadata &&
           total.tcache_bytes == tcache && total.allocated <= total.active &&
           total.active <= total.resident && total.resident <= total.mapped;
}

int main(void) {
    unsigned count = 0;
    while (alloy_heap_from_id(count))
        count++;
    CHECK_EQ_U(count, 3); /* ALLOY_CONF=heaps:3 */

    /* cross-heap frees */
    pthread_t t[NT];
    pthread_barrier_init(&barrier, NULL, NT);
    for (int i = 0; i < NT; i++)
        pthread_create(&t[i], NULL, crosser, (void *)(intptr_t)i);
    for (int i = 0; i < NT; i++)
        pthread_join(t[i], NULL);
    CHECK_EQ_U(__atomic_load_n(&stop, __ATOMIC_RELAXED), 0);
    int spread = 0; /* least-loaded binding puts the 4 live threads on all 3 heaps */
    for (unsigned h = 0; h < 3; h++)
        for (int i = 0; i < NT; i++)
            if (bound[i] == h) {
                spread++;
                break;
            }
    CHECK_EQ_U(spread, 3);
    CHECK(stats_add_up());

    /* explicit heaps come and go while other threads allocate */
    pthread_t bg[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&bg[i], NULL, background_allocator, NULL);
    for (int round = 0; round < 30; round++) {
        alloy_heap_t *h = alloy_heap_create();
        CHECK(h != NULL && alloy_heap_id(h) >= 3);
        if (!h)
            break;
        char *blocks[300];
        for (int i = 0; i < 300; i++) {
            size_t size = (size_t)(i % 10 == 9 ? 300000 + i : 24 + i * 37);
            blocks[i] = i % 3 ? alloy_heap_malloc(h, size) : alloy_heap_calloc(h, 1, size);
            CHECK(blocks[i] != NULL);
            memset(blocks[i], 0x77, 24);
        }
        blocks[5] = alloy_heap_realloc(h, blocks[5], 5000);
        CHECK(blocks[5] && blocks[5][23] == 0x77);
        void *al = alloy_heap_aligned_alloc(h, 4096, 100);
        CHECK(al && (uintptr_t)al % 4096 == 0);
        alloy_stats_t hs = {.size = sizeof hs};
        CHECK(alloy_heap_stats_read(alloy_heap_id(h), &hs) == 0 && hs.allocated > 300000);
        for (int i = 0; i < 100; i++) /* some freed one by one, the rest by destroy */
            alloy_heap_free(h, blocks[i]);
        if (round % 2) { /* a thread's default heap: plain malloc lands there */
            CHECK(alloy_heap_set_default(h) == 0);
            /* small blocks too: none from a cache of another heap's blocks
             * (in per-CPU mode, its CPU's: that thread's mallocs miss) */
            alloy_stats_t before = {.size = sizeof before}, after = {.size = sizeof after};
            CHECK(alloy_heap_stats_read(alloy_heap_id(h), &before) == 0);
            void *small[64];
            for (int i = 0; i < 64; i++)
                small[i] = malloc(40);
            CHECK(alloy_heap_stats_read(alloy_heap_id(h), &after) == 0);
            CHECK(after.allocated >= before.allocated + 64 * 40);
            for (int i = 0; i < 64; i++)
                free(small[i]);
            void *p = malloc(40);
            CHECK(alloy_heap_get_default() == h);
            CHECK(alloy_heap_destroy(h) == EINVAL); /* still this thread's default */
            free(p);
            CHECK(alloy_heap_set_default(NULL) == 0);
        }
        unsigned id = alloy_heap_id(h);
        CHECK(alloy_heap_destroy(h) == 0);
        CHECK(alloy_heap_from_id(id) == NULL);
        alloy_stats_t gone = {.size = sizeof gone};
        CHECK(alloy_heap_stats_read(id, &gone) == ENOENT);
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < 2; i++)
        pthread_join(bg[i], NULL);
    CHECK(alloy_heap_destroy(alloy_heap_from_id(0)) == EINVAL);
    CHECK(alloy_heap_destroy(NULL) == EINVAL);
    alloy_thread_flush();
    CHECK(stats_add_up());
    return CHECK_DONE();
}
