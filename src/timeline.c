/* SPDX-License-Identifier: MIT */
/* timeline.c - the timeline file and the live snapshot (see timeline.h). */
#include "timeline.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>

#include "alloy.h"
#include "background.h"
#include "conf.h"
#include "cpucache.h"
#include "error.h"
#include "fmt.h"
#include "heap.h"
#include "init.h"
#include "meta.h"
#include "os.h"
#include "outfile.h"
#include "pagemap.h"
#include "prof.h"
#include "prof_store.h"
#include "tcache.h"
#include "topology.h"
#include "transfer.h"

#define FLUSH_MS 1000u /* records reach the file at least this often */

static pthread_mutex_t tl_lock = PTHREAD_MUTEX_INITIALIZER;
static bool tl_on;   /* rounds run (the file, the segment or both) */
static unsigned pid; /* the process recording */
static uint64_t start_ms, last_flush_ms;
static ay_snap_t prev; /* the last snapshot (for the rates) */
static uint64_t history[AY_SHM_HISTORY], nhistory, history_s;

/* the file */
static int fd = -1;
static ay_os_file_id_t fd_id; /* what fd named when it was opened */
static char path[AY_CONF_PATH_MAX + 16];
static char *buf; /* AY_TIMELINE_BUF bytes of metadata memory */
static size_t len;
static uint64_t records;
static ay_timeline_class_t *classes_prev; /* the values the file last carried, per class */

/* the live snapshot */
static ay_shm_t shm;
static ay_shm_seg_t *published; /* shm.seg, for readers in this process (atomic) */
static char cmd[AY_SHM_CMD];    /* the program's name (/proc/self/comm) */

/* ---- taking a snapshot ---- */

static uint64_t read_rss(void) {
    char text[128];
    if (ay_os_read_file("/proc/self/statm", text, sizeof text) <= 0)
        return 0;
    const char *s = text;
    while (*s && *s != ' ') /* the second field: resident pages */
        s++;
    uint64_t pages = 0;
    while (*s == ' ')
        s++;
    while (*s >= '0' && *s <= '9')
        pages = pages * 10 + (uint64_t)(*s++ - '0');
    return pages * AY_PAGE_SIZE;
}

/* Keep c in s->waste, the AY_SHM_WASTE classes with the most unused bytes. */
static void waste_offer(ay_snap_t *s, const ay_snap_class_t *c) {
    unsigned n = (unsigned)s->nwaste, i = n;
    if (!c->unused || (n == AY_SHM_WASTE && c->unused <= s->waste[n - 1].unused))
        return;
    if (n < AY_SHM_WASTE)
        s->nwaste = ++n;
    for (i = n - 1; i > 0 && s->waste[i - 1].unused < c->unused; i--)
        s->waste[i] = s->waste[i - 1];
    s->waste[i] = *c;
}

/* One class, summed over the heaps, as stats.c's class_read (alloy_ctl's
 * stats.classes.<j>.*) computes it, without the central caches' locks: what it holds in use, cached and free,
 * its spans' bytes and its span tails.  tcache: the bytes the thread
 * caches hold of it. */
