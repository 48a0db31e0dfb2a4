/* SPDX-License-Identifier: MIT */
/* central.h - the central cache: one per size class and heap, shared by
 * the threads bound to that heap.
 *
 * It owns the SMALL spans of its class.  Spans with at least one free object
 * sit on `nonempty`; a span whose objects are all handed out leaves the list
 * and comes back on its first returned object.  Objects inside a span are an
 * intrusive free list of returned objects, then a bump region never used yet.
 *
 * A fetch of `want` objects takes from nonempty spans in turn; if that is not
 * enough it takes ONE new span of P(S, want) pages from the page heap, takes
 * what it can from it, and stops: a fetch that returns fewer than `want` is
 * counted as short (seed 002).  Returned objects go back to their own span,
 * in the central cache that owns the span; a span with no objects out goes
 * back to the page heap.
 *
 * A central cache knows only its page heap and the pagemap bin its spans are
 * registered under (class + 1, or 0 for an uncached heap, whose frees must
 * always reach the slow path).  It never calls the page heap, and so never
 * waits for a system call, with its lock held: the lock is dropped to take a
 * new span, and spans to give back are collected and given after it.
 *
 * Lock order: one central lock at a time, never held while calling out.
 */
#ifndef ALLOY_CENTRAL_H
#define ALLOY_CENTRAL_H
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "internal.h"
#include "pageheap.h"
#include "secure.h"
#include "span.h"

typedef struct ay_central {
    pthread_mutex_t lock;
    ay_span_t nonempty;   /* list head: spans with free objects */
    ay_pageheap_t *pages; /* where spans come from and go back to */
    uint32_t cls;
    uint32_t size; /* object size */
    uint8_t bin;   /* its thread-cache bin: cls + 1, or 0 (uncached) */
    uint32_t list; /* its spans' pagemap entry: slot * AY_SLOT_BYTES + bin * 16, or 0 */
    /* counters, written under the lock, read relaxed by stats */
    uint64_t fetches;       /* fetch calls: thread-cache misses and uncached allocations */
    uint64_t short_fetches; /* fetches that came back short */
    uint64_t objects_out;   /* objects handed to thread caches */
    uint64_t objects_in;    /* objects returned */
    uint64_t spans_allocated;
    uint64_t spans_freed;
    uint64_t free_objects; /* free objects held, bump regions included */
    uint64_t span_pages;   /* pages of the spans this class owns */
    uint64_t contended;    /* lock acquisitions that had to wait */
    /* The remote queue: objects of this class and heap that threads of other
     * heaps freed, sent home in batches (tcache.h, "slots").  A stack of
     * chains pushed with a compare-and-swap, and taken whole with an
     * exchange; no lock.  One word holds the first object's address and, in
     * the bits above a user-space address, how many objects are on it, so
     * that a take knows the count without walking the objects (which were
     * last written on another CPU).  On a line of its own: the pushers are
     * other heaps' threads. */
    _Alignas(AY_CACHELINE) uintptr_t remote; /* first object | count << AY_REMOTE_SHIFT */
    uint64_t remote_in;                      /* objects pushed (atomic add, by the senders) */
    uint64_t remote_out;                     /* objects taken off (atomic add, by this heap) */
    uint64_t remote_seen_ms; /* when a periodic look first found the queue not empty since
                                it was last taken (0: not since); relaxed */
} __attribute__((aligned(AY_CACHELINE))) ay_central_t;

/* A run of never-used objects of one span, in address order, not linked:
 * the objects at next, next + size, ... up to end.  Empty when next == end. */
typedef struct ay_run {
    uintptr_t next;
    uintptr_t end;
} ay_run_t;

/* slot: the automatic heap's slot (its id), whose frees enter thread caches
 * (their pages carry the slot and the class's bin in the pagemap); -1 for
 * an uncached heap (explicit heaps: every free takes the slow path).  The
 * record must be zero before (heap.h sets a central cache up on its first
 * use); `size` is written last, with a release store: a central cache whose
 * size reads 0 was never set up, holds nothing, and its lock and remote
 * queue read as unlocked and empty. */
