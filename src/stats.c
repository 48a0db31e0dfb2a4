/* SPDX-License-Identifier: MIT */
/* stats.c - reading the counters (alloy_stats_read, per heap and per class),
 * printing them as text or JSON through one emitter, and the report at exit
 * (stats_print:true).
 *
 * Counters are read without locks (relaxed loads), so a reading taken while
 * other threads allocate mixes slightly different moments; at a quiescent
 * point these hold exactly:
 *   allocated = sum over classes of (objects fetched - objects released)
 *               * size - thread-cache bytes + large blocks
 *   where fetched counts what central caches and transfer caches handed to
 *   thread caches, and released what thread caches gave to either, less
 *   what transfer caches released to the spans (transfer.h); the transfer
 *   caches' objects are central-cache bytes
 *   allocated <= active <= resident <= mapped
 *   each total = the sum over heaps (+ metadata, for resident and mapped),
 *   but allocated: a heap's allocated subtracts what the threads bound to it
 *   cache, and a thread may cache another heap's blocks, so the per-heap
 *   figures are estimates then (clamped at 0 per class); the total, summed
 *   over classes, stays exact
 *   resident = allocated + tcache + central + span tails + page-heap free
 *              + resident metadata (and the same per heap, without metadata;
 *              the blocks in a node's transfer caches in the heaps that own
 *              them, the caches' traffic in the node's first heap)
 *   a class's capacity * size + its span tails = its span bytes
 * (per heap, the thread-cache bytes are those of the threads bound to the
 * heap: exact while no thread caches objects of another heap)
 *   sparse_bytes <= central_bytes - transfer_bytes: the free objects of the
 *   spans under a quarter used, the one figure read under locks (each
 *   central cache's, one at a time, with its heap pinned: a walk of its
 *   list of spans; the statistics are a slow path)
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "alloy.h"
#include "background.h"
#include "conf.h"
#include "cpucache.h"
#include "emit.h"
#include "heap.h"
#include "init.h"
#include "meta.h"
#include "os.h"
#include "outfile.h"
#include "pagemap.h"
#include "report.h"
#include "stats.h"
#include "tcache.h"
#include "topology.h"
#include "transfer.h"

/* Bytes cached for bin b by the thread caches bound to heap h (NULL: any
 * heap); in per-CPU mode, the per-CPU caches' (cpucache.h), which hold
 * blocks of any automatic heap, count as heap 0's (and so do their
 * counters, heap_read). */
static size_t tcache_bytes(const ay_heap_t *h, unsigned b) {
    size_t sum = !h || h == ay_heap_get(0) ? ay_cpu_bytes(b) : 0;
    ay_tcache_registry_lock();
    for (ay_tcache_t *tc = ay_tcache_registry_first(); tc; tc = tc->next)
        if (!h || tc->heap == h)
            sum += ay_tcache_bytes(tc, b);
    ay_tcache_registry_unlock();
    return sum;
}

/* Class cls's figures where nothing was counted: its sizes and limits. */
static void class_blank(unsigned cls, alloy_class_stats_t *s) {
    size_t size = ay_policy_class_size(cls);
    memset(s, 0, sizeof *s);
    s->size = sizeof *s;
    s->class_size = size;
    s->batch_limit = ay_policy_batch_limit(&ay_conf.batch, size);
    s->terminal_batch = ay_policy_terminal_batch(&ay_conf.batch, size);
}

/* The sparse bytes of class cls in heap i (ay_central_sparse_bytes): the
 * heap is pinned, so that an explicit heap is not destroyed under the walk,
 * and the central cache's lock is taken. */
static size_t class_sparse(unsigned i, unsigned cls) {
    ay_heap_t *h = ay_heap_pin(i);
    if (!h)
        return 0;
    size_t bytes = ay_heap_central_ready(h, cls) ? ay_central_sparse_bytes(&h->central[cls]) : 0;
    ay_heap_unpin(h);
    return bytes;
}

