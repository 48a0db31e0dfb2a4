/* SPDX-License-Identifier: MIT */
/* alloc.c - malloc and calloc: the entry points, the malloc slow path,
 * allocation that bypasses the thread cache, sampled allocation and
 * out-of-memory (see alloc.h), and the small entry points alloy_version,
 * alloy_malloc_usable_size, alloy_thread_flush and alloy_purge.
 *
 * Invariants: every entry point that fails for want of memory returns
 * through ay_oom (errno ENOMEM, or an abort with abort_on_error:true); a
 * small block handed out by the slow paths carries its live tag in the
 * secure flavour, and the junk or zero fill when one is on; a sampled block
 * is always whole pages with its record on its span (prof.h), so its free
 * finds it; the first slow-path malloc checks for AddressSanitizer before
 * it initialises anything. */
#include "alloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "alloy.h"
#include "error.h"
#include "fill.h"
#include "guard.h"
#include "init.h"
#include "large.h"
#include "pagemap.h"
#include "secure.h"

AY_COLD void *ay_malloc_bad(void *p) { ay_cpu_bad_block(p); }

void *ay_oom(void) {
    ay_ensure_init(); /* abort_on_error is a setting */
    if (ay_conf.abort_on_error)
        ay_fatal_msg("out of memory (abort_on_error:true)");
    errno = ENOMEM;
    return NULL;
}

/* A small block of bin b handed out: the secure flavour's tag says so. */
static void *tag_live(void *p, unsigned b) {
    if (ay_secure && p && b)
        ay_tag_handed_out(p, ay_bin_size[b]);
    return p;
}

void *ay_alloc_uncached(ay_heap_t *h, size_t size, bool zero) {
    unsigned b = ay_size_bin(size);
    if (!b)
        return ay_large_alloc(h, size, 1, zero);
    void *head;
    if (!ay_central_fetch(ay_heap_central(h, b - 1), 1, &head, NULL))
        return NULL;
    ay_link_clear(head); /* handed out (secure.h) */
    tag_live(head, b);
    size_t usable = ay_bin_size[b] - AY_TAG_BYTES;
    if (zero)
        return memset(head, 0, usable);
    return ay_fill_new(head, usable);
}

/* Does tc serve allocations from heap h through its lists? */
static bool cached_for(const ay_tcache_t *tc, const ay_heap_t *h) {
    return tc && tc->cache_on && !tc->explicit_heap && tc->heap == h;
}

/* AddressSanitizer owns malloc: it cannot run with another one linked in
 * (liballoy.a linked with --whole-archive into an ASan program), and its
 * start-up, which calls malloc, crashes in alloy's first call to a function
 * it intercepts.  So the first malloc looks first: when ASan's runtime is in
 * the process and the process's malloc is alloy's (override.c's), it says so
 * and stops.  (Linking liballoy.so leaves ASan's malloc in place: it is found
 * first, and alloy_* still work; liballoy.a is one object, and always brings
 * alloy's malloc.)
 * The sanitizer flavours have no override.c, so the alias is NULL there. */
extern __attribute__((weak)) void __asan_init(void);
extern __attribute__((weak, visibility("hidden"))) void *ay_override_malloc(size_t);

AY_COLD static void check_not_under_asan(void) {
    void *(*volatile global_malloc)(size_t) = malloc;
    if (&__asan_init != NULL && ay_override_malloc != NULL && global_malloc == ay_override_malloc)
        ay_fatal("AddressSanitizer is in this process, and alloy's malloc replaced its own: ASan "
                 "cannot run with another malloc. Link the program with liballoy.so (liballoy.a "
                 "always brings alloy's malloc), or run alloy's own tests under ASan with "
                 "tools/sanitize.sh",
                 NULL);
}