AY_NO_SANITIZE_THREAD static ay_snap_class_t class_sum(unsigned cls, const ay_heap_t *const *heaps,
                                                       unsigned nheaps, uint64_t tcache,
                                                       uint64_t *capacity, ay_snap_t *s) {
    static uint32_t sizes[AY_NUM_CLASSES]; /* the classes' sizes, looked up once */
    if (!sizes[cls])
        sizes[cls] = (uint32_t)ay_policy_class_size(cls);
    uint64_t size = sizes[cls], out = 0, in = 0, free_objects = 0, pages = 0, held_x = 0;
    *capacity = 0;
    for (unsigned i = 0; i < nheaps; i++) {
        const ay_central_t *c = &heaps[i]->central[cls];
        uint64_t o = AY_LOAD(&c->objects_out), n = AY_LOAD(&c->objects_in);
        uint64_t f = AY_LOAD(&c->free_objects);
        out += o;
        in += n;
        free_objects += f;
        *capacity += (o > n ? o - n : 0) + f;
        pages += AY_LOAD(&c->span_pages);
        s->slow_path_calls += AY_LOAD(&c->fetches);
    }
    for (unsigned n = 0; n < ay_topo.nnodes; n++) { /* the transfer caches, as class_read */
        ay_transfer_counts_t t;
        ay_transfer_read(n, cls, &t);
        out += t.taken;
        in += t.inserted - t.released;
        held_x += t.objects;
        s->slow_path_calls += t.takes;
    }
    s->objects_fetched += out;
    s->objects_released += in;
    uint64_t held = out > in ? (out - in) * size : 0;
    ay_snap_class_t w = {cls,
                         size,
                         0,
                         held > tcache ? held - tcache : 0,
                         tcache,
                         (free_objects + held_x) * size,
                         AY_PAGES_BYTES(pages)};
    w.unused = w.span_bytes > w.in_use ? w.span_bytes - w.in_use : 0;
    return w;
}

/* Every class: the class totals of *s, the waste rows, the span tails, and
 * each class's bytes into all (when not NULL).  One walk of the thread
 * caches and one of the heaps' central caches. */
static void collect_classes(ay_snap_t *s, ay_timeline_class_t *all) {
    static uint64_t tcache[AY_NUM_BINS];
    static const ay_heap_t *heaps[AY_MAX_HEAPS];
    unsigned nheaps = 0;
    memset(tcache, 0, sizeof tcache);
    ay_tcache_registry_lock();
    for (const ay_tcache_t *tc = ay_tcache_registry_first(); tc; tc = tc->next)
        for (unsigned b = 1; b < AY_NUM_BINS; b++)
            tcache[b] += ay_tcache_bytes(tc, b);
    ay_tcache_registry_unlock();
    for (unsigned b = 1; ay_cpu_mode && b < AY_NUM_BINS;
         b++) { /* (heap 0's, as stats.c has them) */
        size_t bytes = ay_cpu_bytes(b);
        tcache[b] += bytes;
        s->percpu_bytes += bytes;
    }
    for (unsigned i = 0; i < ay_heaps_limit && i < AY_MAX_HEAPS; i++)
        if ((heaps[nheaps] = ay_heap_get(i)) != NULL)
            nheaps++;
    s->nwaste = 0;
    for (unsigned cls = 0; cls < AY_NUM_CLASSES; cls++) {
        uint64_t capacity;
        ay_snap_class_t w = class_sum(cls, heaps, nheaps, tcache[cls + 1], &capacity, s);
        waste_offer(s, &w);
        if (all)
            all[cls] = (ay_timeline_class_t){w.span_bytes, w.in_use};
        uint64_t room = capacity * w.size;
        s->allocated += w.in_use;
        s->tcache += w.tcache;
        s->central += w.central;
        s->span_tails += w.span_bytes > room ? w.span_bytes - room : 0;
    }
}

/* The page heaps and direct maps of every heap, as alloy_stats_read sums
 * them (stats.c): one pass, without the per-heap class tables.  Like the
 * class counters, these are read without the locks their writers hold
 * (AY_NO_SANITIZE_THREAD: a snapshot mixes nearby moments, on purpose). */
AY_NO_SANITIZE_THREAD static void collect_heaps(ay_snap_t *s) {
    for (unsigned i = 0; i < ay_heaps_limit; i++) {
        const ay_heap_t *h = ay_heap_get(i);
        if (h || i < ay_heaps_auto)
            s->heaps++; /* an automatic heap not set up yet counts too; it holds nothing */
        if (!h)
            continue;
        const ay_pageheap_t *ph = &h->pages;
        size_t small_pages = 0, direct = ay_direct_bytes(&h->direct);
        for (unsigned cls = 0; cls < AY_NUM_CLASSES; cls++)
            small_pages += AY_LOAD(&h->central[cls].span_pages);
        size_t active_pages = AY_LOAD(&ph->active_pages);
        s->active += AY_PAGES_BYTES(active_pages) + direct;
        s->large +=
            AY_PAGES_BYTES(active_pages > small_pages ? active_pages - small_pages : 0) + direct;
        s->pageheap_free += AY_PAGES_BYTES(AY_LOAD(&ph->free_dirty_pages)) +
                            AY_PAGES_BYTES(AY_LOAD(&ph->purging_pages));
        s->mapped += AY_PAGES_BYTES(AY_LOAD(&ph->mapped_pages)) + direct;
        s->peak_active += AY_LOAD(&h->usage.peak);
        s->threads += AY_LOAD(&h->nthreads);
    }
}