/* Class cls of heap `only` (NULL: summed over heaps).  A node's transfer
 * caches, which its heaps share: the blocks they hold count in the heaps
 * that own them (central bytes, `lent`), and their traffic (misses served,
 * objects taken and given) in the node's first heap.  *net (when not NULL)
 * gets the class's allocated bytes before they are clamped at 0: a heap's
 * threads may cache another heap's blocks, so one heap's figure for one
 * class can come out below 0, and heap_read sums the signed figures.
 * sparse: walk the spans for sparse_bytes (class_sparse; else it is 0). */
static void class_read_net(const ay_heap_t *only, unsigned cls, alloy_class_stats_t *s,
                           int64_t *net, bool sparse) {
    size_t size = ay_policy_class_size(cls);
    int64_t held = 0; /* objects out of the spans and not in a transfer cache */
    class_blank(cls, s);
    for (unsigned i = 0; i < ay_heaps_limit; i++) {
        const ay_heap_t *h = ay_heap_get(i);
        if (!h || (only && h != only) || !ay_heap_central_ready(h, cls))
            continue; /* (one never set up holds nothing) */
        const ay_central_t *c = &h->central[cls];
        s->slow_path_calls += AY_LOAD(&c->fetches);
        s->short_fetches += AY_LOAD(&c->short_fetches);
        s->objects_fetched += AY_LOAD(&c->objects_out);
        s->objects_released += AY_LOAD(&c->objects_in);
        s->spans_allocated += AY_LOAD(&c->spans_allocated);
        s->spans_freed += AY_LOAD(&c->spans_freed);
        s->lock_contended += AY_LOAD(&c->contended);
        uint64_t out = AY_LOAD(&c->objects_out), in = AY_LOAD(&c->objects_in);
        uint64_t free_objects = AY_LOAD(&c->free_objects);
        uint64_t lent = AY_LOAD(&c->lent);
        s->central_bytes += (size_t)(free_objects + lent) * size;
        s->transfer_bytes += (size_t)lent * size;
        held += (int64_t)(out - in - lent);
        /* a span's room = the objects out of it + the free ones it holds */
        s->capacity += (out > in ? out - in : 0) + free_objects;
        s->span_bytes += AY_PAGES_BYTES(AY_LOAD(&c->span_pages));
        uint64_t sa = AY_LOAD(&c->spans_allocated), sf = AY_LOAD(&c->spans_freed);
        s->spans += sa > sf ? sa - sf : 0;
        if (sparse)
            s->sparse_bytes += class_sparse(i, cls);
    }
    /* the transfer caches' traffic: misses they served are slow-path calls
     * and fetches, what they took in and did not release to the spans is
     * released (transfer.h) */
    for (unsigned n = 0; n < ay_topo.nnodes; n++) {
        if (only && (only->node != n || !ay_heap_first_of_node(only)))
            continue;
        ay_transfer_counts_t t;
        ay_transfer_read(n, cls, &t);
        s->slow_path_calls += t.takes;
        s->objects_fetched += t.taken;
        s->objects_released += t.inserted - t.released;
        s->lock_contended += t.contended;
        s->transfer_inserted += t.inserted;
    }
    s->tcache_bytes = tcache_bytes(only, cls + 1);
    held = held * (int64_t)size - (int64_t)s->tcache_bytes;
    s->allocated = held > 0 ? (size_t)held : 0;
    if (net)
        *net = held;
}

static void class_read(const ay_heap_t *only, unsigned cls, alloy_class_stats_t *s) {
    class_read_net(only, cls, s, NULL, true);
}

/* The totals of a heap that holds nothing, such as an automatic heap not
 * set up yet (heap.h). */
static void heap_blank(alloy_stats_t *s) {
    memset(s, 0, sizeof *s);
    s->size = sizeof *s;
    s->version = ALLOY_STATS_VERSION;
    s->nclasses = AY_NUM_CLASSES;
}

