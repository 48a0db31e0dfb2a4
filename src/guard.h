/* SPDX-License-Identifier: MIT */
/* guard.h - sampled guarded allocations (guard_sample:N), in the manner of
 * GWP-ASan in TCMalloc, Chrome and Android: for production, off by
 * default, in every flavour.
 *
 * With guard_sample:N, about one allocation in N of at most a page gets a
 * page of its own (with N = 1, every one, from the first, while a slot is
 * free: the thread caches are then off, as with the debugging fills), with an inaccessible page on each side, in a region
 * reserved at start-up (guard_slots pages, each between two guards).  The
 * block sits at the end of its page (16- or 8-aligned as malloc promises),
 * so an overflow runs into the guard after it at once.  When the block is
 * freed its page becomes inaccessible again, and stays so while the other
 * slots are used: slots are reused least recently freed first.  A fault in
 * the region, read or write, is reported by alloy's SIGSEGV handler before
 * the process dies: the block, its size, the access (use after free,
 * overflow, underflow), and the stacks where it was allocated and freed
 * (from the heap profiler's unwinder, unwind.h: no frame pointers needed),
 * a frame a line: its address, the function the ELF symbol tables name
 * (symbolize.h, without addr2line: the handler runs no program), and
 * object+offset, which `addr2line -f -e OBJECT OFFSET` turns into a file
 * and line, for a PIE program too.  The
 * handler writes with write(2), then puts the previous handler back and returns, so that the
 * access faults again and ends the process as it would have (or reaches
 * the program's own handler).  A fault outside the region goes straight to
 * the previous handler.  free, realloc and malloc_usable_size on a guarded
 * block also check it: a double free or a pointer into it is reported with
 * the same details, and aborts.
 *
 * Sampling costs nothing on the fast paths.  The decision is taken on
 * malloc's slow path: a countdown (random, mean N) is charged with every
 * object a thread cache takes from a central cache, so N counts fresh
 * allocations; a block that a thread recycles through its own cache is
 * not counted.  When the countdown runs out, that slow-path malloc (of at
 * most a page) is the sampled one.  A fault's report also gives the stack
 * of the access: the faulting instruction and its callers, walked from the
 * registers the signal's context holds (ay_unwind_from).  When off, the cost is one test on
 * malloc's slow path and one compare on free's.
 *
 * Lock: one, a leaf, taken for slot bookkeeping only (mprotect runs
 * outside it).  Fork support through ay_guard_lock/unlock/reset_lock.
 */
#ifndef ALLOY_GUARD_H
#define ALLOY_GUARD_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal.h"

/* The region: [lo, hi), both 0 when sampling is off. */
extern AY_HIDDEN uintptr_t ay_guard_lo, ay_guard_hi;
/* Objects still to be handed out before the next sample (when on). */
extern AY_HIDDEN int64_t ay_guard_countdown;

/* Is p in the region (a guarded block, or a guard)? */
AY_INLINE bool ay_guard_owns(const void *p) {
    return (uintptr_t)p - ay_guard_lo < ay_guard_hi - ay_guard_lo;
}

/* Reserve the region and install the SIGSEGV handler, when guard_sample
 * is set.  Once, at initialisation (without allocating). */
void ay_guard_init(void);
/* Is the next slow-path malloc to be sampled?  Only when on. */
AY_INLINE bool ay_guard_due(void) { return AY_LOAD(&ay_guard_countdown) <= 0; }
/* Charge the countdown with `objects` handed out (when on). */
void ay_guard_charge(uint32_t objects);
/* A guarded block of `size` bytes (at most a page), or NULL when no slot
 * is free.  `caller` is the code address that called malloc (the slow path
 * that malloc jumped to has it as its return address).  Re-arms the
 * countdown. */
void *ay_guard_alloc(size_t size, const void *caller);
/* Free the guarded block p (ay_guard_owns(p)); aborts with a report when p
 * is not a live guarded block.  `fn` names the function in the report. */
void ay_guard_free(void *p, const void *caller, const char *fn);
/* Usable bytes of the guarded block p (aborts like ay_guard_free when p is
 * not a live guarded block). */
size_t ay_guard_usable(const void *p, const char *fn);

void ay_guard_lock(void);
void ay_guard_unlock(void);
void ay_guard_reset_lock(void);

#endif
