/* SPDX-License-Identifier: MIT */
/* hot_test_arena.c - the bump arena: alignment for every power of two up to
 * 4096 (and beyond), exhaustion of a fixed arena, upstream fallback with
 * geometric growth, reset, nested mark/rewind, accounting, impossible
 * requests that must return NULL and leave the arena untouched, and the
 * thread-local scratch arena. */
#include <alloy/arena.h>
#include <alloy/resource.h>

#include <stdint.h>
#include <string.h>

#include "check.h"
#include "counting.h"

static int aligned_to(const void *p, size_t a) { return ((uintptr_t)p & (a - 1)) == 0; }

static void test_alignment(void) {
    counting_resource_t up;
    counting_init(&up);
    _Alignas(16) unsigned char buf[4096];
    alloy_arena_t a;
    alloy_arena_init(&a, buf, sizeof buf, &up.base);
    for (size_t align = 1; align <= 65536; align *= 2) {
        for (size_t size = 0; size <= 3; size++) {
            unsigned char *p = alloy_arena_alloc(&a, size + 1, align);
            CHECK(p != NULL);
            CHECK(aligned_to(p, align));
            memset(p, 0xAB, size + 1); /* ASan: the bytes are really ours */
        }
    }
    /* odd sizes between aligned ones keep the next one misaligned */
    for (size_t align = 1; align <= 4096; align *= 2) {
        CHECK(alloy_arena_alloc(&a, 1, 1) != NULL);
        void *p = alloy_arena_alloc(&a, 24, align);
        CHECK(p != NULL && aligned_to(p, align));
    }
    alloy_arena_destroy(&a);
    CHECK_EQ_U(up.live, 0);
    CHECK_EQ_U(up.bad_frees, 0);
}

static void test_bad_requests(void) {
    _Alignas(16) unsigned char buf[256];
    alloy_arena_t a;
    alloy_arena_init(&a, buf, sizeof buf, alloy_null_resource());
    void *first = alloy_arena_alloc(&a, 8, 8);
    CHECK(first == buf);
    alloy_arena_mark_t before = alloy_arena_mark(&a);
    size_t used = alloy_arena_used(&a);
    /* not a power of two */
    CHECK(alloy_arena_alloc(&a, 8, 0) == NULL);
    CHECK(alloy_arena_alloc(&a, 8, 3) == NULL);
    CHECK(alloy_arena_alloc(&a, 8, 24) == NULL);
    /* sizes and alignments whose arithmetic would overflow */
    CHECK(alloy_arena_alloc(&a, SIZE_MAX, 1) == NULL);
    CHECK(alloy_arena_alloc(&a, SIZE_MAX - 7, 16) == NULL);
    CHECK(alloy_arena_alloc(&a, 1, (size_t)1 << 63) == NULL);
    CHECK(alloy_arena_alloc(&a, SIZE_MAX / 2, (size_t)1 << 62) == NULL);
    /* nothing moved */
    CHECK(alloy_arena_used(&a) == used);
    CHECK(alloy_arena_mark(&a).next == before.next);
    CHECK(alloy_arena_alloc(&a, 8, 8) == buf + 8);
    /* size 0 gives a valid, non-NULL pointer */
    CHECK(alloy_arena_alloc(&a, 0, 1) != NULL);
    alloy_arena_destroy(&a);

    /* the same with a growing arena: the upstream refuses what it cannot
     * give, the arena passes the NULL on, and nothing leaks */
    counting_resource_t up;
    counting_init(&up);
    alloy_arena_init(&a, NULL, 0, &up.base);
    CHECK(alloy_arena_alloc(&a, SIZE_MAX - 100, 8) == NULL);
    CHECK(alloy_arena_alloc(&a, 16, (size_t)1 << 63) == NULL);
    CHECK_EQ_U(up.allocs, 0);
    CHECK(alloy_arena_alloc(&a, 0, 8) != NULL); /* an empty arena too */
    alloy_arena_destroy(&a);
    CHECK_EQ_U(up.live, 0);
}