/* Heap h's totals (without metadata, which no heap owns). */
static void heap_read(const ay_heap_t *h, alloy_stats_t *s) {
    heap_blank(s);
    int64_t held = 0; /* the classes' signed figures (class_read_net) */
    for (unsigned cls = 0; cls < AY_NUM_CLASSES; cls++) {
        alloy_class_stats_t c;
        int64_t net;
        class_read_net(h, cls, &c, &net, true);
        held += net;
        s->tcache_bytes += c.tcache_bytes;
        s->central_bytes += c.central_bytes;
        s->slow_path_calls += c.slow_path_calls;
        s->short_fetches += c.short_fetches;
        s->objects_fetched += c.objects_fetched;
        s->objects_released += c.objects_released;
        s->spans_allocated += c.spans_allocated;
        s->spans_freed += c.spans_freed;
        s->central_lock_contended += c.lock_contended;
        s->transfer_inserted += c.transfer_inserted;
        s->transfer_bytes += c.transfer_bytes;
        s->sparse_bytes += c.sparse_bytes;
        size_t room = (size_t)c.capacity * c.class_size;
        s->span_tail_bytes += c.span_bytes > room ? c.span_bytes - room : 0;
    }
    const ay_pageheap_t *ph = &h->pages;
    size_t direct = ay_direct_bytes(&h->direct);
    size_t active_pages = AY_LOAD(&ph->active_pages);
    size_t small_pages = AY_LOAD(&ph->small_pages); /* the central caches' spans */
    s->active = AY_PAGES_BYTES(active_pages) + direct;
    s->large_allocated =
        AY_PAGES_BYTES(active_pages > small_pages ? active_pages - small_pages : 0) + direct;
    s->allocated = (held > 0 ? (size_t)held : 0) + s->large_allocated;
    s->pageheap_free_bytes = AY_PAGES_BYTES(AY_LOAD(&ph->free_dirty_pages));
    s->pageheap_purged_bytes = AY_PAGES_BYTES(AY_LOAD(&ph->free_clean_pages));
    s->mapped = AY_PAGES_BYTES(AY_LOAD(&ph->mapped_pages)) + direct;
    /* pages being purged count as resident until the purge is done */
    s->pageheap_free_bytes += AY_PAGES_BYTES(AY_LOAD(&ph->purging_pages));
    s->resident = s->active + s->pageheap_free_bytes;
    s->peak_active = AY_LOAD(&h->usage.peak);
    s->purges = AY_LOAD(&ph->purges);
    s->huge_blocks = AY_LOAD(&ph->huge_blocks);
    s->threads_live = AY_LOAD(&h->nthreads);
    s->tcache_overflows = AY_LOAD(&h->retired_overflows);
    s->tcache_scavenges = AY_LOAD(&h->retired_scavenges);
    ay_tcache_registry_lock();
    for (ay_tcache_t *tc = ay_tcache_registry_first(); tc; tc = tc->next) {
        if (tc->heap == h) {
            s->tcache_overflows += AY_LOAD(&tc->overflows);
            s->tcache_scavenges += AY_LOAD(&tc->scavenges);
        }
    }
    ay_tcache_registry_unlock();
    if (h == ay_heap_get(0)) { /* the per-CPU caches, whose bytes are heap 0's (tcache_bytes) */
        ay_cpu_counts_t c;
        ay_cpu_counts(&c);
        for (unsigned b = 1; b < AY_NUM_BINS; b++)
            s->percpu_bytes += ay_cpu_bytes(b);
        s->percpu_caches = c.caches;
        s->percpu_misses = c.misses;
        s->percpu_overflows = c.overflows;
        s->percpu_scavenges = c.scavenges;
        s->percpu_drains = c.drains;
        s->percpu_moves = c.moves;
    }
}

static void totals_read(alloy_stats_t *s) {
    alloy_stats_t hs;
    memset(s, 0, sizeof *s);
    for (unsigned i = 0; i < ay_heaps_limit; i++) {
        const ay_heap_t *h = ay_heap_get(i);
        if (!h)
            continue;
        heap_read(h, &hs);
        /* every field from `allocated` on is a size_t or uint64_t sum */
        size_t *dst = &s->allocated, *src = &hs.allocated;
        for (size_t k = 0; k < (sizeof *s - offsetof(alloy_stats_t, allocated)) / sizeof(size_t);
             k++)
            dst[k] += src[k];
    }
    /* allocated is summed over classes, not over heaps: a thread may cache
     * blocks of a heap it is not bound to, so a heap's own figure is an
     * estimate (clamped at 0 per class), while this one is exact */
    s->allocated = s->large_allocated;
    for (unsigned cls = 0; cls < AY_NUM_CLASSES; cls++) {
        alloy_class_stats_t c;
        class_read_net(NULL, cls, &c, NULL, false); /* (the heaps' walks counted sparse) */
        s->allocated += c.allocated;
    }
    s->size = sizeof *s;
    s->version = ALLOY_STATS_VERSION;
    s->nclasses = AY_NUM_CLASSES;
    s->metadata = ay_meta_mapped() + (size_t)ay_pagemap_mapped();
    s->mapped += s->metadata;
    s->metadata_resident = ay_meta_mapped(); /* pagemap leaves are sparse: not counted */
    s->resident += s->metadata_resident;
    s->os_failures = ay_os_failures();
}
_Static_assert(sizeof(size_t) == sizeof(uint64_t), "stats sums assume 64-bit size_t");

