/* SPDX-License-Identifier: MIT */
/* alloy/resource.h - memory resources: a three-entry vtable in the spirit of
 * C++17's std::pmr::memory_resource, and the resources alloy ships.
 *
 * A resource is any struct whose first member is an alloy_resource_t.  Code
 * that takes an alloy_resource_t * (alloy_vec_t, the arena, the pools) works
 * with every one of them, chosen at run time.
 *
 * Contract of every resource:
 *   allocate(size, align)      align is a power of two, else NULL.  size 0
 *                              is served like size 1.  NULL on failure;
 *                              nothing is ever thrown or aborted.
 *   deallocate(p, size, align) p came from allocate on an equal resource
 *                              with the same size and align.  p NULL: no-op.
 *   is_equal(other)            memory from one may be freed by the other.
 *
 * Thread safety: malloc, null and the synchronized pool resource may be used
 * from any thread; monotonic and the unsynchronized pool resource by one
 * thread at a time.
 */
#ifndef ALLOY_RESOURCE_H
#define ALLOY_RESOURCE_H

#include <stdbool.h>
#include <stddef.h>

#include <alloy/arena.h>
#include <alloy/hotdefs.h>
#include <alloy/pool.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct alloy_resource_ops {
    void *(*allocate)(alloy_resource_t *self, size_t size, size_t align);
    void (*deallocate)(alloy_resource_t *self, void *p, size_t size, size_t align);
    bool (*is_equal)(const alloy_resource_t *self, const alloy_resource_t *other);
} alloy_resource_ops_t;

struct alloy_resource {
    const alloy_resource_ops_t *ops;
};

static inline void *alloy_resource_allocate(alloy_resource_t *r, size_t size, size_t align) {
    return r->ops->allocate(r, size, align);
}
static inline void alloy_resource_deallocate(alloy_resource_t *r, void *p, size_t size,
                                             size_t align) {
    r->ops->deallocate(r, p, size, align);
}
static inline bool alloy_resource_is_equal(const alloy_resource_t *a, const alloy_resource_t *b) {
    return a == b || a->ops->is_equal(a, b);
}

/* The global malloc (whichever is loaded), with posix_memalign for
 * alignments above 16, and for 16 when the size is not a multiple of 16.
 * The default resource, and thread-safe. */
ALLOY_API alloy_resource_t *alloy_malloc_resource(void);
/* Always fails: allocate returns NULL.  For tests and fixed-capacity arenas. */
ALLOY_API alloy_resource_t *alloy_null_resource(void);
/* The process-wide default (initially the malloc resource). */
ALLOY_API alloy_resource_t *alloy_default_resource(void);
/* Replace the default; NULL restores malloc.  Returns the previous one. */
ALLOY_API alloy_resource_t *alloy_set_default_resource(alloy_resource_t *r);

/* ---- monotonic: a resource over an alloy_arena_t ---------------------------
 * deallocate does nothing; memory goes back on release/destroy. */
typedef struct alloy_monotonic {
    alloy_resource_t base; /* first: &m->base is the resource */
    alloy_arena_t arena;
} alloy_monotonic_t;

ALLOY_API void alloy_monotonic_init(alloy_monotonic_t *m, void *buf, size_t len,
                                    alloy_resource_t *upstream);
ALLOY_API void alloy_monotonic_release(alloy_monotonic_t *m);
ALLOY_API void alloy_monotonic_destroy(alloy_monotonic_t *m);
static inline alloy_resource_t *alloy_monotonic_resource(alloy_monotonic_t *m) { return &m->base; }

/* ---- pool resources: many sizes, like std::pmr::*_pool_resource ----------
 * Blocks up to `largest_block` bytes come from one pool per power-of-two
 * size class (8, 16, ..., 16384); a request (size, align) is served by the
 * class max(size, align) rounds up to, so every block is aligned to its
 * class.  Larger blocks go straight to upstream and are tracked so that
 * alloy_pool_resource_destroy (alloy_sync_pool_resource_destroy) gives
 * them back too. */
#define ALLOY_POOL_RESOURCE_CLASSES 12 /* 8 << 0 .. 8 << 11 = 16384 */
#define ALLOY_POOL_RESOURCE_MAX_BLOCK ((size_t)8 << (ALLOY_POOL_RESOURCE_CLASSES - 1))

typedef struct alloy_pool_options {
    size_t largest_block; /* 0 or above the maximum: 4096 / the maximum */
    size_t chunk_bytes;   /* bytes of each class's first chunk; 0: 16 KiB */
    unsigned flags;       /* ALLOY_POOL_CHECKED, ALLOY_POOL_ABORT */
} alloy_pool_options_t;

typedef struct ay_large_block ay_large_block_t; /* private: src/hot/pool_resource.c */

typedef struct alloy_pool_resource_s {
    alloy_resource_t base;
    alloy_resource_t *upstream;
    size_t largest_block;
    unsigned nclasses; /* classes in use */
    alloy_pool_t pools[ALLOY_POOL_RESOURCE_CLASSES];
    ay_large_block_t *large; /* blocks above largest_block */
} alloy_pool_resource_t;

/* Returns 0 or EINVAL.  opts may be NULL; upstream NULL is the default. */
ALLOY_API int alloy_pool_resource_init(alloy_pool_resource_t *pr, const alloy_pool_options_t *opts,
                                       alloy_resource_t *upstream);
ALLOY_API void alloy_pool_resource_destroy(alloy_pool_resource_t *pr);
static inline alloy_resource_t *alloy_pool_resource(alloy_pool_resource_t *pr) { return &pr->base; }

typedef struct ay_sync_large ay_sync_large_t; /* private: src/hot/pool_resource.c */

/* The synchronized flavour: one alloy_sync_pool_t per class, and a lock
 * only around the list of large blocks. */
typedef struct alloy_sync_pool_resource_s {
    alloy_resource_t base;
    alloy_resource_t *upstream; /* must itself be thread-safe */
    size_t largest_block;
    unsigned nclasses;
    alloy_sync_pool_t pools[ALLOY_POOL_RESOURCE_CLASSES];
    ay_sync_large_t *large; /* locked list of large blocks */
} alloy_sync_pool_resource_t;

ALLOY_API int alloy_sync_pool_resource_init(alloy_sync_pool_resource_t *pr,
                                            const alloy_pool_options_t *opts,
                                            alloy_resource_t *upstream);
ALLOY_API void alloy_sync_pool_resource_destroy(alloy_sync_pool_resource_t *pr);
static inline alloy_resource_t *alloy_sync_pool_resource(alloy_sync_pool_resource_t *pr) {
    return &pr->base;
}

#ifdef __cplusplus
}
#endif
#endif
