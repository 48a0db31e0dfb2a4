/* SPDX-License-Identifier: MIT */
/* ctl.c - alloy_ctl: one plain table of names.  Each entry is either a
 * counter read out of the stats structs by offset, or a pair of small
 * get/set functions.  Indices in names ("stats.heaps.3.allocated") match
 * "<i>" and "<j>" in the patterns.  Also alloy_ctl_name, alloy_ctl_describe
 * and alloy_setting_describe, from the same table and from conf.c's.
 *
 * Invariants: the table is the list of names (`alloy names` and the manual
 * page print it; include/alloy/ctl.h lists it by hand); a name is matched
 * against the patterns in table order, and an index must name a heap or
 * class that exists; a value is read or written only when its length is
 * exactly its type's size; counters are read through the stats API, never
 * kept here; nothing here calls malloc. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "alloy.h"
#include "alloy/ctl.h"
#include "alloy/heap.h"
#include "background.h"
#include "ctl.h"
#include "conf.h"
#include "cpucache.h"
#include "fmt.h"
#include "heap.h"
#include "init.h"
#include "prof_out.h"
#include "prof_store.h"
#include "tcache.h"
#include "timeline.h"
#include "topology.h"

typedef enum { T_U64, T_I64, T_UNS, T_BOOL, T_STR, T_VOID } ctl_type_t;
typedef enum { S_FUNC, S_TOTAL, S_HEAP, S_CLASS } ctl_src_t;

typedef struct ctl_entry {
    const char *name;
    ctl_type_t type;
    ctl_src_t src;
    size_t offset;                                   /* S_TOTAL/S_HEAP/S_CLASS */
    int (*get)(const unsigned *idx, void *out);      /* S_FUNC; NULL: write-only */
    int (*set)(const unsigned *idx, const void *in); /* NULL: read-only */
    const char *help;
} ctl_entry_t;

static const size_t type_size[] = {sizeof(uint64_t), sizeof(int64_t),      sizeof(unsigned),
                                   sizeof(bool),     sizeof(const char *), 0};

static uint64_t epoch = 1;

/* ---- functions behind names ---- */

#define GETTER(fn, T, expr)                                                                        \
    static int fn(const unsigned *idx, void *out) {                                                \
        (void)idx;                                                                                 \
        *(T *)out = (expr);                                                                        \
        return 0;                                                                                  \
    }
GETTER(get_version, const char *, ALLOY_VERSION_STRING)
GETTER(get_epoch, uint64_t, epoch)
GETTER(get_decay, int64_t, ay_conf.decay_ms)
GETTER(get_policy, const char *, ay_policy_name(ay_conf.batch.policy))
GETTER(get_bg, bool, ay_background_running())
GETTER(opt_policy, const char *, ay_policy_name(ay_conf.batch.policy))
GETTER(opt_budget, uint64_t, ay_conf.batch.byte_budget)
GETTER(opt_cap, uint64_t, ay_conf.batch.object_cap)
GETTER(opt_threshold, unsigned, ay_conf.return_k_halves)
GETTER(opt_tcache, bool, ay_conf.tcache)
GETTER(opt_tcache_max, uint64_t, ay_conf.tcache_max_bytes)
GETTER(opt_decay, int64_t, ay_conf.decay_ms)
GETTER(opt_heaps, unsigned, ay_heaps_auto)
GETTER(opt_bg, bool, ay_conf.background_thread == AY_BG_TRUE)
GETTER(opt_thp, const char *, ay_thp_name(ay_conf.thp))
GETTER(opt_percpu, const char *, ay_percpu_name(ay_conf.percpu))
GETTER(get_percpu_mode, const char *, ay_cpu_mode ? "percpu" : "thread")
GETTER(get_percpu_why, const char *, ay_cpu_mode_why())
#define PERCPU_COUNT(fn, field)                                                                    \
    static int fn(const unsigned *idx, void *out) {                                                \
        (void)idx;                                                                                 \
        ay_cpu_counts_t c;                                                                         \
        ay_cpu_counts(&c);                                                                         \
        *(uint64_t *)out = c.field;                                                                \
        return 0;                                                                                  \
    }