static int copy_out(void *out, size_t have, const void *in, size_t size) {
    size_t n = have < size ? have : size;
    memcpy(out, in, n);
    *(size_t *)out = n;
    return 0;
}

ALLOY_API int alloy_stats_read(alloy_stats_t *out) {
    if (!out || out->size < offsetof(alloy_stats_t, allocated))
        return EINVAL;
    ay_ensure_init();
    alloy_stats_t s;
    totals_read(&s);
    return copy_out(out, out->size, &s, sizeof s);
}

ALLOY_API int alloy_heap_stats_read(unsigned id, alloy_stats_t *out) {
    if (!out || out->size < offsetof(alloy_stats_t, allocated))
        return EINVAL;
    ay_ensure_init();
    const ay_heap_t *h = ay_heap_get(id);
    if (!h && !ay_heap_exists(id))
        return ENOENT;
    alloy_stats_t s;
    if (h)
        heap_read(h, &s);
    else
        heap_blank(&s); /* an automatic heap not set up yet */
    return copy_out(out, out->size, &s, sizeof s);
}

int ay_stats_heap_class_read(unsigned id, unsigned cls, alloy_class_stats_t *out) {
    ay_ensure_init();
    const ay_heap_t *h = ay_heap_get(id);
    if ((!h && !ay_heap_exists(id)) || cls >= AY_NUM_CLASSES)
        return ENOENT;
    if (h)
        class_read(h, cls, out);
    else
        class_blank(cls, out); /* an automatic heap not set up yet */
    return 0;
}

ALLOY_API int alloy_class_stats_read(unsigned cls, alloy_class_stats_t *out) {
    if (!out || out->size < offsetof(alloy_class_stats_t, class_size))
        return EINVAL;
    if (cls >= AY_NUM_CLASSES)
        return ENOENT;
    ay_ensure_init();
    alloy_class_stats_t s;
    class_read(NULL, cls, &s);
    return copy_out(out, out->size, &s, sizeof s);
}

/* ---- printing: report.c lays the report out from these ---- */

static bool src_heap(const ay_report_src_t *src, unsigned k, unsigned *id, bool *is_explicit,
                     unsigned *node, alloy_stats_t *out) {
    (void)src;
    for (unsigned i = 0; i < ay_heaps_limit; i++) {
        const ay_heap_t *h = ay_heap_get(i);
        if ((!h && i >= ay_heaps_auto) || k-- > 0)
            continue; /* (an automatic heap not set up yet has a row of zeros) */
        *id = i;
        *is_explicit = h && !h->cached;
        *node = h ? ay_heap_node_id(h) : ay_heap_auto_node_id(i);
        if (h)
            heap_read(h, out);
        else
            heap_blank(out);
        return true;
    }
    return false;
}

static bool src_class(const ay_report_src_t *src, unsigned cls, alloy_class_stats_t *out) {
    (void)src;
    class_read(NULL, cls, out);
    return out->slow_path_calls || out->objects_released; /* else never used */
}

/* s into dst[cap], cut to fit (dst is zeroed by the caller). */
static void str_copy(char *dst, size_t cap, const char *s) {
    size_t n = strlen(s);
    memcpy(dst, s, n < cap ? n : cap - 1);
}

