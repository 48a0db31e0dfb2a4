/* SPDX-License-Identifier: MIT */
/* hot_test_threads.c - the synchronized variants under several threads:
 * the thread-cached pool (no slot handed out twice, frees from other
 * threads, a fixed capacity fully usable once caches are flushed), the synchronized pool
 * resource, and the per-thread scratch arenas (distinct per thread, given
 * back at thread exit: LeakSanitizer fails the test otherwise). */
#include <alloy/arena.h>
#include <alloy/pool.h>
#include <alloy/resource.h>

#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "check.h"

#define NTHREADS 4
#define ITERS 20000
#define HOLD 64

static alloy_sync_pool_t shared_pool;
static alloy_sync_pool_resource_t shared_res;

/* A hand-off between threads: frees of blocks allocated elsewhere. */
static pthread_mutex_t swap_lock = PTHREAD_MUTEX_INITIALIZER;
static void *swap_slot[NTHREADS];

static _Atomic long bad_patterns;

static uint64_t rng_next(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Each held slot carries its own address and the owner id; a slot handed
 * to two holders at once would be overwritten and caught here. */
static void stamp(void *p, uint64_t tag) {
    uint64_t *w = p;
    w[0] = (uint64_t)(uintptr_t)p;
    w[1] = tag;
}

static int stamped(const void *p, uint64_t tag) {
    const uint64_t *w = p;
    return w[0] == (uint64_t)(uintptr_t)p && w[1] == tag;
}

static void *pool_worker(void *arg) {
    int id = (int)(intptr_t)arg;
    uint64_t s = 0x9E3779B97F4A7C15ULL * (uint64_t)(id + 1);
    void *held[HOLD] = {0};
    for (int i = 0; i < ITERS; i++) {
        int k = (int)(rng_next(&s) % HOLD);
        if (held[k] != NULL) {
            if (!stamped(held[k], (uint64_t)id))
                bad_patterns++;
            alloy_sync_pool_free(&shared_pool, held[k]);
            held[k] = NULL;
        } else if ((held[k] = alloy_sync_pool_alloc(&shared_pool)) != NULL) {
            stamp(held[k], (uint64_t)id);
        }
        if (i % 97 == 0) { /* trade one block with another thread */
            int j = (int)(rng_next(&s) % HOLD);
            if (held[j] == NULL)
                continue;
            pthread_mutex_lock(&swap_lock);
            void *theirs = swap_slot[id];
            swap_slot[id] = NULL;
            if (swap_slot[(id + 1) % NTHREADS] == NULL) {
                swap_slot[(id + 1) % NTHREADS] = held[j];
                held[j] = NULL;
            }
            pthread_mutex_unlock(&swap_lock);
            if (theirs != NULL)
                alloy_sync_pool_free(&shared_pool, theirs); /* allocated by a neighbour */
        }
    }
    for (int k = 0; k < HOLD; k++)
        if (held[k] != NULL)
            alloy_sync_pool_free(&shared_pool, held[k]);
    return NULL;
}

static void run_threads(void *(*fn)(void *)) {
    pthread_t t[NTHREADS];
    for (int i = 0; i < NTHREADS; i++)
        pthread_create(&t[i], NULL, fn, (void *)(intptr_t)i);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(t[i], NULL);
}

static void test_sync_pool(void) {
    alloy_pool_config_t cfg = {.slot_size = 40};
    CHECK(alloy_sync_pool_init(&shared_pool, &cfg) == 0);
    run_threads(pool_worker);
    CHECK_EQ_U(bad_patterns, 0);
    /* blocks left in the hand-off were lost to the threads: free them */
    for (int i = 0; i < NTHREADS; i++)
        if (swap_slot[i] != NULL)
            alloy_sync_pool_free(&shared_pool, swap_slot[i]);
    alloy_sync_pool_destroy(&shared_pool);
}

/* ---- fixed capacity: every slot is reachable from every thread --------- */

#define CAPACITY 256
static _Atomic long grabbed;
static void *grabbed_ptrs[CAPACITY];

static void *grab_worker(void *arg) {
    void *p;
    while ((p = alloy_sync_pool_alloc(&shared_pool)) != NULL) {
        long i = grabbed++;
        if (i < CAPACITY)
            grabbed_ptrs[i] = p;
    }
    return NULL;
}

static void test_fixed_capacity(void) {
    alloy_pool_config_t cfg = {.slot_size = 16, .max_slots = CAPACITY};
    CHECK(alloy_sync_pool_init(&shared_pool, &cfg) == 0);
    run_threads(grab_worker);
    CHECK_EQ_U(grabbed, CAPACITY);
    for (int i = 0; i < CAPACITY; i++)
        for (int j = i + 1; j < CAPACITY; j++)
            if (grabbed_ptrs[i] == grabbed_ptrs[j])
                CHECK(!"slot handed out twice");
    /* all freed by this thread, then all taken again by one other thread */
    for (int i = 0; i < CAPACITY; i++)
        alloy_sync_pool_free(&shared_pool, grabbed_ptrs[i]);
    alloy_sync_pool_thread_flush(&shared_pool); /* this thread keeps none cached */
    grabbed = 0;
    pthread_t t;
    pthread_create(&t, NULL, grab_worker, NULL);
    pthread_join(t, NULL);
    CHECK_EQ_U(grabbed, CAPACITY);
    alloy_sync_pool_destroy(&shared_pool);

    /* checked flavour across threads: a double free is still caught */
    cfg.flags = ALLOY_POOL_CHECKED;
    CHECK(alloy_sync_pool_init(&shared_pool, &cfg) == 0);
    void *p = alloy_sync_pool_alloc(&shared_pool);
    alloy_sync_pool_free(&shared_pool, p);
    fprintf(stderr, "(one double-free message is expected)\n");
    alloy_sync_pool_free(&shared_pool, p);
    CHECK_EQ_U(alloy_sync_pool_errors(&shared_pool), 1);
    alloy_sync_pool_destroy(&shared_pool);
}

/* ---- the synchronized multi-size resource ------------------------------ */

static void *res_worker(void *arg) {
    int id = (int)(intptr_t)arg;
    uint64_t s = 0xD1B54A32D192ED03ULL * (uint64_t)(id + 1);
    alloy_resource_t *r = alloy_sync_pool_resource(&shared_res);
    void *held[HOLD] = {0};
    size_t sizes[HOLD] = {0};
    for (int i = 0; i < ITERS; i++) {
        int k = (int)(rng_next(&s) % HOLD);
        if (held[k] != NULL) {
            if (!stamped(held[k], (uint64_t)id))
                bad_patterns++;
            alloy_resource_deallocate(r, held[k], sizes[k], 16);
            held[k] = NULL;
        } else {
            sizes[k] = 16 + rng_next(&s) % 6000; /* pools and large blocks */
            if ((held[k] = alloy_resource_allocate(r, sizes[k], 16)) != NULL)
                stamp(held[k], (uint64_t)id);
        }
    }
    for (int k = 0; k < HOLD; k++)
        if (held[k] != NULL)
            alloy_resource_deallocate(r, held[k], sizes[k], 16);
    return NULL;
}

static void test_sync_resource(void) {
    CHECK(alloy_sync_pool_resource_init(&shared_res, NULL, alloy_malloc_resource()) == 0);
    bad_patterns = 0;
    run_threads(res_worker);
    CHECK_EQ_U(bad_patterns, 0);
    alloy_sync_pool_resource_destroy(&shared_res);
}

/* ---- per-thread scratch arenas ----------------------------------------- */

static alloy_arena_t *scratch_seen[NTHREADS];

static void *scratch_worker(void *arg) {
    int id = (int)(intptr_t)arg;
    scratch_seen[id] = alloy_scratch_arena();
    for (int i = 0; i < 2000; i++) {
        alloy_arena_mark_t m = alloy_scratch_mark();
        size_t n = 1 + (size_t)(i * 37 % 4000);
        unsigned char *p = alloy_scratch_alloc(n, 16);
        if (p == NULL) {
            bad_patterns++;
            continue;
        }
        memset(p, id, n);
        unsigned char *q = alloy_scratch_alloc(200000, 64); /* spills upstream */
        if (q == NULL || p[n - 1] != (unsigned char)id)
            bad_patterns++;
        else
            memset(q, id, 200000);
        alloy_scratch_rewind(m);
    }
    return NULL; /* the chunks go back in the thread-exit destructor */
}

static void test_scratch(void) {
    bad_patterns = 0;
    run_threads(scratch_worker);
    CHECK_EQ_U(bad_patterns, 0);
    for (int i = 0; i < NTHREADS; i++)
        CHECK(scratch_seen[i] != NULL && scratch_seen[i] != alloy_scratch_arena());
}

int main(void) {
    test_sync_pool();
    test_fixed_capacity();
    test_sync_resource();
    test_scratch();
    return CHECK_DONE();
}
