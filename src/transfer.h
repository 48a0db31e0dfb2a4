/* SPDX-License-Identifier: MIT */
/* transfer.h - the cross-thread path: how a block freed by one thread gets
 * back to a thread that allocates, through the transfer caches of the
 * central tier (docs/ARCHITECTURE.md, "Cross-thread frees").
 *
 * free pushes every small block onto the freeing thread's own list,
 * whichever heap allocated it (tcache.h), so that it is handed out again
 * there while its line is in that core's cache.  A list that overflows gives
 * a batch back here (ay_transfer_give): the batch is cut off the list by one
 * walk that checks every block, and inserted whole into the transfer cache
 * of its class and NUMA node, shared by the automatic heaps of the node: a
 * ring buffer of whole batches (a list's first object and its count), bounded in
 * objects' bytes (`transfer_bytes`) and in batches (AY_TRANSFER_SLOTS).  A
 * thread cache that misses takes the batch inserted last (ay_transfer_take),
 * in O(1), without reading an object, before it asks its heap's central
 * cache for objects of the spans; the batch may hold blocks of any heap of
 * the node, which is why no batch is ever split.  So a block reaches its
 * span only when its transfer cache overflows (the oldest batches make
 * room: ay_central_release_checked releases each object to the central cache that owns
 * its span; a transfer cache that no thread took a batch from in the last
 * AY_TRANSFER_IDLE_MS holds AY_TRANSFER_IDLE_BATCHES at most (unless
 * decay_ms is -1, which gives nothing back on the clock), so that a
 * program that frees much of a class it then stops asking for releases those
 * blocks to their spans, and their emptied spans to the page heap, at once)
 * or when its batches sit unused: every decay round
 * (ay_transfer_decay: from the decay round that a slow-path event of any
 * thread runs when one is due (heap.h), at most every AY_DECAY_ROUND_MS,
 * from the background thread and from alloy_purge)
 * releases the oldest batches that no take reached since the round
 * before (its low-water mark), so that a class a program stopped
 * using goes back to its spans, and they to the page heap, within two
 * rounds.  With NUMA in effect, a batch holding a block of another node
 * goes to its spans instead, so that a node's transfer caches hand out only
 * the node's memory.
 *
 * Bad input: the walk checks every link (a user-space address), the list's
 * shape (Brent's cycle detection: a block freed twice on the same list),
 * and each block's place (a small block of the class of an automatic heap,
 * at an object's start: an interior pointer the fast path's align mask let
 * through is caught here, before any other thread can be handed it);
 * malloc checks each link again as it hands the objects out, so a block
 * freed by two threads is caught when the second of its lists reaches it.
 *
 * Invariants (under a transfer cache's lock): its batches are slot[(first + i) %
 * AY_TRANSFER_SLOTS] for i < count, oldest first, each a NULL-terminated
 * list of n checked blocks of its class; objects is the sum of their counts;
 * low <= count.  The lock is a leaf: nothing is called under it, no other
 * lock is taken, and batches to release to their spans are released after
 * it.  A transfer cache that was never inserted into is all zeros (an
 * unlocked mutex, no batch) and is not read by the decay rounds, the stats
 * or fork (its set's `used` bit, set under the set's use_lock before its
 * first insert, so that fork, which holds every use_lock, locks every one that
 * can hold anything).
 */
#ifndef ALLOY_TRANSFER_H
#define ALLOY_TRANSFER_H
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "internal.h"
#include "policy.h"
#include "span.h"

/* Owners a batch records at most: a batch with blocks of more heaps goes
 * to its spans instead. */
#define AY_BATCH_OWNERS 4
/* Runs a batch records at most: a run is consecutive blocks of one span,
 * which the walk looked up and checked once, so that they go back to it
 * with no second lookup or check (ay_central_release_checked); the blocks
 * after the last run recorded are looked up and checked again when they go
 * back. */
#define AY_BATCH_RUNS 4

struct ay_central;
/* The heaps a batch's blocks belong to: the central caches that own their
 * spans, and how many of its blocks each owns. */
typedef struct ay_batch_owners {
    uint32_t n;                            /* owners recorded */
    uint32_t count[AY_BATCH_OWNERS];       /* blocks of each */
    struct ay_central *c[AY_BATCH_OWNERS]; /* the owners */
} ay_batch_owners_t;