ALLOY_API void alloy_stats_print(alloy_write_cb *cb, void *opaque, const char *opts) {
    opts = opts ? opts : "";
    ay_emit_t e;
    ay_report_src_t src;
    ay_ensure_init();
    memset(&src, 0, sizeof src);
    memcpy(src.version, ALLOY_VERSION_STRING, sizeof ALLOY_VERSION_STRING);
    src.pid = ay_os_pid();
    long len = ay_os_read_file("/proc/self/comm", src.cmd, sizeof src.cmd);
    while (len > 0 && src.cmd[len - 1] == '\n')
        len--;
    src.cmd[len > 0 ? len : 0] = 0;
    src.nclasses = AY_NUM_CLASSES;
    str_copy(src.opt.batch_policy, sizeof src.opt.batch_policy,
             ay_policy_name(ay_conf.batch.policy));
    src.opt.batch_budget = ay_conf.batch.byte_budget;
    src.opt.batch_cap = ay_conf.batch.object_cap;
    src.opt.return_threshold_halves = ay_conf.return_k_halves;
    src.opt.tcache = ay_conf.tcache;
    src.opt.tcache_max_bytes = ay_conf.tcache_max_bytes;
    src.opt.decay_ms = ay_conf.decay_ms;
    src.opt.heaps = ay_heaps_auto;
    src.opt.background_thread = ay_background_running();
    src.opt.numa = ay_numa;
    str_copy(src.opt.percpu, sizeof src.opt.percpu, ay_percpu_name(ay_conf.percpu));
    str_copy(src.percpu_mode, sizeof src.percpu_mode, ay_cpu_mode ? "percpu" : "thread");
    str_copy(src.percpu_why, sizeof src.percpu_why, ay_cpu_mode_why());
    totals_read(&src.totals);
    src.heap = src_heap;
    src.cls = src_class;
    ay_emit_init(&e, cb, opaque, strchr(opts, 'J') != NULL);
    ay_report_print(&e, &src, ay_report_flags(opts));
    ay_emit_finish(&e);
}

/* ---- the report at exit (stats_print:true) ----
 * Written to a private copy of stderr, taken at start-up: programs such as
 * the coreutils close stderr in their own exit handlers, which run first.
 * With stats_file, to that file instead, created at exit (so a program that
 * execs another in the same process leaves the name to it, and a child's
 * %p is its own pid), under the directory the program started in; when it
 * cannot be created, one warning and the copy of stderr.  With
 * stats_print_pid, only that process reports. */

static int stats_fd = -1;
static char stats_dir[4096]; /* the start's directory, for a relative stats_file */

static void stats_write(void *opaque, const char *text, size_t len) {
    ay_os_write(*(const int *)opaque, text, len);
}

__attribute__((constructor)) static void stats_at_start(void) {
    ay_ensure_init();
    if (!ay_conf.stats_print)
        return;
    stats_fd = fcntl(2, F_DUPFD_CLOEXEC, 3);
    if (ay_conf.stats_file[0] && ay_conf.stats_file[0] != '/' &&
        ay_os_cwd(stats_dir, sizeof stats_dir) != 0)
        stats_dir[0] = 0; /* (the name is then taken from the directory at exit) */
}

/* The file stats_file names, created; -1 after a warning. */
static int stats_file_open(void) {
    char path[sizeof stats_dir + AY_CONF_PATH_MAX + 16];
    size_t n = stats_dir[0] ? strlen(stats_dir) : 0;
    memcpy(path, stats_dir, n);
    if (n)
        path[n++] = '/';
    int r = ay_outfile_path(path + n, sizeof path - n, ay_conf.stats_file, ay_os_pid());
    if (r == 0)
        r = ay_outfile_create(path);
    if (r < 0)
        ay_outfile_warn("stats_file", "cannot create ", path, "", -r,
                        "; the report goes to stderr");
    return r < 0 ? -1 : r;
}

__attribute__((destructor)) static void stats_at_exit(void) {
    if (!ay_conf.stats_print || (ay_conf.stats_print_pid && ay_conf.stats_print_pid != ay_os_pid()))
        return;
    int file = ay_conf.stats_file[0] ? stats_file_open() : -1;
    int fd = file >= 0 ? file : stats_fd;
    if (fd >= 0)
        alloy_stats_print(stats_write, &fd, ay_conf.stats_print_opts);
    if (file >= 0)
        ay_os_close(file);
}
