/* SPDX-License-Identifier: MIT */
/* realloc.c - realloc and reallocarray (see realloc.h).
 *
 * The policy, as in glibc: realloc(NULL, n) is malloc(n); realloc(p, 0)
 * frees p and returns NULL.  A block stays where it is while the new size
 * fits and fills more than half of it; a direct map is resized with mremap
 * (except in the secure flavour); a block above 32 KiB that stays above grows
 * into the free pages after it or gives its tail back, where it is;
 * otherwise the block moves.  A block
 * that grows gets an eighth more room than it asked for.  When realloc fails, p is untouched.  p gets
 * the same checks as a pointer given to free. */
#include "realloc.h"

#include <string.h>

#include "alloc.h"
#include "alloy.h"
#include "free.h"
#include "guard.h"
#include "large.h"
#include "prof.h"
#include "prof_store.h"

/* Can the block at p (of span s, `usable` bytes) hold `size` bytes where it
 * is, without wasting more than half of it, and with the alignment malloc
 * would give that size (16 bytes for a multiple of 16)? */
static bool fits_in_place(const ay_span_t *s, const void *p, size_t usable, size_t size) {
    if (size % 16 == 0 && (uintptr_t)p % 16 != 0)
        return false;
    if (s->state == AY_SPAN_SMALL)
        return size <= usable && (size > usable / 2 || ay_size_bin(size) == s->cls + 1u);
    if (s->state == AY_SPAN_LARGE)
        return size > AY_MAX_BINNED_SIZE && size <= usable && size > usable / 2;
    return false;
}

/* A sampled block (prof.h) records the size asked for. */
static void *sampled_resized(ay_span_t *s, void *p, size_t size) {
    if (AY_UNLIKELY(s->prof != NULL))
        ay_prof_resize(s, size);
    return p;
}

void *ay_realloc_in(ay_heap_t *h, void *p, size_t size) {
    if (!p)
        return ay_alloc_in(h, size);
    if (size == 0) {
        alloy_free(p);
        return NULL;
    }
    if (size > AY_MAX_REQUEST)
        return ay_oom();
    if (AY_UNLIKELY(ay_guard_owns(p))) { /* a sampled guarded block moves out */
        size_t usable = ay_guard_usable(p, "realloc()");
        void *q = ay_alloc_in(h, size);
        if (!q)
            return NULL;
        memcpy(q, p, usable < size ? usable : size);
        ay_guard_free(p, __builtin_return_address(0), "realloc()");
        return q;
    }
    ay_span_t *s = ay_block_span(p, "realloc()");
    size_t usable = ay_block_usable(s, p);
    bool same_heap = !h || ay_span_heap(s) == h;
    if (same_heap && fits_in_place(s, p, usable, size))
        return sampled_resized(s, p, size);
    /* (not in the secure flavour: mremap moves or cuts the map and not the
     * guard pages around it, ay_os_map_chunk) */
    if (!ay_secure_guards && same_heap && s->state == AY_SPAN_DIRECT &&
        size > AY_PAGES_BYTES(AY_LARGE_MAX_PAGES)) {
        void *q = ay_large_resize(s, size);
        if (q)
            return sampled_resized(s, q, size);
    }
    /* a block that grows gets an eighth more room, so that a string or
     * buffer growing a little at a time moves O(log n) times, not at every
     * class boundary (classes are only 16 bytes apart below 1 KiB); a size
     * that is a multiple of 16 keeps that, for malloc's 16-byte alignment */
    size_t want = size > usable && size <= AY_MAX_REQUEST - size / 8 - 16 ? size + size / 8 : size;
    if (size % 16 == 0)
        want = (want + 15) & ~(size_t)15;
    /* a large block grows (by the eighth too) into the free pages after it,
     * or gives its tail back, where it is: nothing is copied */
    if (same_heap && s->state == AY_SPAN_LARGE && size > AY_MAX_BINNED_SIZE &&
        ay_large_resize_in_place(s, size > usable ? want : size))
        return sampled_resized(s, p, size);
    void *q = ay_alloc_in(h, want);
    if (!q)
        return NULL; /* p is untouched */
    /* it records size, not want (a sampled guarded block, guard.h, has no
     * span and no record) */
    if (AY_UNLIKELY(ay_prof_enabled()) && !ay_guard_owns(q))
        sampled_resized(ay_pagemap_span(q), q, size);
    memcpy(q, p, usable < size ? usable : size);
    alloy_free(p);
    return q;
}

ALLOY_API void *alloy_realloc(void *p, size_t size) { return ay_realloc_in(NULL, p, size); }

ALLOY_API void *alloy_reallocarray(void *p, size_t n, size_t size) {
    size_t total;
    if (__builtin_mul_overflow(n, size, &total))
        return ay_oom();
    return ay_realloc_in(NULL, p, total);
}
