/* SPDX-License-Identifier: MIT */
/* alloy/pool.h - fixed-size object pools: a single-threaded one with an
 * inline fast path, and a thread-safe one with per-thread caches.
 *
 * alloy_pool_t (single-threaded).  The slot size and alignment are fixed at
 * creation.  Free slots form an intrusive singly linked list threaded
 * through the slots themselves, so a slot carries no overhead.  Alloc pops
 * the head, free pushes it: both O(1), last freed is first reused (LIFO).
 * Memory comes from an upstream resource in chunks; slots of a new chunk are
 * carved lazily, a batch at a time, so a large pool does not touch all of
 * its memory up front.  The pool either grows without bound (max_slots 0) or
 * holds at most max_slots slots, all taken from upstream at init.
 *
 * The checked flavour (ALLOY_POOL_CHECKED) keeps one bit per slot and
 * detects a double free, a pointer that is not a slot of this pool, and a
 * free of NULL.  The bad free is counted (alloy_pool_errors), reported on
 * stderr, and otherwise ignored, so the pool stays consistent; with
 * ALLOY_POOL_ABORT it aborts instead.  Its `free` field stays NULL, so its
 * allocations always miss into the slow path: the fast path pays nothing.
 *
 * Memory checkers.  When alloy's hot-path allocators are compiled with
 * AddressSanitizer, or with ALLOY_VALGRIND (CMake -DALLOY_VALGRIND=ON) and
 * run under valgrind, every pool is a checked pool, and tells the checker
 * about its slots: a freed slot is poisoned (ASan) or freed in a memcheck
 * memory pool, so reading it is reported.
 *
 * alloy_sync_pool_t (thread-safe, no lock on the fast path).  Each thread
 * keeps a small cache of free slots per pool, in an array that malloc gives
 * the thread on its first use of a synchronized pool (thread-local storage
 * holds only a pointer to it); alloc and free work on it with no lock and
 * no atomic instruction.  A checked pool has no such cache: every call
 * takes the central pool's lock.  An empty
 * cache takes ALLOY_SYNC_POOL_BATCH slots from a central alloy_pool_t under
 * that pool's own lock; a cache holding 2 * ALLOY_SYNC_POOL_BATCH gives a
 * batch back, so memory freed by one thread reaches the others.  A thread's
 * caches are flushed when it exits.  With a fixed capacity, note that up to
 * 2 * ALLOY_SYNC_POOL_BATCH free slots per other thread may sit in that
 * thread's cache; alloy_sync_pool_thread_flush() returns the calling
 * thread's.
 */
#ifndef ALLOY_POOL_H
#define ALLOY_POOL_H

#include <stddef.h>

#include <alloy/hotdefs.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ALLOY_POOL_CHECKED 1u /* detect double and foreign frees */
#define ALLOY_POOL_ABORT 2u   /* with CHECKED: abort() on a bad free */

typedef struct alloy_pool_config {
    size_t slot_size;           /* bytes per object, > 0 */
    size_t slot_align;          /* power of two; 0 means alignof(max_align_t) */
    size_t chunk_slots;         /* slots in the first chunk; 0: about 64 KiB worth */
    size_t max_slots;           /* 0: grow without bound; else fixed capacity */
    unsigned flags;             /* ALLOY_POOL_CHECKED, ALLOY_POOL_ABORT */
    alloy_resource_t *upstream; /* NULL: the default resource */
} alloy_pool_config_t;

typedef struct alloy_pool_chunk alloy_pool_chunk_t; /* private: src/hot/pool.c */