typedef struct ay_batch {
    void *head;    /* the first object; the list ends with NULL */
    uint32_t n;    /* objects in it */
    uint32_t nrun; /* runs recorded */
    ay_batch_owners_t own;
    /* run k: the blocks from index run_end[k - 1] (0 for k = 0) to
     * run_end[k], all in span run_span[k], checked for the batch's class */
    const ay_span_t *run_span[AY_BATCH_RUNS];
    uint32_t run_end[AY_BATCH_RUNS];
} ay_batch_t;

typedef struct ay_transfer {
    pthread_mutex_t lock;
    uint32_t first;     /* the oldest batch's slot */
    uint32_t count;     /* batches held */
    uint32_t low;       /* the fewest batches held since the last decay round */
    uint64_t take_ms;   /* when a take last locked it (ms) */
    uint64_t objects;   /* objects held (relaxed reads by stats) */
    uint64_t inserted;  /* objects thread caches gave it */
    uint64_t taken;     /* objects thread caches took from it */
    uint64_t takes;     /* batches taken: misses it served */
    uint64_t released;  /* objects it released to their spans (overflow, idle, decay) */
    uint64_t contended; /* lock acquisitions that had to wait */
    ay_batch_t slot[AY_TRANSFER_SLOTS];
} __attribute__((aligned(AY_CACHELINE))) ay_transfer_t;

/* A node's transfer caches, one per class, and which of them were used. */
typedef struct ay_transfer_set {
    pthread_mutex_t use_lock;                  /* held while a bit of `used` is set */
    uint64_t used[(AY_NUM_CLASSES + 63) / 64]; /* bit c: c[c] may hold batches */
    ay_transfer_t c[AY_NUM_CLASSES];
} ay_transfer_set_t;

/* The rules (what an insert evicts, take, the idle rule, the decay rounds)
 * are pure functions of policy.h (ay_policy_transfer_*), which the
 * simulator's model calls too.  The idle rule (AY_TRANSFER_IDLE_MS,
 * AY_TRANSFER_IDLE_BATCHES): the blocks of a class freed in bulk and not
 * asked for again go to their spans, and their emptied spans to the page
 * heap, without waiting for the decay rounds, while a class that threads
 * take from keeps every slot: each take refreshes take_ms, so the rule
 * does not apply to it (what it saves: docs/BENCHMARKS.md). */

/* The transfer caches of NUMA node index `node` (0 without NUMA), mapped on
 * first use (node 0's are static).  NULL only when their memory could not
 * be mapped: a thread then works without them. */
ay_transfer_set_t *ay_transfer_set(unsigned node);

/* Cut the first n objects off the list of class cls at head and give them
 * to set (the transfer caches of the caller's node; NULL, or
 * transfer_bytes:0: straight to their spans), node being its node index.
 * Every object on the way is checked (above); aborts with a message on a
 * bad one.  Returns the rest of the list: the object after the n-th, or
 * NULL. */
void *ay_transfer_give(ay_transfer_set_t *set, unsigned node, unsigned cls, void *head, uint32_t n);

/* Take the batch of class cls inserted last into set: *head gets its list;
 * returns its count (0: there was none). */
uint32_t ay_transfer_take(ay_transfer_set_t *set, unsigned cls, void **head);

/* Does any transfer cache hold a batch?  (A racy read.) */
bool ay_transfer_hold_any(void);

/* One decay round over every used transfer cache of every node: each gives
 * back to its spans the batches no take reached since the round before
 * (every batch, when `all`).  ay_heaps_decay_tick (heap.h) runs the rounds
 * that are not `all`, one every AY_DECAY_ROUND_MS at most, and none under
 * decay_ms:-1. */
void ay_transfer_decay(bool all);

/* Stats: the counters of class cls's transfer cache of node `node` (zero
 * for one never used); a relaxed snapshot. */
typedef struct ay_transfer_counts {
    uint64_t objects, inserted, taken, takes, released, contended;
} ay_transfer_counts_t;
void ay_transfer_read(unsigned node, unsigned cls, ay_transfer_counts_t *out);

/* Debug check: is p in a batch of node's transfer cache of class cls?
 * (Walks every batch, under the lock.) */
bool ay_transfer_holds(unsigned node, unsigned cls, const void *p);

/* Fork support: every used transfer cache's lock (leaves: taken after every other
 * allocator lock), and in the child every one made anew. */
void ay_transfer_lock_all(void);
void ay_transfer_unlock_all(void);
void ay_transfer_after_fork_child(void);

#endif