PERCPU_COUNT(get_percpu_caches, caches)
PERCPU_COUNT(get_percpu_misses, misses)
PERCPU_COUNT(get_percpu_overflows, overflows)
PERCPU_COUNT(get_percpu_scavenges, scavenges)
PERCPU_COUNT(get_percpu_drains, drains)
PERCPU_COUNT(get_percpu_moves, moves)
static int get_percpu_bytes(const unsigned *idx, void *out) {
    (void)idx;
    uint64_t sum = 0;
    for (unsigned b = 1; b < AY_NUM_BINS; b++)
        sum += ay_cpu_bytes(b);
    *(uint64_t *)out = sum;
    return 0;
}
GETTER(opt_tcache_total, uint64_t, ay_conf.tcache_total_bytes)
GETTER(opt_transfer_bytes, uint64_t, ay_conf.transfer_bytes)
GETTER(opt_junk, bool, ay_conf.junk)
GETTER(opt_zero, bool, ay_conf.zero)
GETTER(opt_abort, bool, ay_conf.abort_on_error)
GETTER(opt_stats_print, bool, ay_conf.stats_print)
GETTER(opt_stats_print_opts, const char *, ay_conf.stats_print_opts)
GETTER(opt_stats_file, const char *, ay_conf.stats_file)
GETTER(opt_stats_print_pid, unsigned, ay_conf.stats_print_pid)
GETTER(opt_guard_sample, unsigned, ay_conf.guard_sample)
GETTER(opt_secure_tags, bool, ay_conf.secure_tags)
GETTER(opt_quarantine, uint64_t, ay_conf.quarantine)
GETTER(opt_guard_slots, unsigned, ay_conf.guard_slots)
GETTER(get_heaps_count, unsigned, ay_heaps_auto)
GETTER(get_heaps_set_up, unsigned, ay_heaps_set_up())
GETTER(opt_numa, bool, ay_numa)
GETTER(get_numa_nodes, unsigned, ay_topo.nnodes)
GETTER(get_numa_moves, uint64_t, ay_heap_numa_moves())
GETTER(opt_prof, bool, ay_prof_enabled())
GETTER(opt_prof_sample, uint64_t, ay_conf.prof_sample)
GETTER(opt_prof_leak, bool, ay_conf.prof_leak)
GETTER(opt_prof_prefix, const char *, ay_conf.prof_prefix)
GETTER(opt_prof_active, bool, ay_conf.prof_active)
GETTER(opt_prof_final, bool, ay_conf.prof_final)
GETTER(opt_prof_interval, uint64_t, ay_conf.prof_interval)
GETTER(opt_leak_exit_code, unsigned, ay_conf.leak_exit_code)
GETTER(get_prof_active, bool, ay_prof_is_active())
GETTER(get_prof_sample, uint64_t, ay_prof_sample_mean())
GETTER(opt_timeline_ms, unsigned, ay_conf.timeline_ms)
GETTER(opt_timeline_file, const char *, ay_conf.timeline_file)
GETTER(opt_stats_shm, bool, ay_conf.stats_shm)
GETTER(get_timeline_records, uint64_t, ay_timeline_records())
GETTER(get_timeline_file, const char *, ay_timeline_path())
#undef GETTER

/* ---- the heap profiler (prof.h); writes need prof:true at start-up ---- */

static int set_prof_active(const unsigned *idx, const void *in) {
    if (!ay_prof_enabled())
        return EPERM;
    ay_prof_set_active(*(const bool *)in);
    return 0;
}

static int set_prof_sample(const unsigned *idx, const void *in) {
    if (!ay_prof_enabled())
        return EPERM;
    return ay_prof_set_sample_mean(*(const uint64_t *)in);
}

static int do_prof_reset(const unsigned *idx, const void *in) {
    ay_prof_reset(); /* without prof:true there is nothing to forget */
    return 0;
}

static int get_prof_dump(const unsigned *idx, void *out) {
    *(const char **)out = ay_prof_last_dump();
    return 0;
}

static int do_prof_dump(const unsigned *idx, const void *in) {
    return ay_prof_dump(in ? *(const char *const *)in : NULL);
}

#define PROF_COUNT(fn, field)                                                                      \
    static int fn(const unsigned *idx, void *out) {                                                \
        ay_prof_counts_t c;                                                                        \
        ay_prof_read_counts(&c);                                                                   \
        *(uint64_t *)out = c.field;                                                                \
        return 0;                                                                                  \
    }