void ay_central_init(ay_central_t *c, ay_pageheap_t *pages, unsigned cls, int slot);

/* Fetch up to `want` objects.  They are, in the order the central cache
 * took them, a NULL-terminated intrusive list in *head (maybe empty), then,
 * when run is not NULL, the never-used objects of *run (maybe empty): those
 * are not written at all, so their pages are touched only when the caller
 * carves them (lazy carving).  With run NULL, every object is on the list.
 * Returns how many in all (0 only when out of memory). */
uint32_t ay_central_fetch(ay_central_t *c, uint32_t want, void **head, ay_run_t *run);

/* Return `n` objects of class cls linked from head (exactly n are taken).
 * Each goes back to its own span, in the central cache that owns the span,
 * whichever heap the caller is bound to. */
void ay_central_release(unsigned cls, void *head, uint32_t n);

/* Give back the objects of run (of class cls), which a fetch handed out:
 * when they are still the end of their span's handed-out bump region, the
 * region just takes them back, without a write to them. */
void ay_central_release_run(unsigned cls, ay_run_t *run);

/* ---- the remote queue ---- */

#define AY_REMOTE_SHIFT AY_USER_ADDR_BITS /* above every user-space address (secure.h) */
#define AY_REMOTE_MAX (((uint64_t)1 << (64 - AY_REMOTE_SHIFT)) - 1)

/* Check object o of a batch on its way to c's remote queue, as an object
 * given back to a central cache is checked (central.c): it must be the start
 * of an object of a small span of c.  Aborts with a message otherwise. */
void ay_central_remote_check(const ay_central_t *c, const void *o);
/* Push the n objects linked from head to tail (checked; tail's link is
 * written here) onto c's remote queue: no lock, one compare-and-swap.  (A
 * queue that would hold more than AY_REMOTE_MAX objects goes into its
 * spans, with the batch, under c's lock: a heap whose threads took nothing
 * for that long.) */
void ay_central_remote_push(ay_central_t *c, void *head, void *tail, uint32_t n);
/* Take c's whole remote queue, without reading its objects: *head gets them
 * as a NULL-terminated list; returns how many (0: it was empty). */
uint32_t ay_central_remote_take(ay_central_t *c, void **head);
/* How many objects c's remote queue holds now (one relaxed load). */
AY_INLINE uint32_t ay_central_remote_peek(const ay_central_t *c) {
    return (uint32_t)(__atomic_load_n(&c->remote, __ATOMIC_RELAXED) >> AY_REMOTE_SHIFT);
}
/* Objects waiting on c's remote queue (a relaxed estimate). */
AY_INLINE uint64_t ay_central_remote_count(const ay_central_t *c) {
    uint64_t in = AY_LOAD(&c->remote_in), out = AY_LOAD(&c->remote_out);
    return in > out ? in - out : 0;
}
/* Move c's remote queue into its spans (under c's lock). */
void ay_central_remote_drain(ay_central_t *c);
/* A periodic look at c's remote queue, by a thread of its heap, at now_ms
 * (the coarse clock): a queue that has waited AY_REMOTE_STALE_MS since a
 * look first saw it, with no take meanwhile, is drained into its spans
 * (its heap's threads stopped allocating the class). */
#define AY_REMOTE_STALE_MS 100
void ay_central_remote_age(ay_central_t *c, uint64_t now_ms);

/* Debug check: is p, an object of SMALL span s, free (in the span's free
 * list or bump region)? */
bool ay_central_holds(ay_span_t *s, const void *p);

/* Fork support. */
void ay_central_lock(ay_central_t *c);
void ay_central_unlock(ay_central_t *c);
void ay_central_reset_lock(ay_central_t *c);

#endif