void *ay_alloc_sampled(ay_heap_t *h, size_t size, size_t align, bool zero) {
    ay_span_t *kept =
        size <= AY_PAGE_SIZE && align <= AY_PAGE_SIZE && h->cached ? ay_prof_stash_take() : NULL;
    if (kept) { /* a page an earlier sample left */
        void *p = (void *)ay_large_start(kept);
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

void *ay_malloc_cpu_counted(size_t size) {
    unsigned off = ay_size_bin_offset(size);
    int64_t left;
    __builtin_sub_overflow(ay_tls.prof_left, (int64_t)size, &left);
    ay_tls.prof_left = left;
    void *p;
    if (AY_UNLIKELY(left < 0))
        goto miss;
    AY_CPU_POP_CLAIM(p, off, ay_tls.cpu_delta, miss, bad);
    return p;
miss:
    return ay_malloc_slow(size);
bad:
    return ay_malloc_bad(p);
}

void *ay_malloc_slow(size_t size) {
    if (AY_UNLIKELY(__atomic_load_n(&ay_init_state, __ATOMIC_RELAXED) == 0))
        check_not_under_asan();
    ay_ensure_init();
    if (AY_UNLIKELY(ay_tls.prof_left < 0) && ay_prof_tick(size) && size <= AY_MAX_REQUEST) {
        void *p = ay_alloc_sampled(ay_tcache_heap(), size, 1, false);
        return p ? p : ay_oom();
    }
    if (size > AY_MAX_REQUEST)
        return ay_oom();
    /* sampled guarded allocations (guard.h): the fast path jumped here, so
     * the return address is the caller's */
    if (AY_UNLIKELY(ay_guard_hi) && size <= AY_PAGE_SIZE && ay_guard_due()) {
        void *g = ay_guard_alloc(size, __builtin_return_address(0));
        if (g)
            return g;
    }
    unsigned b = ay_size_bin(size);
    void *p;
    if (b && ay_cpu_mode &&
        ay_tls.cpu_delta == 0) { /* a thread whose mallocs use the CPU's cache */
        ay_heap_t *h = ay_tcache_heap();
        p = ay_cpu_refill(h, b);
        if (!p) /* no memory for the CPU's cache, or for the refill */
            p = ay_alloc_uncached(h, size, false);
        if (AY_UNLIKELY(ay_guard_hi) && p)
            ay_guard_charge(1);
        return p ? p : ay_oom();
    }
    ay_tcache_t *tc = ay_tcache_get();
    /* (the fast path also misses on a head whose link is not an address: a
     * block freed twice, or a link a write after free garbled: the refill's
     * pop of that head reports it, secure.h) */
    if (b && tc && cached_for(tc, tc->heap)) {
        p = tag_live(ay_tcache_refill(tc, b), b);
        if (AY_UNLIKELY(ay_guard_hi) && p)
            ay_guard_charge(ay_bin_len(&tc->bins[b]) + 1); /* what the refill brought in */
    } else {
        p = ay_alloc_uncached(ay_tcache_heap(), size, false);
        if (AY_UNLIKELY(ay_guard_hi))
            ay_guard_charge(1);
    }
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
    if (total <= AY_MAX_BINNED_SIZE) {
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
    case AY_SPAN_SMALL: return s->size - AY_TAG_BYTES;
    case AY_SPAN_LARGE:
    case AY_SPAN_DIRECT: return ay_large_usable(s, p);
    default: return 0;
    }
}

ALLOY_API void *alloy_malloc(size_t size) { return ay_malloc_fast(size); }

ALLOY_API void *alloy_calloc(size_t n, size_t size) { return ay_calloc_in(NULL, n, size); }

ALLOY_API size_t alloy_malloc_usable_size(const void *p) {
    if (AY_UNLIKELY(ay_guard_owns(p)))
        return ay_guard_usable(p, "malloc_usable_size()");
    ay_span_t *s = p ? ay_pagemap_span(p) : NULL;
    return s ? ay_block_usable(s, p) : 0;
}

ALLOY_API const char *alloy_version(void) { return ALLOY_VERSION_STRING; }

ALLOY_API void alloy_thread_flush(void) {
    if (ay_cpu_mode)
        return ay_cpu_flush(); /* every CPU's cache (cpucache.h) */
    ay_tcache_t *tc = ay_tcache_get();
    if (tc && tc->cache_on)
        ay_tcache_flush(tc);
}

ALLOY_API void alloy_purge(void) {
    ay_ensure_init();
    ay_cpu_flush(); /* per-CPU mode: every CPU's cache first (nothing in thread mode) */
    ay_heaps_purge(true);
}
