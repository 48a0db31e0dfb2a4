/* SPDX-License-Identifier: MIT */
/* arena.c - the bump arena's slow path, reset, rewind and release.
 *
 * The inline fast path (include/alloy/arena.h) bumps `next` inside the
 * current region.  Everything else lands here: a bad alignment, size 0, or
 * a region that is full.  A full region makes the arena move to the next
 * chunk it already owns that can hold the request, or else take a new
 * chunk from upstream and link it right after the current one.
 *
 * Invariants kept:
 *   - the current region only moves forward along the chunk list (or back
 *     on rewind/reset), and a new chunk is linked right after the current
 *     one (after a rewind, before chunks it already owns further on), so a
 *     mark taken earlier always names a region at or before the current
 *     one;
 *   - an arena with no region points begin/next/end at one static byte, so
 *     pointer arithmetic is always within an object;
 *   - no state changes before the request is known to succeed.
 *
 * Memory checkers (checker.h): each region (the caller's buffer, each
 * chunk) is a memory pool of its own, anchored at its start; free space is
 * forbidden, an allocation is a block of the region's pool, a reset or a
 * rewind frees the blocks after the point it goes back to (memcheck's
 * trim; ASan's poison).  The inline fast path then always misses: `end`
 * stays equal to `next`, and the region's real end is region_end().
 */
#include <alloy/arena.h>
#include <alloy/resource.h>

#include "checker.h"
#include "hot.h"

struct alloy_arena_chunk {
    alloy_arena_chunk_t *next; /* the chunk used after this one */
    size_t size;               /* bytes of the whole chunk, header included */
};

/* Data starts right after the header, which keeps malloc's alignment. */
#define ARENA_HEADER sizeof(alloy_arena_chunk_t)
_Static_assert(sizeof(alloy_arena_chunk_t) % 16 == 0, "chunk data must stay 16-aligned");

#define ARENA_MIN_CHUNK ((size_t)4096)
#define ARENA_MAX_GROWTH ((size_t)256 << 20) /* stop doubling at 256 MiB */

static char arena_empty[1]; /* the region of an arena that has none */

static char *arena_chunk_data(alloy_arena_chunk_t *c) { return (char *)c + ARENA_HEADER; }

/* The end of region c (NULL: the caller's buffer). */
static char *region_end(const alloy_arena_t *a, const alloy_arena_chunk_t *c) {
    if (c != NULL)
        return (char *)c + c->size;
    return a->initial != NULL ? a->initial + a->initial_size : arena_empty + 0;
}

/* The memory-pool anchor of region c (NULL when it has no memory). */
static const void *region_anchor(const alloy_arena_t *a, const alloy_arena_chunk_t *c) {
    return c != NULL ? (const void *)c : (const void *)a->initial;
}

/* Checkers: everything of region c from `from` on is freed (memcheck's
 * blocks there, and the memory). */
static void region_forget_from(const alloy_arena_t *a, const alloy_arena_chunk_t *c, char *from) {
    const void *anchor = region_anchor(a, c);
    if (!ay_hot_checked() || anchor == NULL)
        return;
    char *begin = c != NULL ? arena_chunk_data((alloy_arena_chunk_t *)c) : a->initial;
    ay_hot_pool_trim(anchor, begin, (size_t)(from - begin));
    ay_hot_forbid(from, (size_t)(region_end(a, c) - from));
}

/* Make region c (NULL: the caller's buffer) current, `next` at its start
 * unless given. */
static void arena_enter(alloy_arena_t *a, alloy_arena_chunk_t *c) {
    a->current = c;
    if (c != NULL)
        a->begin = arena_chunk_data(c);
    else if (a->initial != NULL)
        a->begin = a->initial;
    else
        a->begin = arena_empty;
    a->end = ay_hot_checked() ? a->begin : region_end(a, c);
    a->next = a->begin;
}

ALLOY_API void alloy_arena_init(alloy_arena_t *a, void *buf, size_t len,
                                alloy_resource_t *upstream) {
    a->chunks = NULL;
    a->used_before = 0;
    a->initial = len != 0 ? (char *)buf : NULL;
    a->initial_size = a->initial != NULL ? len : 0;
    a->reserved = a->initial_size;
    a->upstream = upstream != NULL ? upstream : alloy_default_resource();
    /* Like monotonic_buffer_resource: the first chunk is larger than the
     * caller's buffer. */
    size_t first = ARENA_MIN_CHUNK;
    while (first <= a->initial_size && first < ARENA_MAX_GROWTH)
        first *= 2;
    a->next_chunk_size = first;
    if (ay_hot_checked() && a->initial != NULL) {
        ay_hot_pool_create(a->initial);
        ay_hot_forbid(a->initial, a->initial_size);
    }
    arena_enter(a, NULL);
}

