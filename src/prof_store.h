/* SPDX-License-Identifier: MIT */
/* prof_store.h - the heap profiler's store, shared by the sampler (prof.c)
 * and the writers (prof_out.c): stacks, kept once each in a hash table, and
 * one record per live sampled block, all in mmap'ed memory of its own.
 *
 * Everything here is guarded by `lock` (a leaf), except `nested`, a relaxed
 * counter.  Stacks are never freed, so a pointer to one stays valid without
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
} ay_prof_store_t;

extern AY_HIDDEN ay_prof_store_t ay_prof_store;

/* A section of the profiler: allocations the thread makes inside are never
 * sampled (and are counted as nested).  They nest. */
void ay_prof_enter(void);
void ay_prof_leave(void);

/* Write the dump of the given kind ('f' final, 'i' interval, 'm' manual) to
 * <prof_prefix>.<pid>.<seq>.<kind>.heap.  0, or an errno; the first failure
 * is warned about, once. */
int ay_prof_dump_kind(char kind);

#endif
