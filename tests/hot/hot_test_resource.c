/* SPDX-License-Identifier: MIT */
/* hot_test_resource.c - the memory resources and alloy_vec_t: the malloc
 * resource's alignment, the null resource's failure path (the caller sees
 * NULL / ENOMEM and nothing crashes), the monotonic resource, both pool
 * resources (classes, alignment, large blocks given back on destroy),
 * is_equal, the default resource, and one function taking vectors backed
 * by every resource (seed 000's pmr point). */
#include <alloy/resource.h>
#include <alloy/vec.h>

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "counting.h"

static int aligned_to(const void *p, size_t a) { return ((uintptr_t)p & (a - 1)) == 0; }

/* Exercise any resource: every power-of-two alignment, several sizes. */
static void exercise(alloy_resource_t *r, int can_free) {
    for (size_t align = 1; align <= 4096; align *= 2) {
        size_t sizes[] = {0, 1, 8, 24, 100, 2016, 5000};
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            unsigned char *p = alloy_resource_allocate(r, sizes[i], align);
            CHECK(p != NULL);
            CHECK(aligned_to(p, align));
            memset(p, 0xC3, sizes[i] ? sizes[i] : 1);
            if (can_free)
                alloy_resource_deallocate(r, p, sizes[i], align);
        }
    }
    CHECK(alloy_resource_allocate(r, 8, 3) == NULL);
    CHECK(alloy_resource_allocate(r, 8, 0) == NULL);
    alloy_resource_deallocate(r, NULL, 8, 8); /* no-op */
}

static void test_builtin(void) {
    exercise(alloy_malloc_resource(), 1);
    CHECK(alloy_resource_allocate(alloy_malloc_resource(), SIZE_MAX - 64, 64) == NULL);
    CHECK(alloy_resource_is_equal(alloy_malloc_resource(), alloy_malloc_resource()));
    CHECK(!alloy_resource_is_equal(alloy_malloc_resource(), alloy_null_resource()));

    alloy_resource_t *null = alloy_null_resource();
    CHECK(alloy_resource_allocate(null, 1, 1) == NULL);
    CHECK(alloy_resource_allocate(null, 0, 8) == NULL);
    alloy_resource_deallocate(null, NULL, 0, 1);

    CHECK(alloy_default_resource() == alloy_malloc_resource());
    CHECK(alloy_set_default_resource(null) == alloy_malloc_resource());
    CHECK(alloy_default_resource() == null);
    alloy_vec_t v;
    ALLOY_VEC_INIT(&v, int, NULL); /* picks up the default: null */
    CHECK(ALLOY_VEC_PUSH(&v, int, 1) == ENOMEM);
    alloy_set_default_resource(NULL);
    CHECK(alloy_default_resource() == alloy_malloc_resource());
}

static void test_monotonic(void) {
    counting_resource_t up;
    counting_init(&up);
    _Alignas(16) unsigned char buf[4096];
    alloy_monotonic_t m;
    alloy_monotonic_init(&m, buf, sizeof buf, &up.base);
    alloy_resource_t *r = alloy_monotonic_resource(&m);
    void *p = alloy_resource_allocate(r, 2016, 8);
    CHECK(p == buf);
    alloy_resource_deallocate(r, p, 2016, 8); /* does nothing */
    CHECK(alloy_resource_allocate(r, 8, 8) == buf + 2016);
    CHECK_EQ_U(up.allocs, 0);
    exercise(r, 1);
    CHECK(up.allocs > 0);
    CHECK(alloy_resource_is_equal(r, r));
    CHECK(!alloy_resource_is_equal(r, alloy_malloc_resource()));
    alloy_monotonic_release(&m);
    CHECK_EQ_U(up.live, 0);
    CHECK(alloy_resource_allocate(r, 8, 8) == buf);
    alloy_monotonic_destroy(&m);

    /* fixed capacity: a null upstream */
    alloy_monotonic_init(&m, buf, 64, alloy_null_resource());
    r = alloy_monotonic_resource(&m);
    CHECK(alloy_resource_allocate(r, 64, 1) != NULL);
    CHECK(alloy_resource_allocate(r, 1, 1) == NULL);
    alloy_monotonic_destroy(&m);
}