PROF_COUNT(get_prof_samples, samples)
PROF_COUNT(get_prof_live, live)
PROF_COUNT(get_prof_stacks, stacks)
PROF_COUNT(get_prof_store, store_bytes)
PROF_COUNT(get_prof_nested, nested)
PROF_COUNT(get_prof_lost, lost)
#undef PROF_COUNT

static int set_epoch(const unsigned *idx, const void *in) {
    (void)in; /* counters are read live: the epoch only counts refreshes */
    __atomic_add_fetch(&epoch, 1, __ATOMIC_RELAXED);
    return 0;
}

static int set_decay(const unsigned *idx, const void *in) {
    int64_t v = *(const int64_t *)in;
    if (v < -1)
        return EINVAL;
    ay_conf.decay_ms = v;
    return 0;
}

static int set_policy(const unsigned *idx, const void *in) {
    const char *s = *(const char *const *)in;
    ay_batch_policy_t p;
    if (!s || ay_policy_parse(s, strlen(s), &p) != 0)
        return EINVAL;
    ay_conf.batch.policy = p; /* takes effect at the next batch growth */
    return 0;
}

static int set_bg(const unsigned *idx, const void *in) {
    if (*(const bool *)in)
        return ay_background_start() ? EAGAIN : 0;
    ay_background_stop();
    return 0;
}

static int do_purge(const unsigned *idx, const void *in) {
    alloy_purge();
    return 0;
}

static int do_flush(const unsigned *idx, const void *in) {
    alloy_thread_flush();
    return 0;
}

static int get_thread_bytes(const unsigned *idx, void *out) {
    ay_tcache_t *tc = ay_tcache_get();
    uint64_t sum = 0;
    for (unsigned b = 1; tc && b < AY_NUM_BINS; b++)
        sum += ay_tcache_bytes(tc, b);
    *(uint64_t *)out = sum;
    return 0;
}

static int get_thread_heap(const unsigned *idx, void *out) {
    *(unsigned *)out = alloy_heap_id(alloy_heap_get_default());
    return 0;
}

static int set_thread_heap(const unsigned *idx, const void *in) {
    alloy_heap_t *h = alloy_heap_from_id(*(const unsigned *)in);
    return h ? alloy_heap_set_default(h) : ENOENT;
}

static int get_thread_node(const unsigned *idx, void *out) {
    *(unsigned *)out = ay_heap_node_id(ay_tcache_heap());
    return 0;
}

static int get_heap_node(const unsigned *idx, void *out) {
    const ay_heap_t *h = ay_heap_get(idx[0]);
    if (!h && idx[0] >= ay_heaps_auto)
        return ENOENT; /* destroyed since the name was checked */
    *(unsigned *)out = h ? ay_heap_node_id(h) : ay_heap_auto_node_id(idx[0]);
    return 0;
}

static int heaps_create(const unsigned *idx, void *out) {
    alloy_heap_t *h = alloy_heap_create();
    if (!h)
        return EAGAIN;
    *(unsigned *)out = alloy_heap_id(h);
    return 0;
}

static int heap_destroy(const unsigned *idx, const void *in) {
    if (idx[0] < ay_heaps_auto)
        return EINVAL; /* automatic (and not set up just to say so) */
    return alloy_heap_destroy(alloy_heap_from_id(idx[0]));
}

static int heap_purge(const unsigned *idx, const void *in) {
    ay_heap_t *h = ay_heap_pin(idx[0]);
    if (!h && idx[0] < ay_heaps_auto)
        return 0; /* an automatic heap not set up yet has no pages */
    if (!h)
        return ENOENT; /* destroyed since the name was checked */
    ay_pageheap_purge(&h->pages, true);
    ay_heap_unpin(h);
    return 0;
}

/* ---- the table ---- */

#define TOTAL(n, f, h)                                                                             \
    { "stats." n, T_U64, S_TOTAL, offsetof(alloy_stats_t, f), NULL, NULL, h }
#define HEAP(n, f, h)                                                                              \
    { "stats.heaps.<i>." n, T_U64, S_HEAP, offsetof(alloy_stats_t, f), NULL, NULL, h }
#define CLASS(n, t, f, h)                                                                          \
    { "stats.classes.<j>." n, t, S_CLASS, offsetof(alloy_class_stats_t, f), NULL, NULL, h }
#define FUNC(n, t, g, s, h)                                                                        \
    { n, t, S_FUNC, 0, g, s, h }
#define BOTH(n, f, h) TOTAL(n, f, h), HEAP(n, f, h " (this heap)")

