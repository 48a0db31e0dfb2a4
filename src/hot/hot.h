/* SPDX-License-Identifier: MIT */
/* hot.h - helpers shared by the hot-path allocators (the src/hot modules):
 * overflow-checked size arithmetic and power-of-two tests.
 *
 * Every helper that can overflow reports it instead of wrapping, so callers
 * turn an impossible request into NULL before touching any state.
 */
#ifndef ALLOY_HOT_H
#define ALLOY_HOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <alloy/hotdefs.h>

/* The alignment malloc guarantees on this platform. */
#define AY_HOT_MALLOC_ALIGN ((size_t) _Alignof(max_align_t))

static inline bool ay_hot_is_pow2(size_t x) { return x != 0 && (x & (x - 1)) == 0; }

/* *out = a + b; false on overflow. */
static inline bool ay_hot_add(size_t a, size_t b, size_t *out) {
    return !__builtin_add_overflow(a, b, out);
}

/* *out = a * b; false on overflow. */
static inline bool ay_hot_mul(size_t a, size_t b, size_t *out) {
    return !__builtin_mul_overflow(a, b, out);
}

/* *out = x rounded up to a multiple of align (a power of two); false on
 * overflow. */
static inline bool ay_hot_round_up(size_t x, size_t align, size_t *out) {
    size_t t;
    if (!ay_hot_add(x, align - 1, &t))
        return false;
    *out = t & ~(align - 1);
    return true;
}

/* Smallest power of two >= x (x >= 1, x <= SIZE_MAX/2 + 1). */
static inline size_t ay_hot_pow2_ceil(size_t x) {
    return x <= 1 ? 1 : (size_t)1 << (sizeof(size_t) * 8 - (size_t)__builtin_clzl(x - 1));
}

#endif