typedef struct alloy_pool {
    void *free;                 /* hot: head of the free list; NULL when checked */
    char *carve;                /* next never-used slot of the newest chunk */
    char *carve_end;            /* end of the newest chunk's slots */
    size_t slot_size;           /* bytes between slots: a multiple of slot_align */
    size_t slot_align;          /* alignment of every slot */
    size_t chunk_slots;         /* slots the next chunk will hold */
    size_t max_slots;           /* 0: unbounded */
    size_t total_slots;         /* slots in all chunks */
    size_t live;                /* slots handed out (checked flavour only) */
    unsigned flags;             /* ALLOY_POOL_* */
    unsigned errors;            /* bad frees detected (checked flavour) */
    void *checked_free;         /* the checked flavour's free list */
    alloy_pool_chunk_t *chunks; /* newest first */
    alloy_resource_t *upstream; /* never NULL after init */
} alloy_pool_t;

/* Returns 0, EINVAL for a bad config (size 0, alignment not a power of two,
 * sizes that overflow), or ENOMEM when a fixed-capacity pool cannot get its
 * memory.  On failure the pool holds nothing and need not be destroyed. */
ALLOY_API int alloy_pool_init(alloy_pool_t *pool, const alloy_pool_config_t *cfg);
/* Give every chunk back upstream.  Outstanding objects become invalid. */
ALLOY_API void alloy_pool_destroy(alloy_pool_t *pool);
/* Bad frees seen by the checked flavour. */
ALLOY_API unsigned alloy_pool_errors(const alloy_pool_t *pool);
/* Does p point at a slot of this pool (free or not)?  O(chunks). */
ALLOY_API int alloy_pool_owns(const alloy_pool_t *pool, const void *p);
/* Slow paths of the inline functions below; call those instead. */
ALLOY_API void *alloy_pool_alloc_slow(alloy_pool_t *pool);
ALLOY_API void alloy_pool_free_checked(alloy_pool_t *pool, void *p);

/* One slot, or NULL when a fixed pool is full or upstream fails. */
static inline void *alloy_pool_alloc(alloy_pool_t *pool) {
    void *p = pool->free;
    if (ALLOY_UNLIKELY(p == NULL))
        return alloy_pool_alloc_slow(pool);
    pool->free = *(void **)p;
    return p;
}

/* Give back a slot from this pool.  p must not be NULL (the checked flavour
 * reports it). */
static inline void alloy_pool_free(alloy_pool_t *pool, void *p) {
    if (ALLOY_UNLIKELY(pool->flags & ALLOY_POOL_CHECKED)) {
        alloy_pool_free_checked(pool, p);
        return;
    }
    *(void **)p = pool->free;
    pool->free = p;
}

/* ---- the thread-safe pool ---------------------------------------------- */

#define ALLOY_SYNC_POOL_BATCH 32 /* slots moved between a thread cache and the centre */

typedef struct ay_sync_pool_state ay_sync_pool_state_t; /* private: src/hot/sync_pool.c */

typedef struct alloy_sync_pool {
    ay_sync_pool_state_t *state; /* the central pool and its lock */
} alloy_sync_pool_t;

/* Same config and results as alloy_pool_init.  The upstream resource is
 * only called under the pool's central lock; it need not be thread-safe. */
ALLOY_API int alloy_sync_pool_init(alloy_sync_pool_t *sp, const alloy_pool_config_t *cfg);
/* Not thread-safe: no other thread may use the pool during or after. */
ALLOY_API void alloy_sync_pool_destroy(alloy_sync_pool_t *sp);
ALLOY_API void *alloy_sync_pool_alloc(alloy_sync_pool_t *sp);
ALLOY_API void alloy_sync_pool_free(alloy_sync_pool_t *sp, void *p);
/* Return the calling thread's cached free slots to the central pool. */
ALLOY_API void alloy_sync_pool_thread_flush(alloy_sync_pool_t *sp);
/* Bad frees seen (checked flavour). */
ALLOY_API unsigned alloy_sync_pool_errors(const alloy_sync_pool_t *sp);
/* Slot size after rounding, in bytes. */
ALLOY_API size_t alloy_sync_pool_slot_size(const alloy_sync_pool_t *sp);

#ifdef __cplusplus
}
#endif
#endif