/* The profiler's AY_SHM_STACKS stacks with the most live bytes. */
static void collect_stacks(ay_snap_t *s) {
    s->prof = ay_prof_enabled();
    s->nstacks = 0;
    if (!s->prof)
        return;
    uint64_t allocs = 0, live = 0; /* in AY_PROF_FIX units */
    pthread_mutex_lock(&ay_prof_store.lock);
    allocs = ay_prof_store.full.alloc_est_n;
    live = ay_prof_store.full.live_est_n;
    for (const ay_prof_stack_t *st = ay_prof_store.stacks; st; st = st->all) {
        unsigned n = (unsigned)s->nstacks, i;
        allocs += st->alloc_est_n;
        live += st->live_est_n;
        if (!st->live_est_bytes ||
            (n == AY_SHM_STACKS && st->live_est_bytes <= s->stacks[n - 1].live_bytes))
            continue;
        if (n < AY_SHM_STACKS)
            s->nstacks = ++n;
        for (i = n - 1; i > 0 && s->stacks[i - 1].live_bytes < st->live_est_bytes; i--)
            s->stacks[i] = s->stacks[i - 1];
        ay_snap_stack_t *e = &s->stacks[i];
        memset(e, 0, sizeof *e);
        e->id = st->hash;
        e->live_bytes = st->live_est_bytes;
        for (unsigned f = 0; f < AY_SHM_FRAMES && f < st->depth; f++)
            e->pcs[f] = st->pcs[f];
    }
    pthread_mutex_unlock(&ay_prof_store.lock);
    s->prof_allocs = allocs / AY_PROF_FIX;
    s->prof_live = live / AY_PROF_FIX;
}

void ay_timeline_collect(ay_snap_t *s, ay_timeline_class_t *all) {
    s->unix_ms = ay_os_unix_ms();
    s->rss = read_rss();
    s->allocated = s->tcache = s->central = s->span_tails = 0;
    s->slow_path_calls = s->objects_fetched = s->objects_released = 0;
    s->heaps = s->active = s->large = s->pageheap_free = s->mapped = 0;
    s->peak_active = s->threads = s->percpu_bytes = 0;
    collect_classes(s, all);
    ay_cpu_counts_t c;
    ay_cpu_counts(&c);
    s->percpu = ay_cpu_mode;
    s->percpu_caches = c.caches;
    s->percpu_misses = c.misses;
    s->percpu_overflows = c.overflows;
    s->percpu_scavenges = c.scavenges;
    s->percpu_drains = c.drains;
    s->percpu_moves = c.moves;
    collect_heaps(s);
    s->allocated += s->large;
    s->metadata = ay_meta_mapped(); /* resident metadata; pagemap leaves are sparse */
    s->mapped += s->metadata + (size_t)ay_pagemap_mapped();
    s->resident = s->active + s->pageheap_free + s->metadata;
    collect_stacks(s);
}

