/* SPDX-License-Identifier: MIT */
/* pool.c - the single-threaded fixed-size pool: set-up, chunk growth, lazy
 * carving, and the checked flavour.
 *
 * Chunk layout (one upstream allocation):
 *
 *   [alloy_pool_chunk_t][bitmap, checked only][pad][slot 0][slot 1]...
 *
 * The slots start at a multiple of slot_align from a base that upstream
 * aligned to slot_align, so every slot is aligned.  Slots of the newest
 * chunk are handed out lazily: [carve, carve_end) are slots never used yet,
 * moved to the free list POOL_CARVE at a time.
 *
 * Invariants:
 *   - every slot is in exactly one of: the free list, [carve, carve_end),
 *     or the caller's hands;
 *   - the free list links only slots of this pool (the checked flavour
 *     refuses any other pointer, so a bad free cannot corrupt it);
 *   - in the checked flavour `free` is NULL (all allocations take the slow
 *     path) and a slot's bit is set exactly when the caller holds it;
 *   - total_slots <= max_slots when max_slots != 0.
 *
 * Memory checkers (checker.h): a pool is a memory pool anchored at its
 * struct, and becomes a checked pool (every call through the library);
 * slots are forbidden until handed out and again once freed, and the links
 * in free slots are read and written through ay_hot_link_get/set.
 */
#include <alloy/pool.h>
#include <alloy/resource.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checker.h"
#include "hot.h"

struct alloy_pool_chunk {
    alloy_pool_chunk_t *next; /* older chunk */
    size_t bytes;             /* size of the upstream allocation */
    char *slots;              /* first slot */
    size_t nslots;            /* slots in this chunk */
    unsigned char *bits;      /* checked flavour: 1 = held by the caller */
};

#define POOL_CARVE 32                         /* slots carved per slow-path visit */
#define POOL_DEFAULT_CHUNK ((size_t)64 << 10) /* bytes of slots, default first chunk */
#define POOL_MAX_GROWTH ((size_t)1 << 20)     /* stop doubling chunks at 1 MiB of slots */

static size_t pool_chunk_align(const alloy_pool_t *pool) {
    return pool->slot_align > 16 ? pool->slot_align : 16;
}

/* Bytes of a chunk of n slots and the offset of its first slot; false on
 * overflow. */
static bool pool_chunk_geometry(const alloy_pool_t *pool, size_t n, size_t *bytes, size_t *offset) {
    size_t head = sizeof(alloy_pool_chunk_t), slot_bytes;
    if (pool->flags & ALLOY_POOL_CHECKED)
        head += n / 8 + 1;
    return ay_hot_round_up(head, pool->slot_align, offset) &&
           ay_hot_mul(n, pool->slot_size, &slot_bytes) && ay_hot_add(*offset, slot_bytes, bytes);
}

/* Take a chunk of pool->chunk_slots slots from upstream and make its slots
 * the carve range.  false (nothing changed) when that is impossible. */
static bool pool_grow(alloy_pool_t *pool) {
    size_t n = pool->chunk_slots, bytes, offset;
    if (pool->max_slots != 0) {
        if (pool->total_slots >= pool->max_slots)
            return false;
        if (n > pool->max_slots - pool->total_slots)
            n = pool->max_slots - pool->total_slots;
    }
    if (!pool_chunk_geometry(pool, n, &bytes, &offset))
        return false;
    char *base = alloy_resource_allocate(pool->upstream, bytes, pool_chunk_align(pool));
    if (base == NULL)
        return false;
    alloy_pool_chunk_t *c = (alloy_pool_chunk_t *)base;
    c->next = pool->chunks;
    c->bytes = bytes;
    c->slots = base + offset;
    c->nslots = n;
    c->bits = NULL;
    if (pool->flags & ALLOY_POOL_CHECKED) {
        c->bits = (unsigned char *)(c + 1);
        memset(c->bits, 0, n / 8 + 1);
    }
    pool->chunks = c;
    pool->total_slots += n;
    if (ay_hot_checked())
        ay_hot_forbid(c->slots, n * pool->slot_size);
    pool->carve = c->slots;
    pool->carve_end = c->slots + n * pool->slot_size;
    size_t cap = POOL_MAX_GROWTH / pool->slot_size;
    if (pool->chunk_slots < cap)
        pool->chunk_slots = pool->chunk_slots * 2 < cap ? pool->chunk_slots * 2 : cap;
    return true;
}

ALLOY_API int alloy_pool_init(alloy_pool_t *pool, const alloy_pool_config_t *cfg) {
    memset(pool, 0, sizeof *pool);
    size_t align = cfg->slot_align != 0 ? cfg->slot_align : AY_HOT_MALLOC_ALIGN;
    if (cfg->slot_size == 0 || !ay_hot_is_pow2(align))
        return EINVAL;
    if (align < sizeof(void *))
        align = sizeof(void *);
    size_t size = cfg->slot_size < sizeof(void *) ? sizeof(void *) : cfg->slot_size;
    if (!ay_hot_round_up(size, align, &size))
        return EINVAL;
    pool->slot_size = size;
    pool->slot_align = align;
    pool->flags = cfg->flags;
    if (ay_hot_checked()) { /* every call through the library, where the checker is told */
        pool->flags |= ALLOY_POOL_CHECKED;
        ay_hot_pool_create(pool);
    }
    pool->max_slots = cfg->max_slots;
    pool->upstream = cfg->upstream != NULL ? cfg->upstream : alloy_default_resource();
    pool->carve = pool->carve_end = NULL;
    if (cfg->max_slots != 0)
        pool->chunk_slots = cfg->max_slots;
    else if (cfg->chunk_slots != 0)
        pool->chunk_slots = cfg->chunk_slots;
    else
        pool->chunk_slots = size >= POOL_DEFAULT_CHUNK ? 1 : POOL_DEFAULT_CHUNK / size;
    size_t bytes, offset;
    if (!pool_chunk_geometry(pool, pool->chunk_slots, &bytes, &offset))
        return EINVAL;
    if (cfg->max_slots != 0 && !pool_grow(pool)) /* fixed: all memory now */
        return ENOMEM;
    return 0;
}