static void test_exhaustion(void) {
    _Alignas(16) unsigned char buf[1024];
    alloy_arena_t a;
    alloy_arena_init(&a, buf, sizeof buf, alloy_null_resource());
    int n = 0;
    while (alloy_arena_alloc(&a, 100, 4) != NULL)
        n++;
    CHECK_EQ_U(n, 10); /* 10 * 100 fit in 1024, the 11th does not */
    CHECK_EQ_U(alloy_arena_used(&a), 1000);
    CHECK(alloy_arena_alloc(&a, 24, 1) != NULL); /* the tail is still usable */
    CHECK(alloy_arena_alloc(&a, 1, 1) == NULL);
    CHECK_EQ_U(alloy_arena_reserved(&a), 1024);
    alloy_arena_reset(&a);
    CHECK(alloy_arena_alloc(&a, 1024, 1) == buf);
    alloy_arena_destroy(&a);

    /* an upstream that fails later: the arena keeps what it has */
    counting_resource_t up;
    counting_init(&up);
    up.fail_after = 1;
    alloy_arena_init(&a, NULL, 0, &up.base);
    CHECK(alloy_arena_alloc(&a, 3000, 8) != NULL); /* first chunk: 4096 */
    CHECK(alloy_arena_alloc(&a, 3000, 8) == NULL); /* needs a second; refused */
    CHECK_EQ_U(alloy_arena_used(&a), 3000);
    CHECK(alloy_arena_alloc(&a, 1000, 8) != NULL); /* still fits in the first */
    alloy_arena_destroy(&a);
    CHECK_EQ_U(up.live, 0);
}

static void test_upstream_fallback(void) {
    counting_resource_t up;
    counting_init(&up);
    unsigned char buf[4096];
    alloy_arena_t a;
    alloy_arena_init(&a, buf, sizeof buf, &up.base);
    /* the seed's shape: 252 doubles fit in the stack scratch, no upstream */
    double *path = alloy_arena_alloc(&a, 252 * sizeof(double), _Alignof(double));
    CHECK((unsigned char *)path >= buf && (unsigned char *)path < buf + sizeof buf);
    CHECK_EQ_U(up.allocs, 0);
    /* now spill: chunks come from upstream and grow geometrically */
    size_t last_reserved = alloy_arena_reserved(&a), last_growth = 0;
    int grew_geometrically = 1;
    for (int i = 0; i < 200; i++) {
        char *p = alloy_arena_alloc(&a, 1000, 8);
        CHECK(p != NULL);
        memset(p, i, 1000);
        size_t r = alloy_arena_reserved(&a);
        if (r != last_reserved) {
            size_t growth = r - last_reserved;
            if (last_growth != 0 && growth != 2 * last_growth)
                grew_geometrically = 0;
            last_growth = growth;
            last_reserved = r;
        }
    }
    CHECK(grew_geometrically);
    CHECK(up.allocs >= 3 && up.allocs <= 8); /* 200 KB in doubling chunks */
    CHECK_EQ_U(alloy_arena_used(&a), 252 * 8 + 200 * 1000);
    /* a request larger than the next chunk gets a chunk of its own */
    long before = up.allocs;
    char *big = alloy_arena_alloc(&a, 10u << 20, 4096);
    CHECK(big != NULL && aligned_to(big, 4096));
    CHECK_EQ_U(up.allocs, before + 1);
    memset(big, 1, 10u << 20);
    /* reset keeps the chunks: the same work again asks upstream nothing */
    long allocs = up.allocs;
    alloy_arena_reset(&a);
    CHECK_EQ_U(alloy_arena_used(&a), 0);
    CHECK(alloy_arena_alloc(&a, 8, 8) == (void *)buf);
    for (int i = 0; i < 200; i++)
        CHECK(alloy_arena_alloc(&a, 1000, 8) != NULL);
    CHECK_EQ_U(up.allocs, allocs);
    /* release gives them back */
    alloy_arena_release(&a);
    CHECK_EQ_U(up.live, 0);
    CHECK_EQ_U(alloy_arena_reserved(&a), sizeof buf);
    CHECK(alloy_arena_alloc(&a, 8, 8) == (void *)buf);
    alloy_arena_destroy(&a);
    CHECK_EQ_U(up.live, 0);
    CHECK_EQ_U(up.bad_frees, 0);

    /* the default upstream is the default resource (malloc) */
    alloy_arena_init(&a, NULL, 0, NULL);
    CHECK(a.upstream == alloy_default_resource());
    CHECK(alloy_arena_alloc(&a, 100, 8) != NULL);
    alloy_arena_destroy(&a);
}

