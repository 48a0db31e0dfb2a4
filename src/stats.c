/* stats.c - alloy_stats_read, alloy_class_stats_read, alloy_stats_print.
 *
 * Counters are read without locks (relaxed loads), so a reading taken while
 * other threads allocate is a snapshot of slightly different moments; at a
 * quiescent point the identities hold exactly:
 *   allocated = sum over classes of (objects out - objects in) * size
 *               - thread-cache bytes + large blocks
 *   allocated <= active <= resident <= mapped
 */
#include <errno.h>
#include <string.h>

#include "alloy.h"
#include "conf.h"
#include "fmt.h"
#include "heap.h"
#include "init.h"
#include "meta.h"
#include "pagemap.h"
#include "tcache.h"

#define PAGES_BYTES(n) ((size_t)(n) << AY_PAGE_SHIFT)

/* Bytes cached for bin b (0: all bins) over every live thread cache. */
static size_t tcache_bytes_all(unsigned b) {
    size_t sum = 0;
    ay_tcache_registry_lock();
    for (ay_tcache_t *tc = ay_tcache_registry_first(); tc; tc = tc->next) {
        if (b)
            sum += ay_tcache_bytes(tc, b);
        else
            for (unsigned i = 1; i < AY_NUM_BINS; i++)
                sum += ay_tcache_bytes(tc, i);
    }
    ay_tcache_registry_unlock();
    return sum;
}

static uint64_t threads_live(void) {
    uint64_t n = 0;
    ay_tcache_registry_lock();
    for (ay_tcache_t *tc = ay_tcache_registry_first(); tc; tc = tc->next)
        n++;
    ay_tcache_registry_unlock();
    return n;
}

static void class_read(unsigned cls, alloy_class_stats_t *s) {
    const ay_central_t *c = &ay_heap_main.central[cls];
    size_t size = ay_policy_class_size(cls);
    memset(s, 0, sizeof *s);
    s->size = sizeof *s;
    s->class_size = size;
    s->batch_limit = ay_policy_batch_limit(&ay_conf.batch, size);
    s->terminal_batch = ay_policy_terminal_batch(&ay_conf.batch, size);
    s->slow_path_calls = AY_LOAD(&c->fetches);
    s->short_fetches = AY_LOAD(&c->short_fetches);
    s->objects_fetched = AY_LOAD(&c->objects_out);
    s->objects_released = AY_LOAD(&c->objects_in);
    s->spans_allocated = AY_LOAD(&c->spans_allocated);
    s->spans_freed = AY_LOAD(&c->spans_freed);
    s->lock_contended = AY_LOAD(&c->contended);
    s->tcache_bytes = tcache_bytes_all(cls + 1);
    s->central_bytes = (size_t)AY_LOAD(&c->free_objects) * size;
    size_t out = (size_t)(s->objects_fetched - s->objects_released) * size;
    s->allocated = out > s->tcache_bytes ? out - s->tcache_bytes : 0;
}

ALLOY_API int alloy_class_stats_read(unsigned cls, alloy_class_stats_t *out) {
    if (!out || out->size < offsetof(alloy_class_stats_t, class_size))
        return EINVAL;
    if (cls >= AY_NUM_CLASSES)
        return ENOENT;
    ay_ensure_init();
    alloy_class_stats_t s;
    class_read(cls, &s);
    size_t n = out->size < sizeof s ? out->size : sizeof s;
    memcpy(out, &s, n);
    out->size = n;
    return 0;
}

ALLOY_API int alloy_stats_read(alloy_stats_t *out) {
    if (!out || out->size < offsetof(alloy_stats_t, allocated))
        return EINVAL;
    ay_ensure_init();
    alloy_stats_t s;
    memset(&s, 0, sizeof s);
    s.size = sizeof s;
    s.version = ALLOY_STATS_VERSION;
    s.nclasses = AY_NUM_CLASSES;
    size_t small_pages = 0;
    for (unsigned cls = 0; cls < AY_NUM_CLASSES; cls++) {
        alloy_class_stats_t c;
        class_read(cls, &c);
        s.allocated += c.allocated;
        s.tcache_bytes += c.tcache_bytes;
        s.central_bytes += c.central_bytes;
        s.slow_path_calls += c.slow_path_calls;
        s.short_fetches += c.short_fetches;
        s.objects_fetched += c.objects_fetched;
        s.objects_released += c.objects_released;
        s.spans_allocated += c.spans_allocated;
        s.spans_freed += c.spans_freed;
        s.central_lock_contended += c.lock_contended;
        small_pages += AY_LOAD(&ay_heap_main.central[cls].span_pages);
    }
    const ay_pageheap_t *ph = &ay_heap_main.pages;
    size_t direct = AY_LOAD(&ph->direct_bytes);
    size_t active_pages = AY_LOAD(&ph->active_pages);
    s.active = PAGES_BYTES(active_pages) + direct;
    s.large_allocated = PAGES_BYTES(active_pages > small_pages ? active_pages - small_pages : 0) + direct;
    s.allocated += s.large_allocated;
    s.pageheap_free_bytes = PAGES_BYTES(AY_LOAD(&ph->free_dirty_pages));
    s.pageheap_purged_bytes = PAGES_BYTES(AY_LOAD(&ph->free_clean_pages));
    s.metadata = ay_meta_mapped() + (size_t)ay_pagemap_mapped();
    s.mapped = PAGES_BYTES(AY_LOAD(&ph->mapped_pages)) + direct + s.metadata;
    s.resident = s.active + s.pageheap_free_bytes + ay_meta_mapped();
    s.peak_active = AY_LOAD(&ph->peak_active_bytes);
    s.purges = AY_LOAD(&ph->purges);
    s.threads_live = threads_live();
    size_t n = out->size < sizeof s ? out->size : sizeof s;
    memcpy(out, &s, n);
    out->size = n;
    return 0;
}

