/* SPDX-License-Identifier: MIT */
/* hot_test_pool.c - the single-threaded pool: slot alignment, LIFO reuse,
 * fixed-capacity exhaustion, growth in chunks, bad configurations, and the
 * checked flavour's detection of double and foreign frees. */
#include <alloy/pool.h>
#include <alloy/resource.h>

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "counting.h"

static void test_lifo_and_alignment(void) {
    counting_resource_t up;
    counting_init(&up);
    for (size_t align = 1; align <= 4096; align *= 2) {
        alloy_pool_t pool;
        alloy_pool_config_t cfg = {.slot_size = 24, .slot_align = align, .upstream = &up.base};
        CHECK(alloy_pool_init(&pool, &cfg) == 0);
        void *p[100];
        for (int i = 0; i < 100; i++) {
            p[i] = alloy_pool_alloc(&pool);
            CHECK(p[i] != NULL);
            CHECK(((uintptr_t)p[i] & (align - 1)) == 0);
            memset(p[i], i, 24);
        }
        for (int i = 0; i < 100; i++)
            for (int j = i + 1; j < 100; j++)
                if (p[i] == p[j])
                    CHECK(!"a slot was handed out twice");
        /* LIFO: the last freed is the first reused */
        alloy_pool_free(&pool, p[10]);
        alloy_pool_free(&pool, p[20]);
        CHECK(alloy_pool_alloc(&pool) == p[20]);
        CHECK(alloy_pool_alloc(&pool) == p[10]);
        for (int i = 0; i < 100; i++)
            alloy_pool_free(&pool, p[i]);
        CHECK(alloy_pool_alloc(&pool) == p[99]);
        alloy_pool_destroy(&pool);
    }
    CHECK_EQ_U(up.live, 0);
    CHECK_EQ_U(up.bad_frees, 0);
}

static void test_fixed_capacity(void) {
    counting_resource_t up;
    counting_init(&up);
    alloy_pool_t pool;
    alloy_pool_config_t cfg = {.slot_size = 48, .max_slots = 100, .upstream = &up.base};
    CHECK(alloy_pool_init(&pool, &cfg) == 0);
    CHECK_EQ_U(up.allocs, 1); /* all memory at init */
    void *p[100];
    for (int i = 0; i < 100; i++)
        CHECK((p[i] = alloy_pool_alloc(&pool)) != NULL);
    CHECK(alloy_pool_alloc(&pool) == NULL);
    CHECK(alloy_pool_alloc(&pool) == NULL); /* and again: state intact */
    CHECK_EQ_U(up.allocs, 1);
    alloy_pool_free(&pool, p[42]);
    CHECK(alloy_pool_alloc(&pool) == p[42]);
    CHECK(alloy_pool_alloc(&pool) == NULL);
    for (int i = 0; i < 100; i++)
        alloy_pool_free(&pool, p[i]);
    alloy_pool_destroy(&pool);
    CHECK_EQ_U(up.live, 0);

    /* fixed pool whose memory cannot be had */
    cfg.upstream = alloy_null_resource();
    CHECK(alloy_pool_init(&pool, &cfg) == ENOMEM);
}

static void test_growth(void) {
    counting_resource_t up;
    counting_init(&up);
    alloy_pool_t pool;
    alloy_pool_config_t cfg = {.slot_size = 100, .chunk_slots = 10, .upstream = &up.base};
    CHECK(alloy_pool_init(&pool, &cfg) == 0);
    CHECK_EQ_U(up.allocs, 0); /* lazy */
    enum { N = 1000 };
    static void *p[N];
    for (int i = 0; i < N; i++) {
        CHECK((p[i] = alloy_pool_alloc(&pool)) != NULL);
        memset(p[i], 0x5A, 100);
    }
    /* chunks of 10, 20, 40, ... slots: 1000 slots in 7 chunks */
    CHECK_EQ_U(up.allocs, 7);
    CHECK(alloy_pool_owns(&pool, p[0]) && alloy_pool_owns(&pool, p[N - 1]));
    int x;
    CHECK(!alloy_pool_owns(&pool, &x));
    for (int i = 0; i < N; i++)
        alloy_pool_free(&pool, p[i]);
    for (int i = 0; i < N; i++) /* reuse: no new chunk */
        CHECK(alloy_pool_alloc(&pool) != NULL);
    CHECK_EQ_U(up.allocs, 7);
    alloy_pool_destroy(&pool);
    CHECK_EQ_U(up.live, 0);

    /* the upstream fails: NULL, and the pool still works afterwards */
    counting_init(&up);
    up.fail_after = 1;
    CHECK(alloy_pool_init(&pool, &cfg) == 0);
    for (int i = 0; i < 10; i++)
        CHECK((p[i] = alloy_pool_alloc(&pool)) != NULL);
    CHECK(alloy_pool_alloc(&pool) == NULL);
    alloy_pool_free(&pool, p[3]);
    CHECK(alloy_pool_alloc(&pool) == p[3]);
    alloy_pool_destroy(&pool);
    CHECK_EQ_U(up.live, 0);
}