static void test_mark_rewind(void) {
    counting_resource_t up;
    counting_init(&up);
    unsigned char buf[512];
    alloy_arena_t a;
    alloy_arena_init(&a, buf, sizeof buf, &up.base);
    char *x = alloy_arena_alloc(&a, 100, 1);
    alloy_arena_mark_t m1 = alloy_arena_mark(&a);
    char *y = alloy_arena_alloc(&a, 100, 1);
    CHECK(y == x + 100);
    alloy_arena_mark_t m2 = alloy_arena_mark(&a);
    for (int i = 0; i < 50; i++) /* spills into upstream chunks */
        CHECK(alloy_arena_alloc(&a, 1000, 8) != NULL);
    CHECK(up.allocs > 0);
    size_t reserved = alloy_arena_reserved(&a);
    alloy_arena_rewind(&a, m2);
    CHECK_EQ_U(alloy_arena_used(&a), 200);
    CHECK(alloy_arena_alloc(&a, 10, 1) == y + 100); /* continues right after y */
    /* rewinding reuses the chunks: no new upstream memory */
    alloy_arena_rewind(&a, m2);
    for (int i = 0; i < 50; i++)
        CHECK(alloy_arena_alloc(&a, 1000, 8) != NULL);
    CHECK_EQ_U(alloy_arena_reserved(&a), reserved);
    /* a mark inside a chunk, nested inside m1 */
    alloy_arena_mark_t m3 = alloy_arena_mark(&a);
    char *z = alloy_arena_alloc(&a, 64, 16);
    alloy_arena_rewind(&a, m3);
    CHECK(alloy_arena_alloc(&a, 64, 16) == z);
    alloy_arena_rewind(&a, m1);
    CHECK_EQ_U(alloy_arena_used(&a), 100);
    CHECK(alloy_arena_alloc(&a, 100, 1) == y);
    alloy_arena_destroy(&a);
    CHECK_EQ_U(up.live, 0);

    /* marks on an arena with no buffer and no chunk yet */
    alloy_arena_init(&a, NULL, 0, &up.base);
    alloy_arena_mark_t m0 = alloy_arena_mark(&a);
    CHECK(alloy_arena_alloc(&a, 100, 8) != NULL);
    alloy_arena_rewind(&a, m0);
    CHECK_EQ_U(alloy_arena_used(&a), 0);
    CHECK(alloy_arena_alloc(&a, 100, 8) != NULL);
    alloy_arena_destroy(&a);
    CHECK_EQ_U(up.live, 0);
}

static void test_scratch(void) {
    alloy_arena_mark_t outer = alloy_scratch_mark();
    double *a = alloy_scratch_alloc(252 * sizeof(double), _Alignof(double));
    CHECK(a != NULL);
    for (int i = 0; i < 252; i++)
        a[i] = i;
    alloy_arena_mark_t inner = alloy_scratch_mark();
    void *big = alloy_scratch_alloc(1u << 20, 64); /* beyond the first chunk */
    CHECK(big != NULL && aligned_to(big, 64));
    memset(big, 0, 1u << 20);
    alloy_scratch_rewind(inner);
    CHECK(a[251] == 251.0);
    alloy_scratch_rewind(outer);
    CHECK_EQ_U(alloy_arena_used(alloy_scratch_arena()), 0);
    alloy_scratch_release();
    CHECK_EQ_U(alloy_arena_reserved(alloy_scratch_arena()), 0);
}

int main(void) {
    test_alignment();
    test_bad_requests();
    test_exhaustion();
    test_upstream_fallback();
    test_mark_rewind();
    test_scratch();
    return CHECK_DONE();
}