static const ctl_entry_t table[] = {
    FUNC("version", T_STR, get_version, NULL, "alloy's version, as alloy_version() returns it."),
    FUNC("epoch", T_U64, get_epoch, set_epoch,
         "Counts refreshes; writing any value refreshes (counters are always read live)."),
    FUNC("purge", T_VOID, NULL, do_purge, "Purge every heap's free pages now (madvise)."),
    FUNC("decay_ms", T_I64, get_decay, set_decay,
         "Purge free pages after this many ms; 0 at once, -1 never. Writable at run time."),
    FUNC("batch_policy", T_STR, get_policy, set_policy,
         "Batch growth policy (compact, clip, guard, pow2 or lean); a write takes effect at the "
         "next "
         "growth."),
    FUNC("background_thread", T_BOOL, get_bg, set_bg,
         "Whether the background purging thread runs; write true or false to start or stop it "
         "(false also ends background_thread:auto's starts)."),
    BOTH("allocated", allocated,
         "Bytes in live blocks, at their class sizes; large and sampled blocks, and pages the "
         "profiler keeps for later samples, in whole pages."),
    BOTH("active", active, "Bytes of pages in spans in use, plus direct maps."),
    BOTH("resident", resident,
         "Bytes that may be resident: active plus unpurged free pages (an upper bound)."),
    BOTH("mapped", mapped, "Bytes taken from the OS, metadata included."),
    BOTH("retained", pageheap_purged_bytes,
         "Bytes of free pages purged with madvise, or never touched, but still mapped."),
    BOTH("metadata", metadata,
         "Bytes of metadata: span records, thread caches, heaps but heap 0, quarantines, "
         "guarded-page slot tables, and the address map's leaves."),
    BOTH("peak_active", peak_active, "Highest `active` seen."),
    BOTH("large_allocated", large_allocated,
         "Bytes in live blocks of whole pages: above 256 KiB, aligned to more than a page, or "
         "sampled by the heap profiler (with the pages it keeps for later samples)."),
    BOTH("tcache_bytes", tcache_bytes, "Bytes cached in thread caches."),
    BOTH("central_bytes", central_bytes, "Bytes of free objects held by central caches."),
    BOTH("pageheap_free_bytes", pageheap_free_bytes, "Bytes of free page-heap pages not purged."),
    BOTH("slow_path_calls", slow_path_calls,
         "Fetches from a central cache: thread-cache misses and uncached allocations."),
    BOTH("short_fetches", short_fetches, "Fetches that returned fewer objects than asked for."),
    BOTH("objects_fetched", objects_fetched, "Objects moved from central caches to thread caches."),
    BOTH("objects_released", objects_released,
         "Objects moved back from thread caches to central caches."),
    BOTH("spans_allocated", spans_allocated, "Spans the central caches took from the page heap."),
    BOTH("spans_freed", spans_freed, "Spans the central caches gave back."),
    BOTH("central_lock_contended", central_lock_contended,
         "Central-cache lock acquisitions that had to wait."),
    BOTH("purges", purges, "Purges: madvise calls, and unmaps of wholly free blocks."),
    BOTH("threads", threads_live, "Threads bound to a heap."),
    BOTH("tcache_overflows", tcache_overflows,
         "Thread-cache lists that reached their limit and gave objects back."),
    BOTH("tcache_scavenges", tcache_scavenges,
         "Thread caches found above their byte limit (tcache_max_bytes, or a share of "
         "tcache_total_bytes) and scavenged."),
    BOTH("span_tail_bytes", span_tail_bytes, "Bytes of small spans past their last object's room."),
    TOTAL("metadata_resident", metadata_resident, "The part of `metadata` counted in `resident`."),
    BOTH("transfer_inserted", transfer_inserted,
         "Objects thread caches gave to the transfer caches (per heap: a node's, in its first "
         "heap)."),
    BOTH("transfer_bytes", transfer_bytes,
         "Bytes held in the transfer caches (part of central_bytes)."),
    BOTH("sparse_bytes", sparse_bytes,
         "Bytes of free objects in sparse spans, those with under a quarter of their objects in "
         "use (part of central_bytes; read under each central cache's lock)."),
    TOTAL("os_failures", os_failures,
          "madvise, mprotect and munmap calls the kernel refused: the pages stay dirty, or "
          "mapped; a large block stays without guards."),
    BOTH("huge_blocks", huge_blocks,
         "Page-heap blocks mapped with transparent huge pages asked for (the thp setting)."),
    FUNC("stats.heaps.<i>.node", T_UNS, get_heap_node, NULL,
         "The NUMA node heap <i>'s pages are placed on (0 without NUMA)."),
    CLASS("size", T_U64, class_size, "Object size of class <j>."),
    CLASS("batch_limit", T_UNS, batch_limit, "L(S) under the current parameters."),
    CLASS("terminal_batch", T_UNS, terminal_batch,
          "Where the current policy's batch growth stops."),
    CLASS(
        "slow_path_calls", T_U64, slow_path_calls,
        "Fetches from this class's central caches: thread-cache misses and uncached allocations."),
    CLASS("short_fetches", T_U64, short_fetches, "Short fetches in this class."),
    CLASS("objects_fetched", T_U64, objects_fetched, "Objects moved to thread caches."),
    CLASS("objects_released", T_U64, objects_released, "Objects moved back to the central caches."),
    CLASS("spans_allocated", T_U64, spans_allocated, "Spans taken for this class."),
    CLASS("spans_freed", T_U64, spans_freed, "Spans of this class given back."),
    CLASS("lock_contended", T_U64, lock_contended, "Lock acquisitions that had to wait."),
    CLASS("tcache_bytes", T_U64, tcache_bytes, "Bytes of this class in thread caches."),
    CLASS("central_bytes", T_U64, central_bytes,
          "Bytes of free objects of this class in central caches."),
    CLASS("allocated", T_U64, allocated, "Bytes in live blocks of this class."),
    CLASS("spans", T_U64, spans, "Spans this class holds now."),
    CLASS("capacity", T_U64, capacity, "Objects those spans hold room for."),
    CLASS("span_bytes", T_U64, span_bytes, "Bytes of those spans' pages."),
    CLASS("transfer_inserted", T_U64, transfer_inserted,
          "Objects of this class given to the transfer caches."),
    CLASS("transfer_bytes", T_U64, transfer_bytes, "Bytes of this class in transfer caches."),
    CLASS("sparse_bytes", T_U64, sparse_bytes,
          "Bytes of free objects of this class in spans under a quarter used."),
    FUNC("opt.batch_policy", T_STR, opt_policy, NULL, "The batch_policy setting."),
    FUNC("opt.batch_budget", T_U64, opt_budget, NULL, "The batch_budget setting, in bytes."),
    FUNC("opt.batch_cap", T_U64, opt_cap, NULL, "The batch_cap setting."),
    FUNC("opt.return_threshold_halves", T_UNS, opt_threshold, NULL,
         "The return_threshold setting k, in halves (4 means 2)."),
    FUNC("opt.tcache", T_BOOL, opt_tcache, NULL, "The tcache setting."),
    FUNC("opt.tcache_max_bytes", T_U64, opt_tcache_max, NULL, "The tcache_max_bytes setting."),
    FUNC("opt.decay_ms", T_I64, opt_decay, NULL, "The decay_ms setting at start-up."),
    FUNC("opt.heaps", T_UNS, opt_heaps, NULL,
         "Automatic heaps in use (the heaps setting, or one per CPU)."),
    FUNC("opt.background_thread", T_BOOL, opt_bg, NULL,
         "The background_thread setting at start-up: true for true only (auto and false read "
         "false; background_thread says whether a thread purges now)."),
    FUNC("opt.thp", T_STR, opt_thp, NULL, "The thp setting: never, auto or always."),
    FUNC("opt.percpu", T_STR, opt_percpu, NULL, "The percpu setting: auto or off."),
    FUNC("percpu.mode", T_STR, get_percpu_mode, NULL,
         "The first tier that runs: percpu (a cache per CPU) or thread (a cache per thread)."),
    FUNC("percpu.why", T_STR, get_percpu_why, NULL,
         "Why the first tier is per thread (\"\" in per-CPU mode)."),
    FUNC("percpu.caches", T_U64, get_percpu_caches, NULL, "Per-CPU caches set up so far."),
    FUNC("percpu.bytes", T_U64, get_percpu_bytes, NULL, "Bytes in the per-CPU caches."),
    FUNC("percpu.misses", T_U64, get_percpu_misses, NULL,
         "Refills of a per-CPU list from the central tier (mallocs that found it empty)."),
    FUNC("percpu.overflows", T_U64, get_percpu_overflows, NULL,
         "Frees that found a per-CPU list full and gave a batch back."),
    FUNC("percpu.scavenges", T_U64, get_percpu_scavenges, NULL,
         "Byte-limit checks that found a per-CPU cache above tcache_max_bytes."),
    FUNC("percpu.drains", T_U64, get_percpu_drains, NULL,
         "Per-CPU caches given back whole after decay_ms without a slow path."),
    FUNC("percpu.moves", T_U64, get_percpu_moves, NULL,
         "Capacity moved from one size class's per-CPU list to another's, within a cache's "
         "byte limit (tcache_max_bytes)."),
    FUNC("opt.tcache_total_bytes", T_U64, opt_tcache_total, NULL,
         "The tcache_total_bytes setting."),
    FUNC("opt.transfer_bytes", T_U64, opt_transfer_bytes, NULL,
         "The transfer_bytes setting: one class's transfer cache, per NUMA node, at most."),
    FUNC("opt.junk", T_BOOL, opt_junk, NULL, "The junk setting."),
    FUNC("opt.zero", T_BOOL, opt_zero, NULL, "The zero setting."),
    FUNC("opt.abort_on_error", T_BOOL, opt_abort, NULL, "The abort_on_error setting."),
    FUNC("opt.stats_print", T_BOOL, opt_stats_print, NULL, "The stats_print setting."),
    FUNC("opt.stats_print_opts", T_STR, opt_stats_print_opts, NULL,
         "The stats_print_opts setting (\"\" for the summary)."),
    FUNC("opt.stats_file", T_STR, opt_stats_file, NULL,
         "The stats_file setting (\"\" for stderr)."),
    FUNC("opt.stats_print_pid", T_UNS, opt_stats_print_pid, NULL,
         "The stats_print_pid setting (0: every process)."),
    FUNC("opt.guard_sample", T_UNS, opt_guard_sample, NULL,
         "The guard_sample setting (0: no sampled guarded allocations)."),
    FUNC("opt.secure_tags", T_BOOL, opt_secure_tags, NULL,
         "The secure_tags setting (tags after small blocks: the secure flavour only)."),
    FUNC("opt.quarantine", T_U64, opt_quarantine, NULL,
         "The quarantine setting: bytes of freed blocks a thread's quarantine holds at most "
         "(the secure flavour only; 0: off, and always 0 in the other flavours)."),
    FUNC("opt.guard_slots", T_UNS, opt_guard_slots, NULL, "The guard_slots setting."),
    FUNC("opt.numa", T_BOOL, opt_numa, NULL,
         "Whether NUMA awareness is in effect: the numa setting, on more than one node."),
    FUNC("numa.nodes", T_UNS, get_numa_nodes, NULL,
         "NUMA nodes with CPUs that alloy places heaps on; 1 without NUMA awareness."),
    FUNC("numa.moves", T_U64, get_numa_moves, NULL,
         "Threads moved to a heap of their new node after the scheduler moved them."),
    FUNC("thread.tcache.flush", T_VOID, NULL, do_flush,
         "Return the calling thread's cached objects to the central caches."),
    FUNC("thread.tcache.bytes", T_U64, get_thread_bytes, NULL,
         "Bytes in the calling thread's cache."),
    FUNC("thread.heap", T_UNS, get_thread_heap, set_thread_heap,
         "The calling thread's default heap; write an id to change it."),
    FUNC("thread.node", T_UNS, get_thread_node, NULL,
         "The NUMA node of the calling thread's default heap (0 without NUMA)."),
    FUNC("heaps.count", T_UNS, get_heaps_count, NULL, "Automatic heaps."),
    FUNC("heaps.set_up", T_UNS, get_heaps_set_up, NULL,
         "Automatic heaps set up so far: heap 0 at start, each other one when a thread first "
         "binds to it or it is named for use; one not set up holds nothing and its pages are "
         "untouched."),
    FUNC("heaps.create", T_UNS, heaps_create, NULL,
         "Reading it creates an explicit heap and returns its id (EAGAIN when none can be made)."),
    FUNC("heap.<i>.destroy", T_VOID, NULL, heap_destroy,
         "Destroy explicit heap <i> and every block in it (EINVAL for an automatic heap)."),
    FUNC("heap.<i>.purge", T_VOID, NULL, heap_purge, "Purge heap <i>'s free pages now."),
    FUNC(
        "prof.dump", T_STR, get_prof_dump, do_prof_dump,
        "Write a heap profile to the file name written, or, run with no value, to "
        "<prof_prefix>.<pid>.<seq>.m.heap (EPERM without prof:true); reads the last file written."),
    FUNC("prof.active", T_BOOL, get_prof_active, set_prof_active,
         "Whether sampling runs; write false to pause it, true to resume (needs prof:true)."),
    FUNC("prof.sample", T_U64, get_prof_sample, set_prof_sample,
         "Mean bytes between samples; a write takes effect at each thread's next sample."),
    FUNC("prof.reset", T_VOID, NULL, do_prof_reset,
         "Forget the allocation counts of every stack; the live samples stay."),
    FUNC("prof.samples", T_U64, get_prof_samples, NULL, "Allocations sampled since start-up."),
    FUNC("prof.live", T_U64, get_prof_live, NULL, "Sampled blocks not freed yet."),
    FUNC("prof.stacks", T_U64, get_prof_stacks, NULL, "Distinct stacks the profiler keeps."),
    FUNC("prof.store_bytes", T_U64, get_prof_store, NULL,
         "Bytes mapped for the profiler's store: stacks, records and their table."),
    FUNC(
        "prof.nested", T_U64, get_prof_nested, NULL,
        "Allocations made while the profiler itself ran (never sampled; the unwinder makes none)."),
    FUNC("prof.lost", T_U64, get_prof_lost, NULL,
         "Samples not recorded because the store could not grow."),
    FUNC("opt.prof", T_BOOL, opt_prof, NULL, "Whether heap profiling is on (prof or prof_leak)."),
    FUNC("opt.prof_sample", T_U64, opt_prof_sample, NULL, "The prof_sample setting."),
    FUNC("opt.prof_leak", T_BOOL, opt_prof_leak, NULL, "The prof_leak setting."),
    FUNC("opt.prof_prefix", T_STR, opt_prof_prefix, NULL, "The prof_prefix setting."),
    FUNC("opt.prof_active", T_BOOL, opt_prof_active, NULL, "The prof_active setting at start-up."),
    FUNC("opt.prof_final", T_BOOL, opt_prof_final, NULL, "The prof_final setting."),
    FUNC("opt.prof_interval", T_U64, opt_prof_interval, NULL,
         "The prof_interval setting, in bytes."),
    FUNC("opt.leak_exit_code", T_UNS, opt_leak_exit_code, NULL, "The leak_exit_code setting."),
    FUNC("opt.timeline_ms", T_UNS, opt_timeline_ms, NULL, "The timeline_ms setting."),
    FUNC("opt.timeline_file", T_STR, opt_timeline_file, NULL,
         "The timeline_file setting (\"\" for none)."),
    FUNC("opt.stats_shm", T_BOOL, opt_stats_shm, NULL, "The stats_shm setting."),
    FUNC("timeline.records", T_U64, get_timeline_records, NULL,
         "Records written to the timeline file so far (docs/OBSERVING.md)."),
    FUNC("timeline.file", T_STR, get_timeline_file, NULL,
         "The timeline file being written (\"\" when none, or after recording stopped)."),
};
#define NENTRIES (sizeof table / sizeof table[0])