/* The recorder's part: sequence, time, rates, the RSS of the last minute. */
static void snap_complete(ay_snap_t *s, uint64_t now) {
    s->seq = prev.seq + 1;
    s->t_ms = now - start_ms;
    s->interval_ms = ay_conf.timeline_ms;
    uint64_t dt = s->t_ms - prev.t_ms;
    if (prev.seq && dt) {
#define RATE(cur, old) ((cur) > (old) ? ((cur) - (old)) * 1000 / dt : 0)
        s->misses_per_s = RATE(s->slow_path_calls, prev.slow_path_calls);
        s->fetched_per_s = RATE(s->objects_fetched, prev.objects_fetched);
        s->released_per_s = RATE(s->objects_released, prev.objects_released);
        s->mallocs_per_s = RATE(s->prof_allocs, prev.prof_allocs);
        /* frees = allocations - the change of the live blocks */
        uint64_t gone = s->prof_allocs - prev.prof_allocs + prev.prof_live;
        s->frees_per_s = gone > s->prof_live && s->prof_allocs >= prev.prof_allocs
                             ? (gone - s->prof_live) * 1000 / dt
                             : 0;
#undef RATE
    }
    if (!nhistory || s->t_ms / 1000 != history_s) { /* one sample a second */
        history_s = s->t_ms / 1000;
        if (nhistory == AY_SHM_HISTORY)
            memmove(history, history + 1, sizeof history - sizeof history[0]);
        else
            nhistory++;
    }
    history[nhistory - 1] = s->rss;
    s->nhistory = nhistory;
    memcpy(s->rss_history, history, sizeof history);
}

/* ---- the file ---- */

/* "alloy: timeline: <before><file><after> (<why>)<then>" on stderr; no
 * reason when err is 0. */
static void warn_file(const char *before, const char *file, const char *after, int err,
                      const char *then) {
    ay_outfile_warn("timeline", before, file, after, err, then);
}

/* Stop writing the file: close it only if it is still ours. */
static void file_stop(bool ours) {
    if (ours && fd >= 0)
        ay_os_close(fd);
    AY_STORE(&fd, -1);
}

/* Write the buffer out, after checking that fd still names the file. */
static void file_flush(uint64_t now) {
    last_flush_ms = now;
    if (fd < 0 || !len)
        return;
    ay_os_file_id_t id;
    if (ay_os_file_id(fd, NULL, &id) != 0 || id.dev != fd_id.dev || id.ino != fd_id.ino) {
        warn_file("", path, " was closed by the program", 0, "; recording stopped");
        file_stop(false);
        return;
    }
    int err = ay_os_write_all(fd, buf, len);
    len = 0;
    if (err) {
        warn_file("writing ", path, " failed", -err, "; recording stopped");
        file_stop(true);
    }
}

static void buf_put(void *opaque, const char *text, size_t n) {
    if (len + n > AY_TIMELINE_BUF) /* never: a record is far smaller than the room kept */
        return;
    memcpy(buf + len, text, n);
    len += n;
}

/* ---- records ---- */

static void put_key(ay_fmt_t *f, const char *key, uint64_t v) {
    ay_fmt_str(f, ",\"");
    ay_fmt_str(f, key);
    ay_fmt_str(f, "\":");
    ay_fmt_u64(f, v);
}

static void put_json_str(ay_fmt_t *f, const char *s) {
    ay_fmt_str(f, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            ay_fmt_mem(f, "\\", 1);
            ay_fmt_mem(f, s, 1);
        } else if (c < 0x20) {
            ay_fmt_str(f, "\\u00");
            ay_fmt_mem(f, &"0123456789abcdef"[c >> 4], 1);
            ay_fmt_mem(f, &"0123456789abcdef"[c & 15], 1);
        } else {
            ay_fmt_mem(f, s, 1);
        }
    }
    ay_fmt_str(f, "\"");
}

static void put_header(const char *name) {
    ay_fmt_t f;
    ay_fmt_init(&f, buf_put, NULL);
    ay_fmt_str(&f, "{\"alloy_timeline\":1,\"version\":");
    put_json_str(&f, ALLOY_VERSION_STRING);
    put_key(&f, "pid", pid);
    ay_fmt_str(&f, ",\"cmd\":");
    put_json_str(&f, name);
    put_key(&f, "interval_ms", ay_conf.timeline_ms);
    put_key(&f, "start_unix_ms", ay_os_unix_ms());
    put_key(&f, "nclasses", AY_NUM_CLASSES);
    put_key(&f, "prof", ay_prof_enabled());
    ay_fmt_str(&f, ",\"percpu_mode\":");
    put_json_str(&f, ay_cpu_mode ? "percpu" : "thread");
    ay_fmt_str(&f, ",\"percpu_why\":");
    put_json_str(&f, ay_cpu_mode_why());
    ay_fmt_str(&f, "}\n");
    ay_fmt_flush(&f);
}

