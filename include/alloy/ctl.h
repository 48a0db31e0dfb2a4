/* alloy/ctl.h - read and write alloy's settings and counters by dotted
 * name, in the manner of jemalloc's mallctl.
 *
 *   int alloy_ctl(name, oldp, oldlenp, newp, newlen)
 *
 * Reading: oldp and oldlenp given; *oldlenp must be the size of the value's
 * type (uint64_t, size_t, int64_t, unsigned, bool or const char *).  With
 * oldp NULL and oldlenp given, *oldlenp is set to that size.
 * Writing: newp and newlen given; newlen must be that size.  Actions (such as
 * "thread.tcache.flush") take no value: all four arguments NULL/0.
 *
 * Errors: ENOENT for an unknown name (or a heap/class index that does not
 * exist), EINVAL for a wrong length or an invalid value, EPERM for a write to
 * a read-only name, EAGAIN when the operation could not be done now.
 *
 * Names (<i> is a heap id, <j> a size class 0..207):
 *   version  epoch  purge  decay_ms  batch_policy  background_thread
 *   stats.{allocated,active,resident,mapped,retained,metadata,peak_active,
 *          large_allocated,tcache_bytes,central_bytes,pageheap_free_bytes,
 *          slow_path_calls,short_fetches,objects_fetched,objects_released,
 *          spans_allocated,spans_freed,central_lock_contended,purges,threads}
 *   stats.heaps.<i>.{the same names}
 *   stats.classes.<j>.{size,batch_limit,terminal_batch,slow_path_calls,
 *          short_fetches,objects_fetched,objects_released,spans_allocated,
 *          spans_freed,lock_contended,tcache_bytes,central_bytes,allocated}
 *   opt.{batch_policy,batch_budget,batch_cap,return_threshold_halves,tcache,
 *        tcache_max_bytes,decay_ms,heaps,background_thread,junk,zero,
 *        abort_on_error,stats_print}
 *   thread.tcache.flush  thread.tcache.bytes  thread.heap
 *   heaps.count  heaps.create  heap.<i>.destroy  heap.<i>.purge
 * alloy_ctl_name(k) lists them, k = 0, 1, ... until NULL.
 */
#ifndef ALLOY_CTL_H
#define ALLOY_CTL_H

#include <stddef.h>

#include "../alloy.h"

#ifdef __cplusplus
extern "C" {
#endif

ALLOY_API int alloy_ctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen);
/* The k-th name pattern (with "<i>" / "<j>" for indices), or NULL past the end. */
ALLOY_API const char *alloy_ctl_name(unsigned k);

#ifdef __cplusplus
}
#endif
#endif