ALLOY_API const char *alloy_ctl_name(unsigned k) { return k < NENTRIES ? table[k].name : NULL; }

static const char *const type_name[] = {"uint64_t", "int64_t",      "unsigned",
                                        "bool",     "const char *", "action"};

ALLOY_API int alloy_ctl_describe(unsigned k, alloy_ctl_info_t *out) {
    if (k >= NENTRIES || !out)
        return ENOENT;
    const ctl_entry_t *e = &table[k];
    out->name = e->name;
    out->type = type_name[e->type];
    out->writable = e->set != NULL;
    out->help = e->help;
    return 0;
}

/* ---- the settings table, described (conf.h) ---- */

typedef struct text_buf {
    char *p;
    size_t len, cap;
} text_buf_t;

static void text_put(void *opaque, const char *text, size_t len) {
    text_buf_t *b = opaque;
    size_t n = len < b->cap - 1 - b->len ? len : b->cap - 1 - b->len;
    memcpy(b->p + b->len, text, n);
    b->len += n;
    b->p[b->len] = 0;
}

static const char *const setting_type[] = {"boolean", "integer", "bytes",   "milliseconds",
                                           "policy",  "ratio",   "letters", "path",
                                           "choice",  "choice",  "choice"};
_Static_assert(sizeof setting_type / sizeof setting_type[0] == AY_CONF_BG + 1,
               "a name for each type of setting");