/* The totals and the breakdown, the rates, threads and heaps, the per-CPU caches. */
static void put_totals(ay_fmt_t *f, const ay_snap_t *s) {
    unsigned ms = (unsigned)(s->t_ms % 1000);
    char frac[4] = {'.', (char)('0' + ms / 100), (char)('0' + ms / 10 % 10), (char)('0' + ms % 10)};
    ay_fmt_str(f, "{\"t\":");
    ay_fmt_u64(f, s->t_ms / 1000);
    ay_fmt_mem(f, frac, 4);
    put_key(f, "unix_ms", s->unix_ms);
    put_key(f, "seq", s->seq);
    put_key(f, "rss", s->rss);
    put_key(f, "resident", s->resident);
    put_key(f, "in_use", s->allocated);
    put_key(f, "tcache", s->tcache);
    put_key(f, "central", s->central);
    put_key(f, "span_tails", s->span_tails);
    put_key(f, "pageheap_free", s->pageheap_free);
    put_key(f, "metadata", s->metadata);
    put_key(f, "allocated", s->allocated);
    put_key(f, "active", s->active);
    put_key(f, "mapped", s->mapped);
    put_key(f, "large", s->large);
    put_key(f, "peak_active", s->peak_active);
    put_key(f, "misses_per_s", s->misses_per_s);
    put_key(f, "fetched_per_s", s->fetched_per_s);
    put_key(f, "released_per_s", s->released_per_s);
    put_key(f, "threads", s->threads);
    put_key(f, "heaps", s->heaps);
    put_key(f, "percpu", s->percpu_bytes);
    put_key(f, "percpu_caches", s->percpu_caches);
    put_key(f, "percpu_misses", s->percpu_misses);
    put_key(f, "percpu_overflows", s->percpu_overflows);
    put_key(f, "percpu_scavenges", s->percpu_scavenges);
    put_key(f, "percpu_drains", s->percpu_drains);
    put_key(f, "percpu_moves", s->percpu_moves);
}

static void put_waste(ay_fmt_t *f, const ay_snap_t *s) {
    ay_fmt_str(f, ",\"waste\":[");
    for (unsigned i = 0; i < s->nwaste; i++) {
        const ay_snap_class_t *c = &s->waste[i];
        ay_fmt_str(f, i ? ",{\"class\":" : "{\"class\":");
        ay_fmt_u64(f, c->cls);
        put_key(f, "size", c->size);
        put_key(f, "unused", c->unused);
        put_key(f, "in_use", c->in_use);
        put_key(f, "tcache", c->tcache);
        put_key(f, "central", c->central);
        ay_fmt_str(f, "}");
    }
    ay_fmt_str(f, "]");
}

/* The classes whose bytes changed since the last record (every class in
 * use, in the first): [class, size, span bytes, in use]. */
static void put_classes(ay_fmt_t *f, const ay_timeline_class_t *all, bool first) {
    bool any = false;
    ay_fmt_str(f, ",\"classes\":[");
    for (unsigned cls = 0; cls < AY_NUM_CLASSES; cls++) {
        ay_timeline_class_t *p = &classes_prev[cls];
        if (!first && p->span_bytes == all[cls].span_bytes && p->in_use == all[cls].in_use)
            continue;
        if (first && !all[cls].span_bytes && !all[cls].in_use)
            continue;
        *p = all[cls];
        ay_fmt_str(f, any ? ",[" : "[");
        any = true;
        ay_fmt_u64(f, cls);
        ay_fmt_str(f, ",");
        ay_fmt_u64(f, ay_policy_class_size(cls));
        ay_fmt_str(f, ",");
        ay_fmt_u64(f, p->span_bytes);
        ay_fmt_str(f, ",");
        ay_fmt_u64(f, p->in_use);
        ay_fmt_str(f, "]");
    }
    ay_fmt_str(f, "]");
}