static void test_pool_resource(void) {
    counting_resource_t up;
    counting_init(&up);
    alloy_pool_resource_t pr;
    CHECK(alloy_pool_resource_init(&pr, NULL, &up.base) == 0);
    alloy_resource_t *r = alloy_pool_resource(&pr);
    exercise(r, 1);
    /* a freed block of a class is reused for the same class */
    void *a = alloy_resource_allocate(r, 2016, 8);
    alloy_resource_deallocate(r, a, 2016, 8);
    CHECK(alloy_resource_allocate(r, 2016, 8) == a);
    CHECK(alloy_resource_allocate(r, 1500, 8) != a); /* same class, a is taken */
    /* large blocks (> 4096) and leaks: destroy gives everything back */
    void *big = alloy_resource_allocate(r, 100000, 64);
    CHECK(big != NULL && aligned_to(big, 64));
    memset(big, 1, 100000);
    void *big2 = alloy_resource_allocate(r, 9000, 8192);
    CHECK(big2 != NULL && aligned_to(big2, 8192));
    alloy_resource_deallocate(r, big2, 9000, 8192);
    CHECK(alloy_resource_allocate(r, SIZE_MAX - 10, 8) == NULL);
    CHECK(alloy_resource_allocate(r, 10, (size_t)1 << 63) == NULL);
    CHECK(!alloy_resource_is_equal(r, alloy_malloc_resource()));
    alloy_pool_resource_destroy(&pr);
    CHECK_EQ_U(up.live, 0);
    CHECK_EQ_U(up.bad_frees, 0);

    /* on a null upstream everything fails cleanly */
    CHECK(alloy_pool_resource_init(&pr, NULL, alloy_null_resource()) == 0);
    r = alloy_pool_resource(&pr);
    CHECK(alloy_resource_allocate(r, 8, 8) == NULL);
    CHECK(alloy_resource_allocate(r, 100000, 8) == NULL);
    alloy_pool_resource_destroy(&pr);

    /* options: largest block and the checked flavour */
    alloy_pool_options_t opts = {.largest_block = 256, .flags = ALLOY_POOL_CHECKED};
    counting_init(&up);
    CHECK(alloy_pool_resource_init(&pr, &opts, &up.base) == 0);
    r = alloy_pool_resource(&pr);
    CHECK_EQ_U(pr.nclasses, 6); /* 8 .. 256 */
    exercise(r, 1);
    void *s = alloy_resource_allocate(r, 40, 8);
    alloy_resource_deallocate(r, s, 40, 8);
    fprintf(stderr, "(one double-free message is expected)\n");
    alloy_resource_deallocate(r, s, 40, 8);
    CHECK_EQ_U(alloy_pool_errors(&pr.pools[3]), 1);
    alloy_pool_resource_destroy(&pr);
    CHECK_EQ_U(up.live, 0);

    /* the synchronized flavour, single-threaded here (see hot_test_threads) */
    counting_init(&up);
    alloy_sync_pool_resource_t spr;
    CHECK(alloy_sync_pool_resource_init(&spr, NULL, &up.base) == 0);
    exercise(alloy_sync_pool_resource(&spr), 1);
    CHECK(alloy_resource_allocate(alloy_sync_pool_resource(&spr), 50000, 16) != NULL); /* leaked */
    alloy_sync_pool_resource_destroy(&spr);
    CHECK_EQ_U(up.live, 0);
    CHECK_EQ_U(up.bad_frees, 0);
    CHECK(alloy_sync_pool_resource_init(&spr, NULL, alloy_null_resource()) == ENOMEM);
}