ALLOY_API int alloy_setting_describe(unsigned k, alloy_setting_info_t *out) {
    const ay_conf_key_t *key = ay_conf_key(k);
    if (!key || !out)
        return ENOENT;
    out->name = key->name;
    out->type = setting_type[key->type];
    out->default_value = key->defdoc ? key->defdoc : key->defval;
    out->help = key->help;
    text_buf_t b = {out->range, 0, sizeof out->range};
    ay_fmt_t f;
    out->range[0] = 0;
    ay_fmt_init(&f, text_put, &b);
    ay_conf_describe_range(key, &f);
    ay_fmt_flush(&f);
    return 0;
}

bool ay_ctl_match(const char *pat, const char *name, unsigned idx[2]) {
    unsigned n = 0;
    while (*pat) {
        if (*pat == '<') {
            uint64_t v = 0;
            const char *start = name;
            while (*name >= '0' && *name <= '9' && v < 1u << 20)
                v = v * 10 + (uint64_t)(*name++ - '0');
            if (name == start || (name - start > 1 && *start == '0') || v >= 1u << 20)
                return false;
            idx[n < 2 ? n++ : 1] = (unsigned)v;
            pat += 3; /* "<i>" */
            continue;
        }
        if (*pat++ != *name++)
            return false;
    }
    return *name == 0;
}