static void put_stacks(ay_fmt_t *f, const ay_snap_t *s) {
    if (!s->prof)
        return;
    put_key(f, "mallocs_per_s", s->mallocs_per_s);
    put_key(f, "frees_per_s", s->frees_per_s);
    ay_fmt_str(f, ",\"stacks\":[");
    for (unsigned i = 0; i < s->nstacks; i++) {
        const ay_snap_stack_t *st = &s->stacks[i];
        ay_fmt_str(f, i ? ",{\"id\":\"" : "{\"id\":\"");
        ay_fmt_hex(f, st->id);
        ay_fmt_str(f, "\"");
        put_key(f, "live_bytes", st->live_bytes);
        ay_fmt_str(f, ",\"pcs\":[");
        for (unsigned k = 0; k < AY_SHM_FRAMES && st->pcs[k]; k++) {
            ay_fmt_str(f, k ? ",\"" : "\"");
            ay_fmt_hex(f, st->pcs[k]);
            ay_fmt_str(f, "\"");
        }
        ay_fmt_str(f, "]}");
    }
    ay_fmt_str(f, "]");
}

static void put_record(const ay_snap_t *s, const ay_timeline_class_t *all, bool last) {
    if (len > AY_TIMELINE_BUF / 2)
        file_flush(ay_os_mono_ms());
    if (fd < 0)
        return;
    ay_fmt_t f;
    ay_fmt_init(&f, buf_put, NULL);
    put_totals(&f, s);
    put_waste(&f, s);
    put_classes(&f, all, records == 0);
    put_stacks(&f, s);
    ay_fmt_str(&f, last ? ",\"last\":true}\n" : "}\n");
    ay_fmt_flush(&f);
    __atomic_store_n(&records, records + 1, __ATOMIC_RELAXED);
}

/* ---- rounds ---- */

/* The live snapshot: clean up after crashed processes, then publish. */
static void shm_start(const ay_snap_t *first, const char *name) {
    ay_shm_clean_stale(ay_os_uid());
    int err = ay_shm_create(&shm, first, name, ay_cpu_mode_why(), ay_os_unix_ms() - first->t_ms);
    __atomic_store_n(&published, shm.seg, __ATOMIC_RELEASE);
    if (err) {
        char seg[AY_SHM_PATH_MAX];
        ay_shm_path(seg, pid);
        warn_file("cannot publish the live snapshot in ", seg, "", err == -EEXIST ? 0 : -err,
                  err == -EEXIST ? ": another user's file has that name" : "");
    }
}

/* One round, with tl_lock held: a snapshot, to the file and the segment
 * (made at the first round, on the background thread). */
static void round_locked(bool last) {
    ay_snap_t s;
    static ay_timeline_class_t all[AY_NUM_CLASSES];
    static bool shm_tried;
    uint64_t now = ay_os_mono_ms();
    memset(&s, 0, sizeof s);
    ay_timeline_collect(&s, fd >= 0 ? all : NULL);
    snap_complete(&s, now);
    prev = s;
    if (fd >= 0)
        put_record(&s, all, last);
    if (fd >= 0 && (last || now - last_flush_ms >= FLUSH_MS))
        file_flush(now);
    if (shm.seg)
        ay_shm_publish(shm.seg, &s);
    else if (ay_conf.stats_shm && !shm_tried && !last) {
        shm_tried = true;
        shm_start(&s, cmd);
    }
}

static void timeline_task(void) {
    pthread_mutex_lock(&tl_lock);
    if (tl_on && pid == ay_os_pid())
        round_locked(false);
    pthread_mutex_unlock(&tl_lock);
}