static void test_bad_config(void) {
    alloy_pool_t pool;
    alloy_pool_config_t cfg = {.slot_size = 0};
    CHECK(alloy_pool_init(&pool, &cfg) == EINVAL);
    cfg.slot_size = 8;
    cfg.slot_align = 12;
    CHECK(alloy_pool_init(&pool, &cfg) == EINVAL);
    cfg.slot_align = 16;
    cfg.slot_size = SIZE_MAX - 3; /* rounding up overflows */
    CHECK(alloy_pool_init(&pool, &cfg) == EINVAL);
    cfg.slot_size = SIZE_MAX / 4;
    cfg.chunk_slots = 8; /* chunk bytes overflow */
    CHECK(alloy_pool_init(&pool, &cfg) == EINVAL);
    /* tiny slots are widened to hold the free-list link */
    alloy_pool_config_t small = {.slot_size = 1, .slot_align = 1};
    CHECK(alloy_pool_init(&pool, &small) == 0);
    CHECK(pool.slot_size >= sizeof(void *));
    char *a = alloy_pool_alloc(&pool), *b = alloy_pool_alloc(&pool);
    CHECK(a != NULL && b != NULL && a != b);
    alloy_pool_free(&pool, a);
    alloy_pool_free(&pool, b);
    alloy_pool_destroy(&pool);
}

static void test_checked(void) {
    counting_resource_t up;
    counting_init(&up);
    alloy_pool_t pool;
    alloy_pool_config_t cfg = {
        .slot_size = 32, .chunk_slots = 4, .flags = ALLOY_POOL_CHECKED, .upstream = &up.base};
    CHECK(alloy_pool_init(&pool, &cfg) == 0);
    void *p[10];
    for (int i = 0; i < 10; i++)
        CHECK((p[i] = alloy_pool_alloc(&pool)) != NULL);
    CHECK_EQ_U(alloy_pool_errors(&pool), 0);
    alloy_pool_free(&pool, p[3]);
    CHECK_EQ_U(alloy_pool_errors(&pool), 0);
    fprintf(stderr, "(the next four alloy_pool messages are expected)\n");
    alloy_pool_free(&pool, p[3]); /* double free */
    CHECK_EQ_U(alloy_pool_errors(&pool), 1);
    int foreign;
    alloy_pool_free(&pool, &foreign); /* not ours */
    CHECK_EQ_U(alloy_pool_errors(&pool), 2);
    alloy_pool_free(&pool, (char *)p[5] + 8); /* inside a slot, not its start */
    CHECK_EQ_U(alloy_pool_errors(&pool), 3);
    alloy_pool_free(&pool, NULL);
    CHECK_EQ_U(alloy_pool_errors(&pool), 4);
    /* the bad frees did not corrupt the free list: p[3] comes back once */
    CHECK(alloy_pool_alloc(&pool) == p[3]);
    void *q = alloy_pool_alloc(&pool);
    CHECK(q != NULL && q != p[3]);
    for (int i = 0; i < 10; i++)
        CHECK(q != p[i]);
    /* a slot that was carved but never handed out is not freeable */
    alloy_pool_destroy(&pool);
    CHECK_EQ_U(up.live, 0);
    CHECK(alloy_pool_init(&pool, &cfg) == 0);
    char *s0 = alloy_pool_alloc(&pool);
    alloy_pool_free(&pool, s0 + pool.slot_size); /* slot 1 of the chunk: never allocated */
    CHECK_EQ_U(alloy_pool_errors(&pool), 1);
    alloy_pool_free(&pool, s0);
    CHECK_EQ_U(alloy_pool_errors(&pool), 1);
    alloy_pool_destroy(&pool);
    CHECK_EQ_U(up.live, 0);
}

int main(void) {
    test_lifo_and_alignment();
    test_fixed_capacity();
    test_growth();
    test_bad_config();
    test_checked();
    return CHECK_DONE();
}
