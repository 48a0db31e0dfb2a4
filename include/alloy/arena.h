/* SPDX-License-Identifier: MIT */
/* alloy/arena.h - a bump (monotonic) arena, and the calling thread's scratch
 * arena.
 *
 * An arena hands out memory by moving a pointer forward; single objects are
 * never freed.  Everything goes back at once with alloy_arena_reset(), or
 * back to a checkpoint with alloy_arena_rewind().  It is the C counterpart
 * of std::pmr::monotonic_buffer_resource:
 *
 *   - it may start from a buffer the caller owns (say 4096 bytes of stack);
 *   - when that runs out it takes chunks from an upstream resource, each
 *     chunk twice the size of the one before (geometric growth);
 *   - reset and rewind keep the chunks and reuse them, in the order of the
 *     chunk list, so a per-tick arena reaches a steady state with no
 *     upstream calls at all;
 *     alloy_arena_release() gives the chunks back.
 *
 * Invariants: begin <= next <= end always describe the current region (the
 * caller's buffer when current is NULL, else the data of chunk `current`);
 * the current region only moves forward along the chunk list (or back, on
 * a rewind or reset), and a new chunk is linked right after the current
 * one, so everything handed out after a mark lives in the mark's region or
 * a later one on the list.  A request
 * that cannot be met (bad alignment, arithmetic overflow, upstream failure)
 * returns NULL and leaves the arena exactly as it was.
 *
 * Not thread-safe: one arena per thread, or the scratch arena below.
 *
 * Memory checkers.  When alloy's hot-path allocators are compiled with
 * AddressSanitizer, or with ALLOY_VALGRIND (CMake -DALLOY_VALGRIND=ON) and
 * run under valgrind, the arena tells the checker what it hands out and
 * what a reset or a rewind takes back (each region is a memcheck memory
 * pool; ASan poisons it), so a read of memory after alloy_arena_reset is
 * reported.  Every allocation then goes through alloy_arena_alloc_slow.
 * Destroy an arena that started on a buffer of yours before the buffer
 * goes, so that the buffer is yours again for the checker too.
 */
#ifndef ALLOY_ARENA_H
#define ALLOY_ARENA_H

#include <stddef.h>
#include <stdint.h>

#include <alloy/hotdefs.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct alloy_arena_chunk alloy_arena_chunk_t; /* private: src/hot/arena.c */

typedef struct alloy_arena {
    char *next;                   /* hot: first free byte of the current region */
    char *end;                    /* hot: one past the current region */
    char *begin;                  /* start of the current region */
    alloy_arena_chunk_t *current; /* chunk of the current region; NULL: caller's buffer */
    alloy_arena_chunk_t *chunks;  /* upstream chunks, in the order the arena moves through them */
    size_t used_before;           /* bytes consumed in regions left behind */
    size_t reserved;              /* caller's buffer + all upstream chunk bytes */
    size_t next_chunk_size;       /* bytes of the next upstream request */
    char *initial;                /* the caller's buffer, or NULL */
    size_t initial_size;          /* its size in bytes */
    alloy_resource_t *upstream;   /* where chunks come from; never NULL */
} alloy_arena_t;

/* A checkpoint: alloy_arena_rewind() frees everything allocated after it. */
typedef struct alloy_arena_mark_s {
    alloy_arena_chunk_t *chunk;
    char *next;
    size_t used_before;
} alloy_arena_mark_t;

/* Start an arena on buf[0..len) (buf may be NULL, len 0) that grows from
 * upstream (NULL: the default resource).  To get a fixed-capacity arena,
 * pass alloy_null_resource() as upstream. */
ALLOY_API void alloy_arena_init(alloy_arena_t *a, void *buf, size_t len,
                                alloy_resource_t *upstream);
/* Give every upstream chunk back; the arena is empty and may be reused. */
ALLOY_API void alloy_arena_destroy(alloy_arena_t *a);
/* Free everything at once.  Chunks are kept for reuse. */
ALLOY_API void alloy_arena_reset(alloy_arena_t *a);
/* Free everything and give the upstream chunks back (pmr's release()). */
ALLOY_API void alloy_arena_release(alloy_arena_t *a);
/* Bytes handed out since the last reset, alignment padding included. */
ALLOY_API size_t alloy_arena_used(const alloy_arena_t *a);
/* Bytes the arena holds: the caller's buffer plus upstream chunks. */
ALLOY_API size_t alloy_arena_reserved(const alloy_arena_t *a);
/* The slow path of alloy_arena_alloc; call that instead. */
ALLOY_API void *alloy_arena_alloc_slow(alloy_arena_t *a, size_t size, size_t align);

/* size bytes aligned to align (any power of two).  NULL when align is not a
 * power of two or the request cannot be met.  size 0 gives a valid pointer. */
static inline void *alloy_arena_alloc(alloy_arena_t *a, size_t size, size_t align) {
    uintptr_t p = (uintptr_t)a->next;
    size_t avail = (size_t)(a->end - a->next);
    size_t pad = (size_t)(0 - p) & (align - 1);
    /* One branch for every reason to go slow: a bad alignment, no room, or
     * size 0 (size - 1 wraps, so an empty region never returns NULL). */
    if (ALLOY_UNLIKELY((align & (align - 1)) | (pad > avail) | (size - 1 >= avail - pad)))
        return alloy_arena_alloc_slow(a, size, align);
    a->next = (char *)(p + pad + size);
    return (void *)(p + pad);
}

static inline alloy_arena_mark_t alloy_arena_mark(const alloy_arena_t *a) {
    alloy_arena_mark_t m = {a->current, a->next, a->used_before};
    return m;
}

/* Free everything allocated after m.  m must have been taken on this arena
 * since its last reset/release, and not be older than a mark already
 * rewound to.  Chunks stay for reuse. */
ALLOY_API void alloy_arena_rewind(alloy_arena_t *a, alloy_arena_mark_t m);

/* ---- the thread-local scratch arena (seed 001 §3.4) ---------------------
 * Each thread has one arena, created on first use, that grows from the
 * malloc resource (64 KiB first, then doubling) and is given back when the
 * thread exits.  Use it for scratch scopes:
 *
 *     alloy_arena_mark_t m = alloy_scratch_mark();
 *     double *tmp = alloy_scratch_alloc(n * sizeof *tmp, _Alignof(double));
 *     ...
 *     alloy_scratch_rewind(m);
 *
 * Scopes nest.  Memory must not be passed to another thread that outlives
 * the scope.  alloy_scratch_arena() returns NULL only when malloc cannot
 * give the thread its arena; the helpers below then allocate nothing
 * (NULL), and marks and rewinds do nothing. */
ALLOY_API alloy_arena_t *alloy_scratch_arena(void);
/* Give the calling thread's scratch chunks back to malloc now. */
ALLOY_API void alloy_scratch_release(void);

static inline void *alloy_scratch_alloc(size_t size, size_t align) {
    alloy_arena_t *a = alloy_scratch_arena();
    return a ? alloy_arena_alloc(a, size, align) : NULL;
}
static inline alloy_arena_mark_t alloy_scratch_mark(void) {
    alloy_arena_t *a = alloy_scratch_arena();
    alloy_arena_mark_t none = {NULL, NULL, 0};
    return a ? alloy_arena_mark(a) : none;
}
static inline void alloy_scratch_rewind(alloy_arena_mark_t m) {
    alloy_arena_t *a = alloy_scratch_arena();
    if (a)
        alloy_arena_rewind(a, m);
}

#ifdef __cplusplus
}
#endif
#endif