/* The pid in the header of the timeline at `file`, or 0 when it is none. */
static unsigned header_pid(const char *file) {
    static const char head[] = "{\"alloy_timeline\":1,";
    char text[256];
    if (ay_os_read_file(file, text, sizeof text) <= 0 || strncmp(text, head, sizeof head - 1))
        return 0;
    const char *p = strstr(text, "\"pid\":");
    uint64_t v = 0;
    for (p = p ? p + 6 : ""; *p >= '0' && *p <= '9' && v < (1u << 30); p++)
        v = v * 10 + (uint64_t)(*p - '0');
    return v < (1u << 30) ? (unsigned)v : 0;
}

/* Open the timeline file and its buffer.  A file that exists is taken over
 * only from this same pid (a program that exec'd this one); one that
 * another live process records to is left to it, silently (a child that
 * inherited the setting); any other gives a warning.  false: no file. */
static bool file_start(void) {
    ay_outfile_path(path, sizeof path, ay_conf.timeline_file, pid);
    buf = ay_meta_alloc(AY_TIMELINE_BUF);
    classes_prev = ay_meta_alloc(sizeof(ay_timeline_class_t) * AY_NUM_CLASSES);
    if (!buf || !classes_prev) {
        warn_file("no memory for ", path, "", ENOMEM, "; not recording");
        return false;
    }
    int r = ay_outfile_create(path);
    if (r == -EEXIST) {
        unsigned owner = header_pid(path);
        if (owner == pid)
            r = ay_os_open(path, AY_OUTFILE_FLAGS | O_TRUNC, 0);
        else if (owner && ay_os_pid_exists(owner))
            return false;
    }
    if (r < 0 || ay_os_file_id(r, NULL, &fd_id) != 0) {
        warn_file("cannot create ", path, "", r < 0 ? -r : EIO, "; not recording");
        if (r >= 0)
            ay_os_close(r);
        return false;
    }
    AY_STORE(&fd, r);
    return true;
}

/* At start-up, only what must be done then: the settings, the file and its
 * header, and the thread.  The rounds, the segment's creation included,
 * run on the background thread; the first at t = timeline_ms. */
__attribute__((constructor)) static void timeline_at_start(void) {
    ay_ensure_init();
    if (!ay_conf.timeline_file[0] && !ay_conf.stats_shm)
        return;
    long n = ay_os_read_file("/proc/self/comm", cmd, sizeof cmd);
    while (n > 0 && cmd[n - 1] == '\n')
        cmd[--n] = 0;
    if (n < 0)
        cmd[0] = 0;
    pthread_mutex_lock(&tl_lock);
    pid = ay_os_pid();
    start_ms = ay_os_mono_ms();
    if (ay_conf.timeline_file[0] && file_start()) {
        put_header(cmd);
        file_flush(start_ms); /* at once: a program this one execs knows it by its pid */
    }
    tl_on = fd >= 0 || ay_conf.stats_shm;
    pthread_mutex_unlock(&tl_lock);
    if (tl_on && ay_background_set_task(timeline_task, ay_conf.timeline_ms) != 0)
        ay_warn("timeline: could not start the background thread; only the last snapshot is "
                "taken, at exit");
}

__attribute__((destructor)) static void timeline_at_exit(void) {
    /* (a fork child may have inherited tl_lock held by the thread of its
     * parent that took a round: it must not touch it) */
    if (!tl_on || pid != ay_os_pid())
        return;
    pthread_mutex_lock(&tl_lock);
    if (tl_on && pid == ay_os_pid()) {
        if (fd >= 0) /* the last record (the segment is only removed) */
            round_locked(true);
        file_stop(fd >= 0);
        __atomic_store_n(&published, NULL, __ATOMIC_RELEASE);
        ay_shm_remove(&shm);
        tl_on = false;
    }
    pthread_mutex_unlock(&tl_lock);
}

uint64_t ay_timeline_records(void) { return __atomic_load_n(&records, __ATOMIC_RELAXED); }

const char *ay_timeline_path(void) { return AY_LOAD(&fd) >= 0 ? path : ""; }

const ay_shm_seg_t *ay_timeline_segment(void) {
    return __atomic_load_n(&published, __ATOMIC_ACQUIRE);
}
