/* alloc.c - malloc and calloc: the entry points, the malloc slow path,
 * allocation that bypasses the thread cache, and out-of-memory (see alloc.h). */
#include "alloc.h"

#include <errno.h>

#include "alloy.h"
#include "error.h"
#include "init.h"

void *ay_oom(void) {
    ay_ensure_init(); /* abort_on_error is a setting */
    if (ay_conf.abort_on_error)
        ay_fatal("out of memory (abort_on_error:true)", NULL);
    errno = ENOMEM;
    return NULL;
}

void *ay_alloc_uncached(ay_heap_t *h, size_t size, bool zero) {
    unsigned b = ay_size_bin(size);
    if (!b)
        return ay_large_alloc(h, size, 1, zero);
    void *head;
    if (!ay_central_fetch(&h->central[b - 1], 1, &head, NULL))
        return NULL;
    if (zero)
        return memset(head, 0, ay_bin_size[b]);
    return ay_fill_new(head, ay_bin_size[b]);
}

/* Does tc serve allocations from heap h through its lists? */
static bool cached_for(const ay_tcache_t *tc, const ay_heap_t *h) {
    return tc && tc->cache_on && !tc->explicit_heap && tc->heap == h;
}

void *ay_alloc_sampled(ay_heap_t *h, size_t size, size_t align, bool zero) {
    ay_span_t *kept = size <= AY_PAGE_SIZE && align <= AY_PAGE_SIZE && h->cached
                          ? ay_prof_stash_take() : NULL;
    if (kept) { /* a page an earlier sample left */
        void *p = (void *)kept->start;
        if (zero)
            memset(p, 0, size);
        else
            ay_fill_new(p, AY_PAGE_SIZE);
        ay_prof_record(kept, size, h);
        return p;
    }
    void *p = ay_large_alloc(h, size ? size : 1, align, zero);
    if (p)
        ay_prof_record(ay_pagemap_span(p), size, h);
    return p;
}

void *ay_malloc_slow(size_t size) {
    ay_ensure_init();
    if (AY_UNLIKELY(ay_tls.prof_left < 0) && ay_prof_tick(size) && size <= AY_MAX_REQUEST) {
        void *p = ay_alloc_sampled(ay_tcache_heap(), size, 1, false);
        return p ? p : ay_oom();
    }
    if (size > AY_MAX_REQUEST)
        return ay_oom();
    ay_tcache_t *tc = ay_tcache_get();
    unsigned b = ay_size_bin(size);
    void *p;
    if (b && tc && cached_for(tc, tc->heap))
        p = ay_tcache_refill(tc, b);
    else
        p = ay_alloc_uncached(ay_tcache_heap(), size, false);
    return p ? p : ay_oom();
}

void *ay_alloc_in(ay_heap_t *h, size_t size) {
    if (!h)
        return ay_malloc_fast(size);
    ay_ensure_init();
    if (cached_for(ay_tcache_get(), h))
        return ay_malloc_fast(size);
    if (size > AY_MAX_REQUEST)
        return ay_oom();
    void *p = ay_prof_count(size) ? ay_alloc_sampled(h, size, 1, false)
                                   : ay_alloc_uncached(h, size, false);
    return p ? p : ay_oom();
}

void *ay_calloc_in(ay_heap_t *h, size_t n, size_t size) {
    size_t total;
    if (__builtin_mul_overflow(n, size, &total))
        return ay_oom();
    if (total <= AY_MAX_SMALL_SIZE) {
        void *p = ay_alloc_in(h, total);
        return p ? memset(p, 0, total) : NULL;
    }
    /* large: the page heap knows whether the pages are still zero */
    ay_ensure_init();
    if (total > AY_MAX_REQUEST)
        return ay_oom();
    ay_heap_t *in = h ? h : ay_tcache_heap();
    void *p = ay_prof_count(total) ? ay_alloc_sampled(in, total, 1, true)
                                   : ay_large_alloc(in, total, 1, true);
    return p ? p : ay_oom();
}

size_t ay_block_usable(const ay_span_t *s, const void *p) {
    switch (s->state) {
    case AY_SPAN_SMALL:
        return s->size;
    case AY_SPAN_LARGE:
    case AY_SPAN_DIRECT:
        return AY_PAGES_BYTES(s->npages) - ((uintptr_t)p - s->start);
    default:
        return 0;
    }
}

ALLOY_API void *alloy_malloc(size_t size) { return ay_malloc_fast(size); }

ALLOY_API void *alloy_calloc(size_t n, size_t size) { return ay_calloc_in(NULL, n, size); }

ALLOY_API size_t alloy_malloc_usable_size(const void *p) {
    ay_span_t *s = p ? ay_pagemap_span(p) : NULL;
    return s ? ay_block_usable(s, p) : 0;
}

ALLOY_API const char *alloy_version(void) { return ALLOY_VERSION_STRING; }

ALLOY_API void alloy_thread_flush(void) {
    ay_tcache_t *tc = ay_tcache_get();
    if (tc && tc->cache_on)
        ay_tcache_flush(tc);
}

ALLOY_API void alloy_purge(void) {
    ay_ensure_init();
    ay_heaps_purge(true);
}