/* Does the index in the name name something that exists? */
static bool index_ok(const ctl_entry_t *e, const unsigned *idx) {
    if (e->src == S_CLASS)
        return idx[0] < AY_NUM_CLASSES;
    if (e->src == S_HEAP || strstr(e->name, "<i>"))
        return ay_heap_exists(idx[0]); /* an automatic heap, set up or not, reads as zeros */
    return true;
}

static int read_value(const ctl_entry_t *e, const unsigned *idx, void *out) {
    if (e->src == S_FUNC)
        return e->get(idx, out);
    if (e->src == S_CLASS) {
        alloy_class_stats_t c = {.size = sizeof c};
        int err = alloy_class_stats_read(idx[0], &c);
        memcpy(out, (const char *)&c + e->offset, type_size[e->type]);
        return err;
    }
    alloy_stats_t s = {.size = sizeof s};
    int err = e->src == S_TOTAL ? alloy_stats_read(&s) : alloy_heap_stats_read(idx[0], &s);
    memcpy(out, (const char *)&s + e->offset, type_size[e->type]);
    return err;
}

int ay_ctl_lookup(const char *name, unsigned *k, unsigned idx[2]) {
    if (!name)
        return ENOENT;
    ay_ensure_init();
    idx[0] = idx[1] = 0;
    for (unsigned i = 0; i < NENTRIES; i++) {
        if (ay_ctl_match(table[i].name, name, idx)) {
            *k = i;
            return index_ok(&table[i], idx) ? 0 : ENOENT;
        }
    }
    return ENOENT;
}