ALLOY_API void alloy_pool_destroy(alloy_pool_t *pool) {
    alloy_pool_chunk_t *c = pool->chunks;
    if (ay_hot_checked())
        ay_hot_pool_destroy(pool);
    while (c != NULL) {
        alloy_pool_chunk_t *older = c->next;
        if (ay_hot_checked())
            ay_hot_allow(c, c->bytes); /* upstream's memory again */
        alloy_resource_deallocate(pool->upstream, c, c->bytes, pool_chunk_align(pool));
        c = older;
    }
    pool->chunks = NULL;
    pool->free = pool->checked_free = NULL;
    pool->carve = pool->carve_end = NULL;
    pool->total_slots = pool->live = 0;
}

/* Hand out the next never-used slot, after moving up to POOL_CARVE-1 more
 * onto the free list.  The carve range must not be empty. */
static void *pool_carve(alloy_pool_t *pool, size_t batch) {
    size_t left = (size_t)(pool->carve_end - pool->carve) / pool->slot_size;
    size_t n = left < batch ? left : batch;
    char *first = pool->carve;
    pool->carve += n * pool->slot_size;
    /* Link slots 1..n-1 in address order in front of the free list. */
    void *head = pool->free;
    for (size_t i = n; i-- > 1;) {
        void *slot = first + i * pool->slot_size;
        *(void **)slot = head;
        head = slot;
    }
    pool->free = head;
    return first;
}

static alloy_pool_chunk_t *pool_find_chunk(const alloy_pool_t *pool, const void *p) {
    uintptr_t u = (uintptr_t)p;
    for (alloy_pool_chunk_t *c = pool->chunks; c != NULL; c = c->next) {
        uintptr_t lo = (uintptr_t)c->slots, hi = lo + c->nslots * pool->slot_size;
        if (u >= lo && u < hi)
            return (u - lo) % pool->slot_size == 0 ? c : NULL;
    }
    return NULL;
}

ALLOY_API int alloy_pool_owns(const alloy_pool_t *pool, const void *p) {
    return pool_find_chunk(pool, p) != NULL;
}

static void *pool_alloc_checked(alloy_pool_t *pool) {
    void *p = pool->checked_free;
    if (p != NULL) {
        pool->checked_free = ay_hot_link_get(p);
    } else {
        if (pool->carve == pool->carve_end && !pool_grow(pool))
            return NULL;
        p = pool->carve;
        pool->carve += pool->slot_size;
    }
    alloy_pool_chunk_t *c = pool_find_chunk(pool, p);
    size_t i = (size_t)((char *)p - c->slots) / pool->slot_size;
    c->bits[i / 8] |= (unsigned char)(1u << (i % 8));
    pool->live++;
    ay_hot_pool_alloc(pool, p, pool->slot_size);
    return p;
}

ALLOY_API void *alloy_pool_alloc_slow(alloy_pool_t *pool) {
    if (ALLOY_UNLIKELY(pool->flags & ALLOY_POOL_CHECKED))
        return pool_alloc_checked(pool);
    if (pool->carve == pool->carve_end && !pool_grow(pool))
        return NULL;
    return pool_carve(pool, POOL_CARVE);
}

static void pool_report(alloy_pool_t *pool, const void *p, const char *what) {
    pool->errors++;
    fprintf(stderr, "alloy_pool: %s (%p)\n", what, (void *)p);
    if (pool->flags & ALLOY_POOL_ABORT)
        abort();
}

ALLOY_API void alloy_pool_free_checked(alloy_pool_t *pool, void *p) {
    if (!(pool->flags & ALLOY_POOL_CHECKED)) { /* called directly on a fast pool */
        *(void **)p = pool->free;
        pool->free = p;
        return;
    }
    if (p == NULL) {
        pool_report(pool, p, "free of NULL");
        return;
    }
    alloy_pool_chunk_t *c = pool_find_chunk(pool, p);
    /* Slots of the newest chunk at or past `carve` were never handed out. */
    if (c == NULL || (c == pool->chunks && (char *)p >= pool->carve)) {
        pool_report(pool, p, "free of a pointer that is not a slot of this pool");
        return;
    }
    size_t i = (size_t)((char *)p - c->slots) / pool->slot_size;
    unsigned char bit = (unsigned char)(1u << (i % 8));
    if (!(c->bits[i / 8] & bit)) {
        pool_report(pool, p, "double free");
        return;
    }
    c->bits[i / 8] &= (unsigned char)~bit;
    ay_hot_pool_free(pool, p, pool->slot_size);
    ay_hot_link_set(p, pool->checked_free);
    pool->checked_free = p;
    pool->live--;
}

ALLOY_API unsigned alloy_pool_errors(const alloy_pool_t *pool) { return pool->errors; }
