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
 * A central cache holds its page heap and the pagemap entry its spans are
 * registered under (its bin's offset, class + 1, or 0 for an uncached heap,
 * whose frees must always reach the slow path).  A release takes each
 * object to the central cache that owns its span (span.h, `owner`),
 * whichever heap that is: thread caches hold blocks of any heap, and
 * transfer caches (transfer.h) blocks of every heap of their node.  It
 * never calls the page heap, and so never
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

#include "error.h"
#include "internal.h"
#include "pageheap.h"
#include "policy.h"
#include "secure.h"
#include "span.h"

typedef struct ay_central {
    pthread_mutex_t lock;
    ay_span_t nonempty;   /* list head: spans with free objects */
    ay_pageheap_t *pages; /* where spans come from and go back to */
    uint32_t cls;
    uint32_t size; /* object size */
    uint8_t bin;   /* its thread-cache bin: cls + 1, or 0 (uncached) */
    uint16_t list; /* its spans' pagemap entry: bin * AY_BIN_BYTES */
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
    /* objects of its spans now in a transfer cache (transfer.h, which adds
     * and subtracts them, atomically, a batch at a time): they are out of
     * the spans but free, central bytes of this heap; on a line of its own,
     * as other heaps' threads write it */
    _Alignas(AY_CACHELINE) uint64_t lent;
} __attribute__((aligned(AY_CACHELINE))) ay_central_t;

/* A run of never-used objects of one span, in address order, not linked:
 * the objects at next, next + size, ... up to end.  Empty when next == end. */
typedef struct ay_run {
    uintptr_t next;
    uintptr_t end;
} ay_run_t;

/* cached: an automatic heap, whose frees enter thread caches (their pages
 * carry the class's bin in the pagemap); false for an uncached heap
 * (explicit heaps: every free takes the slow path).  The record must be zero
 * before (heap.h sets a central cache up on its first use); `size` is
 * written last, with a release store: a central cache whose size reads 0 was
 * never set up, holds nothing, and its lock reads as unlocked. */
void ay_central_init(ay_central_t *c, ay_pageheap_t *pages, unsigned cls, bool cached);

/* Fetch up to `want` objects.  They are, in the order the central cache
 * took them, a NULL-terminated intrusive list in *head (maybe empty), then,
 * when run is not NULL, the never-used objects of *run (maybe empty): those
 * are not written at all, so their pages are touched only when the caller
 * carves them (lazy carving).  With run NULL, every object is on the list.
 * Returns how many in all (0 only when out of memory). */
uint32_t ay_central_fetch(ay_central_t *c, uint32_t want, void **head, ay_run_t *run);

/* Return `n` objects of class cls linked from head (exactly n are taken).
 * Each goes back to its own span, in the central cache that owns the span,
 * whichever heap the caller is bound to.  Each is looked up and checked
 * (ay_central_block_span, ay_central_check_offset) on the way. */
void ay_central_release(unsigned cls, void *head, uint32_t n);

/* As ay_central_release, for a list whose first blocks the caller has
 * looked up and checked already, in nrun runs: run k is the blocks from
 * index run_end[k - 1] (0 for the first) to run_end[k], all of span
 * run_span[k] (ay_central_block_span's, checked for class cls) and at an
 * object's start (ay_central_check_offset).  They go to their spans with no
 * lookup and no check; the blocks after the last run are looked up and
 * checked as ay_central_release does. */
void ay_central_release_checked(unsigned cls, void *head, uint32_t n,
                                const ay_span_t *const *run_span, const uint32_t *run_end,
                                unsigned nrun);

/* The checks of a block on its way back from a thread cache, in every
 * flavour (free's slow-path checks, for the blocks a thread cache took in on
 * its fast path, where nothing is checked but the last block freed).  The
 * span of block o, looked up in the pagemap: aborts with a message unless
 * it is a small span of class cls. */
ay_span_t *ay_central_block_span(const void *o, unsigned cls);
/* o, in span s of class cls (objects of `size`, ay_class_magic `magic`),
 * is at an object's start below the span's limit, or this aborts with a
 * message. */
AY_INLINE void ay_central_check_offset(const ay_span_t *s, const void *o, uint64_t magic,
                                       uint32_t size) {
    uintptr_t d = (uintptr_t)o - s->start;
    if (AY_UNLIKELY(d >= s->limit - s->start || !ay_offset_is_object_m(d, magic, size)))
        ay_fatal("free(): pointer is not the start of a block", o);
}

/* Give back the objects of run (of class cls), which a fetch handed out:
 * when they are still the end of their span's handed-out bump region, the
 * region just takes them back, without a write to them. */
void ay_central_release_run(unsigned cls, ay_run_t *run);

/* Debug check: is p, an object of SMALL span s, free (in the span's free
 * list or bump region)? */
bool ay_central_holds(ay_span_t *s, const void *p);

/* Bytes of the free objects (free list and never-used bump region) in c's
 * sparse spans: those with fewer than a quarter of their objects out
 * (used * 4 < capacity; a span with no free object is on no list and is not
 * sparse).  For the statistics, a slow path: it takes c's lock and walks
 * `nonempty`, so the caller holds no lock and keeps c's heap from being
 * destroyed (ay_heap_pin).  0 for a central cache never set up. */
uint64_t ay_central_sparse_bytes(ay_central_t *c);

/* Fork support. */
void ay_central_lock(ay_central_t *c);
void ay_central_unlock(ay_central_t *c);
void ay_central_reset_lock(ay_central_t *c);

#endif
