/* SPDX-License-Identifier: MIT */
/* alloy/ctl.h - read and write alloy's settings and counters by dotted
 * name, in the manner of jemalloc's mallctl.
 *
 *   int alloy_ctl(name, oldp, oldlenp, newp, newlen)
 *
 * Reading: oldp and oldlenp given; *oldlenp must be the size of the value's
 * type (uint64_t, int64_t, unsigned, bool or const char *).  With
 * oldp NULL and oldlenp given, *oldlenp is set to that size.
 * Writing: newp and newlen given; newlen must be that size.  Actions (such as
 * "thread.tcache.flush") take no value: all four arguments NULL/0.
 *
 * Errors: ENOENT for an unknown name (or a heap/class index that does not
 * exist), EINVAL for a wrong length or an invalid value, EPERM for a write to
 * a read-only name (and for prof.active, prof.sample and prof.dump without
 * prof:true at start-up), EAGAIN when the operation could not be done now.
 *
 * Names (<i> is a heap id, <j> a size class 0..207):
 *   version  epoch  purge  decay_ms  batch_policy  background_thread
 *   stats.{allocated,active,resident,mapped,retained,metadata,peak_active,
 *          large_allocated,tcache_bytes,central_bytes,pageheap_free_bytes,
 *          slow_path_calls,short_fetches,objects_fetched,objects_released,
 *          spans_allocated,spans_freed,central_lock_contended,purges,threads,
 *          tcache_overflows,tcache_scavenges,span_tail_bytes,metadata_resident}
 *   stats.heaps.<i>.{the same names but metadata_resident, and node}
 *   stats.classes.<j>.{size,batch_limit,terminal_batch,slow_path_calls,
 *          short_fetches,objects_fetched,objects_released,spans_allocated,
 *          spans_freed,lock_contended,tcache_bytes,central_bytes,allocated,
 *          spans,capacity,span_bytes}
 *   opt.{batch_policy,batch_budget,batch_cap,return_threshold_halves,tcache,
 *        tcache_max_bytes,tcache_total_bytes,decay_ms,heaps,background_thread,
 *        thp,junk,zero,abort_on_error,stats_print,stats_print_opts,numa,prof,
 *        prof_active,prof_sample,prof_prefix,prof_final,prof_interval,
 *        prof_leak,leak_exit_code,guard_sample,secure_tags,guard_slots,
 *        timeline_ms,timeline_file,stats_shm}
 *   numa.nodes  numa.moves
 *   thread.tcache.flush  thread.tcache.bytes  thread.heap  thread.node
 *   heaps.count  heaps.set_up  heaps.create  heap.<i>.destroy  heap.<i>.purge
 *   prof.{dump,active,sample,reset,samples,live,stacks,store_bytes,nested,lost}
 *        (the heap profiler, docs/PROFILING.md; "prof.dump" written with a
 *        const char * file name, or run with no value for the default name)
 *   timeline.records  timeline.file   (the timeline, docs/OBSERVING.md)
 * alloy_ctl_name(k) lists them, k = 0, 1, ... until NULL, and
 * alloy_ctl_describe(k) gives each one's type and meaning.
 *
 * The ALLOY_CONF settings are described the same way: alloy_setting_describe(k)
 * gives each key's name, type, default, accepted values and meaning, from
 * the table the parser itself uses (`alloy settings` prints it).
 */
#ifndef ALLOY_CTL_H
#define ALLOY_CTL_H

#include <stdbool.h>
#include <stddef.h>

#include "../alloy.h"

#ifdef __cplusplus
extern "C" {
#endif

ALLOY_API int alloy_ctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen);
/* The k-th name pattern (with "<i>" / "<j>" for indices), or NULL past the end. */
ALLOY_API const char *alloy_ctl_name(unsigned k);

typedef struct alloy_ctl_info {
    const char *name; /* the pattern, with <i> (a heap id) and <j> (a size class) */
    const char *type; /* "uint64_t", "int64_t", "unsigned", "bool", "const char *" or "action" */
    bool writable;    /* can be written (an action: can be run) */
    const char *help; /* one sentence */
} alloy_ctl_info_t;
/* Describe the k-th name.  0, or ENOENT past the end. */
ALLOY_API int alloy_ctl_describe(unsigned k, alloy_ctl_info_t *out);

typedef struct alloy_setting_info {
    const char *name; /* the key in ALLOY_CONF */
    /* "boolean", "integer", "bytes", "milliseconds", "policy", "ratio", "letters" or "path" */
    const char *type;
    const char *default_value; /* as written in ALLOY_CONF, or in words */
    const char *help;          /* one or two sentences */
    char range[96];            /* the values it accepts, in words */
} alloy_setting_info_t;
/* Describe the k-th ALLOY_CONF key.  0, or ENOENT past the end. */
ALLOY_API int alloy_setting_describe(unsigned k, alloy_setting_info_t *out);

#ifdef __cplusplus
}
#endif
#endif
