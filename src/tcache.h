/* tcache.h - the thread cache: one intrusive free list per size class, and
 * the inline fast paths of malloc and free.
 *
 * Each fast path has exactly one unlikely branch.  Every reason to take the
 * slow path is folded into it:
 *   - a thread that has no cache yet points at ay_tcache_empty, whose lists
 *     are empty and whose limits are 0, so its first malloc and free miss;
 *   - requests above 256 KiB, and pages alloy does not own, map to bin 0,
 *     which is always empty with limit 0;
 *   - a list that has reached its return threshold misses on free.
 * No lock, no atomic read-modify-write: the cache belongs to its thread.
 *
 * Invariants: bins[b].len is the length of the NULL-terminated list at
 * bins[b].head; len <= limit except transiently inside the slow path.
 */
#ifndef ALLOY_TCACHE_H
#define ALLOY_TCACHE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal.h"
#include "pagemap.h"

struct ay_heap;

typedef struct ay_bin {
    void *head;       /* free objects, linked through their first word */
    uint32_t len;     /* objects on the list */
    uint32_t limit;   /* a free that finds len >= limit takes the slow path */
} ay_bin_t;

typedef struct ay_tcache {
    ay_bin_t bins[AY_NUM_BINS];    /* hot: all the fast paths touch */
    /* cold: slow paths only */
    uint32_t batch[AY_NUM_BINS];   /* current batch n, per bin */
    uint32_t slow_events;          /* slow-path calls since the last size check */
    bool cache_on;                 /* lists in use (caches on, no fills) */
    struct ay_heap *heap;          /* where misses go */
    struct ay_tcache *prev, *next; /* registry of live caches */
} ay_tcache_t;

extern __thread ay_tcache_t *ay_tc __attribute__((tls_model("initial-exec")));
extern AY_HIDDEN ay_tcache_t ay_tcache_empty;

/* size -> bin lookup tables, filled at initialisation (all zero before, which
 * sends every request to the slow path, which initialises). */
extern AY_HIDDEN uint8_t ay_bin_small[(1024 >> 3) + 1];  /* index (size + 7) >> 3 */
extern AY_HIDDEN uint8_t ay_bin_mid[(65536 >> 7) + 1];   /* index (size + 127) >> 7 */
extern AY_HIDDEN uint32_t ay_bin_size[AY_NUM_BINS];      /* object size of a bin; 0 for bin 0 */

AY_INLINE unsigned ay_size_bin(size_t size) {
    if (AY_LIKELY(size <= 1024))
        return ay_bin_small[(size + 7) >> 3];
    if (size <= 65536)
        return ay_bin_mid[(size + 127) >> 7];
    if (size <= AY_MAX_SMALL_SIZE)
        return AY_NUM_CLASSES - 24 + (unsigned)((size - 65536 + 8191) >> 13);
    return 0;
}

void *ay_malloc_slow(size_t size);
void ay_free_slow(void *p);

AY_INLINE void *ay_malloc_fast(size_t size) {
    ay_bin_t *bin = &ay_tc->bins[ay_size_bin(size)];
    void *p = bin->head;
    if (AY_UNLIKELY(!p))
        return ay_malloc_slow(size);
    bin->head = *(void **)p;
    bin->len--;
    return p;
}

AY_INLINE void ay_free_fast(void *p) {
    uintptr_t a = (uintptr_t)p;
    unsigned b = AY_LOAD(&ay_pagemap_leaf(a)->bin[ay_pagemap_index(a)]);
    ay_bin_t *bin = &ay_tc->bins[b];
    if (AY_UNLIKELY(bin->len >= bin->limit))
        return ay_free_slow(p);
    *(void **)p = bin->head;
    bin->head = p;
    bin->len++;
}

/* ---- slow-path services (tcache.c) ---- */

/* The calling thread's record, created on first use (which binds the thread
 * to a heap); NULL while it is being set up or after the thread's exit
 * handler ran.  Its lists are in use only when tc->cache_on. */
ay_tcache_t *ay_tcache_get(void);
/* Point the fast paths at tc's lists (fast) or at the empty cache. */
void ay_tcache_route(ay_tcache_t *tc, int fast);
/* Bind tc to automatic heap h: flush, and move the thread count. */
void ay_tcache_rebind(ay_tcache_t *tc, struct ay_heap *h);
/* Refill bin b from the central cache and return one object, or NULL. */
void *ay_tcache_refill(ay_tcache_t *tc, unsigned b);
/* Push p on bin b, then give a batch back if the list reached its threshold. */
void ay_tcache_push_overflow(ay_tcache_t *tc, unsigned b, void *p);
/* Return every cached object to the central caches. */
void ay_tcache_flush(ay_tcache_t *tc);
/* Bytes cached in tc (racy read when tc is another thread's). */
size_t ay_tcache_bytes(const ay_tcache_t *tc, unsigned b);

/* The registry of live caches: for stats and fork. */
void ay_tcache_registry_lock(void);
void ay_tcache_registry_unlock(void);
ay_tcache_t *ay_tcache_registry_first(void);
/* In a fork child: forget every cache but the caller's. */
void ay_tcache_registry_after_fork_child(void);
/* Set up the size tables and the thread-exit key (once, from ay_init). */
void ay_tcache_global_init(void);
/* Is p on the calling thread's list for bin b?  (debug double-free check) */
int ay_tcache_contains(unsigned b, const void *p);

#endif
