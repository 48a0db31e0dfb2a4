/* SPDX-License-Identifier: MIT */
/* resource.c - the built-in memory resources (malloc, null) and the
 * process-wide default resource.
 *
 * The malloc resource calls whichever malloc the process has loaded
 * (glibc's, jemalloc's through LD_PRELOAD, or alloy's); it never assumes
 * alloy's own.  It asks posix_memalign only when plain malloc cannot be
 * trusted with the alignment: every malloc aligns to 8, and to 16 when the
 * size is a multiple of 16 (the weakest guarantee among glibc, jemalloc and
 * alloy).
 *
 * Invariant: the default resource pointer is never NULL when read; it is
 * swapped atomically, so any thread may read or set it.
 */
#include <alloy/resource.h>

#include <stdatomic.h>
#include <stdlib.h>

#include "hot.h"

/* ---- malloc ------------------------------------------------------------ */

static void *mallocres_allocate(alloy_resource_t *self, size_t size, size_t align) {
    if (!ay_hot_is_pow2(align))
        return NULL;
    if (size == 0)
        size = 1;
    if (align <= 8 || (align <= 16 && size % 16 == 0))
        return malloc(size);
    void *p = NULL;
    if (posix_memalign(&p, align, size) != 0)
        return NULL;
    return p;
}

static void mallocres_deallocate(alloy_resource_t *self, void *p, size_t size, size_t align) {
    free(p);
}

static const alloy_resource_ops_t mallocres_ops;

static bool mallocres_is_equal(const alloy_resource_t *self, const alloy_resource_t *other) {
    return other->ops == &mallocres_ops;
}

static const alloy_resource_ops_t mallocres_ops = {
    mallocres_allocate,
    mallocres_deallocate,
    mallocres_is_equal,
};
static alloy_resource_t mallocres_instance = {&mallocres_ops};

ALLOY_API alloy_resource_t *alloy_malloc_resource(void) { return &mallocres_instance; }

/* ---- null -------------------------------------------------------------- */

static void *nullres_allocate(alloy_resource_t *self, size_t size, size_t align) { return NULL; }

static void nullres_deallocate(alloy_resource_t *self, void *p, size_t size, size_t align) {}

static const alloy_resource_ops_t nullres_ops;

static bool nullres_is_equal(const alloy_resource_t *self, const alloy_resource_t *other) {
    return other->ops == &nullres_ops;
}

static const alloy_resource_ops_t nullres_ops = {
    nullres_allocate,
    nullres_deallocate,
    nullres_is_equal,
};
static alloy_resource_t nullres_instance = {&nullres_ops};

ALLOY_API alloy_resource_t *alloy_null_resource(void) { return &nullres_instance; }

/* ---- the default ------------------------------------------------------- */

static _Atomic(alloy_resource_t *) resource_default = &mallocres_instance;

ALLOY_API alloy_resource_t *alloy_default_resource(void) {
    return atomic_load_explicit(&resource_default, memory_order_acquire);
}

ALLOY_API alloy_resource_t *alloy_set_default_resource(alloy_resource_t *r) {
    if (r == NULL)
        r = &mallocres_instance;
    return atomic_exchange_explicit(&resource_default, r, memory_order_acq_rel);
}