/* One function, any resource: the sum of a vector of doubles. */
static double vec_sum(const alloy_vec_t *v) {
    const double *x = ALLOY_VEC_ITEMS(v, double);
    double s = 0;
    for (size_t i = 0; i < alloy_vec_len(v); i++)
        s += x[i];
    return s;
}

static void test_vec(void) {
    counting_resource_t up;
    counting_init(&up);
    _Alignas(16) unsigned char buf[4096];
    alloy_monotonic_t mono;
    alloy_monotonic_init(&mono, buf, sizeof buf, &up.base);
    alloy_pool_resource_t pool;
    CHECK(alloy_pool_resource_init(&pool, NULL, &up.base) == 0);
    alloy_sync_pool_resource_t spool;
    CHECK(alloy_sync_pool_resource_init(&spool, NULL, &up.base) == 0);
    alloy_resource_t *resources[] = {alloy_malloc_resource(), &up.base,
                                     alloy_monotonic_resource(&mono), alloy_pool_resource(&pool),
                                     alloy_sync_pool_resource(&spool)};
    for (size_t i = 0; i < sizeof resources / sizeof resources[0]; i++) {
        alloy_vec_t v;
        ALLOY_VEC_INIT(&v, double, resources[i]);
        for (int k = 1; k <= 1000; k++)
            CHECK(ALLOY_VEC_PUSH(&v, double, k) == 0);
        CHECK(vec_sum(&v) == 500500.0);
        CHECK(alloy_vec_resize(&v, 2000) == 0);
        CHECK(ALLOY_VEC_ITEMS(&v, double)[1999] == 0.0); /* zero-filled */
        CHECK(vec_sum(&v) == 500500.0);
        CHECK(alloy_vec_resize(&v, 10) == 0);
        CHECK(vec_sum(&v) == 55.0);
        CHECK(ALLOY_VEC_ITEMS(&v, float) == NULL); /* wrong type */
        CHECK(ALLOY_VEC_PUSH(&v, float, 1.0f) == EINVAL);
        alloy_vec_clear(&v);
        CHECK(alloy_vec_len(&v) == 0 && vec_sum(&v) == 0.0);
        alloy_vec_destroy(&v);
    }
    alloy_sync_pool_resource_destroy(&spool);
    alloy_pool_resource_destroy(&pool);
    alloy_monotonic_destroy(&mono);
    CHECK_EQ_U(up.live, 0);
    CHECK_EQ_U(up.bad_frees, 0);

    /* failure paths: the null resource, and upstream failing mid-growth */
    alloy_vec_t v;
    ALLOY_VEC_INIT(&v, double, alloy_null_resource());
    CHECK(ALLOY_VEC_PUSH(&v, double, 1.0) == ENOMEM);
    CHECK(alloy_vec_resize(&v, 10) == ENOMEM);
    CHECK(alloy_vec_reserve(&v, 10) == ENOMEM);
    CHECK(v.data == NULL && v.len == 0 && v.cap == 0);
    alloy_vec_destroy(&v);
    counting_init(&up);
    up.fail_after = 1;
    ALLOY_VEC_INIT(&v, double, &up.base);
    for (int k = 0; k < 4; k++)
        CHECK(ALLOY_VEC_PUSH(&v, double, k) == 0);
    CHECK(ALLOY_VEC_PUSH(&v, double, 4) == ENOMEM); /* growth refused */
    CHECK(v.len == 4 && ALLOY_VEC_ITEMS(&v, double)[3] == 3.0);
    CHECK(alloy_vec_reserve(&v, SIZE_MAX / 4) == EOVERFLOW);
    CHECK(v.len == 4 && v.cap == 4);
    alloy_vec_destroy(&v);
    CHECK_EQ_U(up.live, 0);
}

int main(void) {
    test_builtin();
    test_monotonic();
    test_pool_resource();
    test_vec();
    return CHECK_DONE();
}