static void kv(ay_fmt_t *f, const char *key, uint64_t v) {
    ay_fmt_str(f, key);
    ay_fmt_str(f, ": ");
    ay_fmt_u64(f, v);
    ay_fmt_str(f, "\n");
}

ALLOY_API void alloy_stats_print(alloy_write_cb *cb, void *opaque, const char *opts) {
    ay_fmt_t f;
    alloy_stats_t s = {.size = sizeof s};
    alloy_stats_read(&s);
    ay_fmt_init(&f, cb, opaque);
    ay_fmt_str(&f, "___ alloy " ALLOY_VERSION_STRING " statistics ___\n");
    ay_fmt_str(&f, "batch_policy: ");
    ay_fmt_str(&f, ay_policy_name(ay_conf.batch.policy));
    ay_fmt_str(&f, ", return_threshold (halves of n): ");
    ay_fmt_u64(&f, ay_conf.return_k_halves);
    ay_fmt_str(&f, ", tcache_max_bytes: ");
    ay_fmt_u64(&f, ay_conf.tcache_max_bytes);
    ay_fmt_str(&f, ", decay_ms: ");
    if (ay_conf.decay_ms < 0)
        ay_fmt_str(&f, "-1");
    else
        ay_fmt_u64(&f, (uint64_t)ay_conf.decay_ms);
    ay_fmt_str(&f, "\n");
    kv(&f, "allocated", s.allocated);
    kv(&f, "active", s.active);
    kv(&f, "resident", s.resident);
    kv(&f, "mapped", s.mapped);
    kv(&f, "metadata", s.metadata);
    kv(&f, "peak_active", s.peak_active);
    kv(&f, "large_allocated", s.large_allocated);
    kv(&f, "tcache_bytes", s.tcache_bytes);
    kv(&f, "central_bytes", s.central_bytes);
    kv(&f, "pageheap_free_bytes", s.pageheap_free_bytes);
    kv(&f, "pageheap_purged_bytes", s.pageheap_purged_bytes);
    kv(&f, "slow_path_calls", s.slow_path_calls);
    kv(&f, "short_fetches", s.short_fetches);
    kv(&f, "objects_fetched", s.objects_fetched);
    kv(&f, "objects_released", s.objects_released);
    kv(&f, "spans_allocated", s.spans_allocated);
    kv(&f, "spans_freed", s.spans_freed);
    kv(&f, "central_lock_contended", s.central_lock_contended);
    kv(&f, "purges", s.purges);
    kv(&f, "threads_live", s.threads_live);
    ay_fmt_str(&f, "class    size  limit  term      slow     short    fetched   released"
                   "    tcache_B   central_B  allocated_B\n");
    for (unsigned cls = 0; cls < AY_NUM_CLASSES; cls++) {
        alloy_class_stats_t c;
        class_read(cls, &c);
        if (!c.slow_path_calls)
            continue;
        ay_fmt_u64w(&f, cls, 5);
        ay_fmt_u64w(&f, c.class_size, 8);
        ay_fmt_u64w(&f, c.batch_limit, 7);
        ay_fmt_u64w(&f, c.terminal_batch, 6);
        ay_fmt_u64w(&f, c.slow_path_calls, 10);
        ay_fmt_u64w(&f, c.short_fetches, 10);
        ay_fmt_u64w(&f, c.objects_fetched, 11);
        ay_fmt_u64w(&f, c.objects_released, 11);
        ay_fmt_u64w(&f, c.tcache_bytes, 12);
        ay_fmt_u64w(&f, c.central_bytes, 12);
        ay_fmt_u64w(&f, c.allocated, 13);
        ay_fmt_str(&f, "\n");
    }
    ay_fmt_str(&f, "___ end of alloy statistics ___\n");
    ay_fmt_flush(&f);
}
