/* SPDX-License-Identifier: MIT */
/* counting.h - a test resource that wraps malloc, counts what passes
 * through it, checks every deallocate against what allocate handed out,
 * and can be told to fail (Lua's Memcontrol idea: fail_after, limit). */
#ifndef ALLOY_TEST_COUNTING_H
#define ALLOY_TEST_COUNTING_H

#include <alloy/resource.h>

#include <stdint.h>
#include <stdlib.h>

typedef struct counting_resource {
    alloy_resource_t base;
    long allocs, frees, live; /* calls, and blocks still out */
    size_t live_bytes;
    long fail_after; /* < 0: never; else succeed this many more times */
    long bad_frees;  /* deallocate with a size/align that does not match */
} counting_resource_t;

typedef struct counting_header {
    size_t size, align;
} counting_header_t;

static void *counting_allocate(alloy_resource_t *self, size_t size, size_t align) {
    counting_resource_t *c = (counting_resource_t *)self;
    if (align == 0 || (align & (align - 1)))
        return NULL;
    if (c->fail_after == 0)
        return NULL;
    if (c->fail_after > 0)
        c->fail_after--;
    size_t a = align < 16 ? 16 : align;
    if (size > SIZE_MAX / 4 || a > SIZE_MAX / 4)
        return NULL; /* like malloc: no such memory */
    char *base = aligned_alloc(a, ((a + size + a - 1) / a) * a);
    if (base == NULL)
        return NULL;
    counting_header_t *h = (counting_header_t *)(base + a) - 1;
    h->size = size;
    h->align = align;
    c->allocs++;
    c->live++;
    c->live_bytes += size;
    return base + a;
}

static void counting_deallocate(alloy_resource_t *self, void *p, size_t size, size_t align) {
    counting_resource_t *c = (counting_resource_t *)self;
    if (p == NULL)
        return;
    counting_header_t *h = (counting_header_t *)p - 1;
    if (h->size != size || h->align != align)
        c->bad_frees++;
    size_t a = h->align < 16 ? 16 : h->align;
    c->frees++;
    c->live--;
    c->live_bytes -= h->size;
    free((char *)p - a);
}

static bool counting_is_equal(const alloy_resource_t *self, const alloy_resource_t *other) {
    return self == other;
}

static const alloy_resource_ops_t counting_ops = {counting_allocate, counting_deallocate,
                                                  counting_is_equal};

static inline void counting_init(counting_resource_t *c) {
    counting_resource_t z = {{&counting_ops}, 0, 0, 0, 0, -1, 0};
    *c = z;
}

#endif
