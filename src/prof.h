/* SPDX-License-Identifier: MIT */
/* prof.h - the heap profiler's sampling: which allocations are sampled, and
 * the record of each sampled block.  The profiler is three modules, each
 * using only those before it: prof_store (stacks, live records, settings,
 * counts), prof_out (heap profiles in gperftools' text format, the leak
 * report at exit) and prof (this one, which the allocator calls).
 *
 * Sampling is by bytes: each thread counts down a random number of bytes,
 * drawn from an exponential distribution whose mean is prof_sample, and the
 * allocation that takes the count below zero is sampled.  That is a Poisson
 * process over the bytes allocated, as in jemalloc and TCMalloc, so an
 * allocation of S bytes is sampled with probability p = 1 - exp(-S/mean),
 * independently of every other; each sample stands for 1/p allocations and
 * S/p bytes, which makes every estimate unbiased whatever the sizes.
 * prof_sample:1 samples every allocation (p = 1).
 *
 * The countdown is ay_tls.prof_left (tcache.h), beside the thread's cache
 * pointer.  malloc's fast path subtracts the size from it and folds "went
 * negative" into its one unlikely branch (alloc.h), so sampling costs the
 * fast path two instructions and no branch; with profiling off the count
 * starts so high that it never runs out.  ay_prof_tick, on the slow path,
 * re-arms the count and says whether to sample.
 *
 * A sampled block is served as whole pages of its heap (a LARGE span, whose
 * pagemap bin is 0), whatever its size, and its span points at its record
 * (span.prof), so free finds the record through the slow path it already
 * takes for bin 0: the free fast path is unchanged, and the live set is
 * exact with respect to the samples.  This costs a page per live sample:
 * about 0.8% of memory at the default rate.
 *
 * Records and stacks live in the profiler's own mmap'ed store (never in
 * malloc), under one lock, a leaf: nothing else is taken inside it, and the
 * stack is captured (unwind.h) before it is taken.  Stacks are kept once
 * each (hashed); the store of stacks is bounded (AY_PROF_STACK_STORE), and a
 * sample whose stack does not fit any more is counted under one
 * "(stack store full)" entry, so that no sample is lost from the totals.
 * A thread inside the profiler is never sampled again (no recursion).
 *
 * Fork: the child continues the profile.  Its live set is what it
 * inherited, which is its heap too; its files carry its own pid.
 */
#ifndef ALLOY_PROF_H
#define ALLOY_PROF_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal.h"
#include "span.h"
#include "tcache.h"

/* Always AY_LIST_END (an empty list, secure.h): the fast path's conditional
 * move reads it (alloc.h). */
extern AY_HIDDEN void *const ay_prof_null;

/* ay_tls.prof_left went negative with the allocation of `size` bytes: re-arm
 * the countdown and say whether that allocation is a sample. */
bool ay_prof_tick(size_t size);

/* For allocations that do not pass through malloc's fast path: count size
 * bytes; true when the allocation is a sample. */
AY_INLINE bool ay_prof_count(size_t size) {
    int64_t left;
    __builtin_sub_overflow(ay_tls.prof_left, (int64_t)size, &left);
    ay_tls.prof_left = left;
    return AY_UNLIKELY(left < 0) && ay_prof_tick(size);
}

/* Record the sampled block of span s (LARGE or DIRECT), of `size` bytes
 * requested, in heap `heap`: capture the caller's stack. */
void ay_prof_record(ay_span_t *s, size_t size, const void *heap);
/* The sampled block of span s was resized (realloc) to `size` bytes. */
void ay_prof_resize(ay_span_t *s, size_t size);
/* The sampled block of span s is being freed: drop its record.  True when
 * the profiler keeps the span (a page of an automatic heap) for the next
 * sample instead: the caller must not free it then. */
bool ay_prof_release(ay_span_t *s);
/* A page kept from an earlier sample (see ay_prof_release), or NULL: a
 * LARGE span of one page of an automatic heap, mapped in the pagemap. */
ay_span_t *ay_prof_stash_take(void);

/* Set up from the settings (at initialisation, without allocating). */
void ay_prof_init(void);

#endif