size_t ay_ctl_value_size(unsigned k) { return k < NENTRIES ? type_size[table[k].type] : 0; }

ALLOY_API int alloy_ctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen) {
    unsigned k, idx[2];
    if (ay_ctl_lookup(name, &k, idx))
        return ENOENT;
    const ctl_entry_t *e = &table[k];
    size_t size = type_size[e->type];
    bool reading = oldlenp != NULL, writing = newp != NULL || newlen != 0;
    if (e->type == T_VOID) { /* an action: no value either way */
        if (reading || writing)
            return EINVAL;
        return e->set(idx, NULL);
    }
    if (e->type == T_STR && e->set == do_prof_dump && !reading && !writing)
        return e->set(idx, NULL); /* prof.dump run with no value: the default file name */
    if (writing) {
        if (!e->set || e->src != S_FUNC)
            return EPERM;
        if (!newp || newlen != size)
            return EINVAL;
    }
    if (reading) {
        if (!oldp) {
            *oldlenp = size;
        } else {
            if (*oldlenp != size || (!e->get && e->src == S_FUNC))
                return EINVAL;
            char value[sizeof(uint64_t)];
            int err = read_value(e, idx, value);
            if (err)
                return err;
            memcpy(oldp, value, size);
        }
    }
    return writing ? e->set(idx, newp) : 0;
}
