/* SPDX-License-Identifier: MIT */
/* monotonic.c - the monotonic memory resource: an alloy_resource_t whose
 * allocate is the arena's bump and whose deallocate does nothing
 * (std::pmr::monotonic_buffer_resource).
 *
 * Invariant: everything lives in m->arena; release/destroy return its
 * upstream chunks, and the caller's buffer is never freed.
 */
#include <alloy/resource.h>

#include "hot.h"

static void *monotonic_allocate(alloy_resource_t *self, size_t size, size_t align) {
    alloy_monotonic_t *m = (alloy_monotonic_t *)self;
    return alloy_arena_alloc(&m->arena, size, align);
}

static void monotonic_deallocate(alloy_resource_t *self, void *p, size_t size, size_t align) {}

static bool monotonic_is_equal(const alloy_resource_t *self, const alloy_resource_t *other) {
    return self == other;
}

static const alloy_resource_ops_t monotonic_ops = {
    monotonic_allocate,
    monotonic_deallocate,
    monotonic_is_equal,
};

ALLOY_API void alloy_monotonic_init(alloy_monotonic_t *m, void *buf, size_t len,
                                    alloy_resource_t *upstream) {
    m->base.ops = &monotonic_ops;
    alloy_arena_init(&m->arena, buf, len, upstream);
}

ALLOY_API void alloy_monotonic_release(alloy_monotonic_t *m) { alloy_arena_release(&m->arena); }

ALLOY_API void alloy_monotonic_destroy(alloy_monotonic_t *m) { alloy_arena_destroy(&m->arena); }