/* Try the current region; NULL when it has no room.  Overflow-safe. */
static void *arena_try_region(alloy_arena_t *a, size_t size, size_t align) {
    uintptr_t p = (uintptr_t)a->next;
    size_t avail = (size_t)(region_end(a, a->current) - a->next);
    size_t pad = (size_t)(0 - p) & (align - 1);
    if (pad > avail || size > avail - pad)
        return NULL;
    a->next = a->next + pad + size;
    if (ay_hot_checked()) {
        a->end = a->next; /* the next allocation misses into the slow path too */
        ay_hot_pool_alloc(region_anchor(a, a->current), a->next - size, size);
    }
    return a->next - size;
}

/* Leave the current region for chunk c and allocate from it.  The caller
 * has checked that c can hold size at align. */
static void *arena_switch(alloy_arena_t *a, alloy_arena_chunk_t *c, size_t size, size_t align) {
    a->used_before += (size_t)(a->next - a->begin);
    arena_enter(a, c);
    return arena_try_region(a, size, align);
}

/* Can a fresh region of chunk c hold size bytes at align? */
static bool arena_chunk_fits(alloy_arena_chunk_t *c, size_t size, size_t align) {
    uintptr_t p = (uintptr_t)arena_chunk_data(c);
    size_t avail = c->size - ARENA_HEADER;
    size_t pad = (size_t)(0 - p) & (align - 1);
    return pad <= avail && size <= avail - pad;
}

ALLOY_API void *alloy_arena_alloc_slow(alloy_arena_t *a, size_t size, size_t align) {
    if (!ay_hot_is_pow2(align))
        return NULL;
    if (size == 0)
        size = 1;
    void *p = arena_try_region(a, size, align);
    if (p != NULL)
        return p;

    /* A chunk we already own, further along the list. */
    alloy_arena_chunk_t *c = a->current != NULL ? a->current->next : a->chunks;
    for (; c != NULL; c = c->next)
        if (arena_chunk_fits(c, size, align))
            return arena_switch(a, c, size, align);

    /* A new chunk: the geometric size, or enough for this request (header,
     * worst-case padding beyond malloc's 16, the bytes themselves). */
    size_t need, bytes = a->next_chunk_size;
    size_t extra_pad = align > 16 ? align - 16 : 0;
    if (!ay_hot_add(size, extra_pad, &need) || !ay_hot_add(need, ARENA_HEADER, &need))
        return NULL;
    if (need > bytes && !ay_hot_round_up(need, 16, &bytes))
        return NULL;
    c = alloy_resource_allocate(a->upstream, bytes, 16);
    if (c == NULL)
        return NULL;
    c->size = bytes;
    if (ay_hot_checked()) {
        ay_hot_pool_create(c);
        ay_hot_forbid(arena_chunk_data(c), bytes - ARENA_HEADER);
    }
    if (a->current != NULL) {
        c->next = a->current->next;
        a->current->next = c;
    } else {
        c->next = a->chunks;
        a->chunks = c;
    }
    a->reserved += bytes;
    if (a->next_chunk_size < ARENA_MAX_GROWTH)
        a->next_chunk_size *= 2;
    return arena_switch(a, c, size, align);
}

ALLOY_API void alloy_arena_reset(alloy_arena_t *a) {
    alloy_arena_mark_t start = {NULL, a->initial, 0};
    alloy_arena_rewind(a, start);
}

ALLOY_API void alloy_arena_rewind(alloy_arena_t *a, alloy_arena_mark_t m) {
    if (ay_hot_checked()) { /* what came after m is freed */
        if (m.next != NULL)
            region_forget_from(a, m.chunk, m.next);
        for (alloy_arena_chunk_t *c = m.chunk != NULL ? m.chunk->next : a->chunks; c != NULL;
             c = c->next)
            region_forget_from(a, c, arena_chunk_data(c));
    }
    arena_enter(a, m.chunk);
    if (m.next != NULL)
        a->next = m.next;
    if (ay_hot_checked())
        a->end = a->next;
    a->used_before = m.used_before;
}

ALLOY_API void alloy_arena_release(alloy_arena_t *a) {
    alloy_arena_chunk_t *c = a->chunks;
    while (c != NULL) {
        alloy_arena_chunk_t *next = c->next;
        a->reserved -= c->size;
        if (ay_hot_checked()) { /* upstream's memory again */
            ay_hot_pool_destroy(c);
            ay_hot_allow(c, c->size);
        }
        alloy_resource_deallocate(a->upstream, c, c->size, 16);
        c = next;
    }
    a->chunks = NULL;
    alloy_arena_reset(a);
}

ALLOY_API void alloy_arena_destroy(alloy_arena_t *a) {
    alloy_arena_release(a);
    if (ay_hot_checked() && a->initial != NULL) { /* the caller's buffer is theirs again */
        ay_hot_pool_destroy(a->initial);
        ay_hot_allow(a->initial, a->initial_size);
    }
}

ALLOY_API size_t alloy_arena_used(const alloy_arena_t *a) {
    return a->used_before + (size_t)(a->next - a->begin);
}

ALLOY_API size_t alloy_arena_reserved(const alloy_arena_t *a) { return a->reserved; }
