/* SPDX-License-Identifier: MIT */
/* prof_store.h - the heap profiler's store, which the sampler (prof.h) fills
 * and the writers (prof_out.h) read: stacks, kept once each in a hash table,
 * and one record per live sampled block, all in mmap'ed memory of its own;
 * the settings the sampler reads (enabled, active, the sample mean), which
 * alloy_ctl's prof.* names change; and the busy sections, inside which
 * allocations are never sampled.
 *
 * Everything here is guarded by `lock` (a leaf), except `enabled` (set once,
 * at initialisation), the relaxed atomics `active`, `sample_mean` and
 * `nested`, and `nstash`, which is written under the lock but may be read
 * without it.  Stacks are never freed, so a pointer to one stays valid without
 * the lock; their counts change only under it.  Estimates are kept in fixed
 * point (AY_PROF_FIX units per allocation), so that adding a record and
 * taking it away again leaves exactly what was there.
 *
 * Bounds: the stacks take at most AY_PROF_STACK_STORE bytes; a sample whose
 * stack finds the store full is counted under `full`, a stack of depth 0
 * ("stack store full").  Records are one per live sample, and each live
 * sample holds at least a page of the heap, so they stay below 2% of it even
 * at prof_sample:1.
 */
#ifndef ALLOY_PROF_STORE_H
#define ALLOY_PROF_STORE_H
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <stdbool.h>

#include "internal.h"
#include "span.h"

#define AY_PROF_FIX 256                        /* fixed-point units of an estimated count */
#define AY_PROF_BUCKETS 65536                  /* hash buckets of the stack table */
#define AY_PROF_CHUNK ((size_t)256 << 10)      /* store memory comes in chunks of this */
#define AY_PROF_STACK_STORE ((size_t)64 << 20) /* at most this much for stacks */
#define AY_PROF_STASH 64                       /* one-page spans kept for samples (256 KiB) */

typedef struct ay_prof_stack {
    struct ay_prof_stack *chain; /* hash bucket chain */
    struct ay_prof_stack *all;   /* every stack, newest first */
    uint64_t hash;
    uint64_t live_n, live_bytes;         /* live samples, their requested bytes */
    uint64_t live_est_n, live_est_bytes; /* what they stand for (n in AY_PROF_FIX units) */
    uint64_t alloc_n, alloc_bytes;       /* every sample since start-up (or prof.reset) */
    uint64_t alloc_est_n, alloc_est_bytes;
    uint32_t depth;
    uintptr_t pcs[]; /* return addresses, innermost first */
} ay_prof_stack_t;

typedef struct ay_prof_rec {
    ay_prof_stack_t *stack;
    const void *heap;                /* the heap the block came from */
    struct ay_prof_rec *prev, *next; /* the live list (next: also the free list) */
    uint64_t size, est_n, est_bytes;
} ay_prof_rec_t;

typedef struct ay_prof_store {
    pthread_mutex_t lock;
    ay_prof_stack_t **buckets;   /* AY_PROF_BUCKETS chains, mapped on first use */
    ay_prof_stack_t *stacks;     /* every stack, through `all` */
    ay_prof_stack_t full;        /* samples whose stack did not fit the store */
    ay_prof_rec_t live;          /* list head of live records */
    ay_prof_rec_t *rec_free;     /* records to reuse */
    char *arena_cur, *arena_end; /* the chunk being carved */
    size_t nstacks, stack_bytes, store_bytes;
    uint64_t samples, live_count, lost, nested;
    uint64_t est_allocated, next_interval; /* estimated bytes allocated; next interval dump */
    uint64_t dump_seq;                     /* numbers the dump files */
    struct ay_span *stash[AY_PROF_STASH];  /* freed one-page sample spans, kept for the next */
    unsigned nstash;
    bool enabled;         /* prof:true (or prof_leak:true) at start-up; never changes */
    bool active;          /* sampling (prof_active, prof.active); relaxed */
    uint64_t sample_mean; /* prof_sample, prof.sample; relaxed */
} ay_prof_store_t;

extern AY_HIDDEN ay_prof_store_t ay_prof_store;

/* The settings, from ALLOY_CONF (at initialisation, without allocating). */
void ay_prof_store_init(bool enabled, bool active, uint64_t sample_mean, uint64_t interval);

/* A thread's busy sections: while busy > 0, the allocations it makes are
 * never sampled (and are counted as nested); the countdown waits in
 * saved_left. */
typedef struct ay_prof_busy {
    int64_t saved_left; /* the countdown while busy */
    uint8_t busy;       /* nesting depth */
} ay_prof_busy_t;
extern __thread ay_prof_busy_t ay_prof_busy __attribute__((tls_model("initial-exec")));

/* A section of the profiler: allocations the thread makes inside are never
 * sampled (and are counted as nested).  They nest. */
void ay_prof_enter(void);
void ay_prof_leave(void);

/* A live record of a sample of `size` bytes (weights est_n, est_bytes) with
 * the stack pcs[0..n), in heap `heap`; NULL (counted as lost) when the store
 * cannot grow.  The caller holds the lock. */
ay_prof_rec_t *ay_prof_store_add(const uintptr_t *pcs, unsigned n, const void *heap, uint64_t size,
                                 uint64_t est_n, uint64_t est_bytes);
/* Drop live record r (its block is freed).  The caller holds the lock. */
void ay_prof_store_unlink(ay_prof_rec_t *r);
/* Heap `heap` is destroyed with its blocks: drop their records. */
void ay_prof_forget_heap(const void *heap);

/* Fork support: the store's lock is a leaf, taken after every other
 * allocator lock but the guarded pages' (docs/ARCHITECTURE.md). */
void ay_prof_fork_prepare(void);
void ay_prof_fork_parent(void);
void ay_prof_fork_child(void);

/* ---- control (alloy_ctl's prof.* names) ---- */

typedef struct ay_prof_counts {
    uint64_t samples;     /* allocations sampled since start-up */
    uint64_t live;        /* sampled blocks not yet freed */
    uint64_t stacks;      /* distinct stacks kept */
    uint64_t store_bytes; /* bytes mapped for the store (stacks, records, table) */
    uint64_t nested;      /* allocations made while the profiler ran (never sampled) */
    uint64_t lost;        /* samples not recorded: the store could not grow */
} ay_prof_counts_t;

/* prof:true at start-up. */
AY_INLINE bool ay_prof_enabled(void) { return ay_prof_store.enabled; }
bool ay_prof_is_active(void);
void ay_prof_set_active(bool on);
uint64_t ay_prof_sample_mean(void);
/* 0, or EINVAL for 0. */
int ay_prof_set_sample_mean(uint64_t mean);
/* Forget the cumulative counts of every stack; the live set stays. */
void ay_prof_reset(void);
void ay_prof_read_counts(ay_prof_counts_t *c);

#endif
