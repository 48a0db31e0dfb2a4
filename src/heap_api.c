/* SPDX-License-Identifier: MIT */
/* heap_api.c - the explicit-heap API (include/alloy/heap.h): creating and
 * destroying heaps, the malloc family in a given heap, and a thread's
 * default heap.  An explicit heap set as a thread's default is recorded in
 * its thread cache (ay_tcache_set_explicit), which sends every call of that
 * thread to the heap, uncached.
 *
 * Invariants: no heap is destroyed while it is the calling thread's default
 * (EINVAL), nor an automatic heap; a destroyed heap's sampled blocks leave
 * the profiler's live set with it; a thread that chooses an automatic heap
 * is rebound to it and stays there (no NUMA moves); the debug flavour
 * checks that a block given to alloy_heap_free belongs to that heap. */
#include <errno.h>

#include "aligned.h"
#include "alloc.h"
#include "alloy.h"
#include "alloy/heap.h"
#include "error.h"
#include "free.h"
#include "init.h"
#include "prof_store.h"
#include "realloc.h"

ALLOY_API alloy_heap_t *alloy_heap_create(void) {
    ay_ensure_init();
    ay_heap_t *h = ay_heap_create();
    return h ? (alloy_heap_t *)h : ay_oom();
}

ALLOY_API int alloy_heap_destroy(alloy_heap_t *heap) {
    ay_heap_t *h = (ay_heap_t *)heap;
    ay_tcache_t *tc = ay_tcache_get();
    if (!h || (tc && tc->explicit_heap == h))
        return EINVAL;
    int err = ay_heap_destroy(h);
    if (!err)
        ay_prof_forget_heap(h); /* its sampled blocks went with it */
    return err;
}

ALLOY_API void *alloy_heap_malloc(alloy_heap_t *h, size_t size) {
    return ay_alloc_in((ay_heap_t *)h, size);
}

ALLOY_API void *alloy_heap_calloc(alloy_heap_t *h, size_t n, size_t size) {
    return ay_calloc_in((ay_heap_t *)h, n, size);
}

ALLOY_API void *alloy_heap_realloc(alloy_heap_t *h, void *p, size_t size) {
    return ay_realloc_in((ay_heap_t *)h, p, size);
}

ALLOY_API void *alloy_heap_aligned_alloc(alloy_heap_t *h, size_t align, size_t size) {
    if (!ay_is_pow2(align)) {
        errno = EINVAL;
        return NULL;
    }
    return ay_alloc_aligned((ay_heap_t *)h, size, align);
}

ALLOY_API void alloy_heap_free(alloy_heap_t *h, void *p) {
    if (ay_debug >= 1 && p) {
        ay_span_t *s = ay_pagemap_span(p);
        if (s && s->state >= AY_SPAN_SMALL && ay_span_heap(s) != (ay_heap_t *)h)
            ay_fatal_in("alloy_heap_free()", "block belongs to another heap", p);
    }
    alloy_free(p);
}

ALLOY_API alloy_heap_t *alloy_heap_get_default(void) {
    ay_ensure_init();
    return (alloy_heap_t *)ay_tcache_heap();
}

ALLOY_API int alloy_heap_set_default(alloy_heap_t *heap) {
    ay_heap_t *h = (ay_heap_t *)heap;
    ay_ensure_init();
    ay_tcache_t *tc = ay_tcache_get();
    if (!tc)
        return EAGAIN;     /* the thread is exiting */
    if (h && !h->cached) { /* explicit heap: uncached, every call to it */
        ay_tcache_set_explicit(tc, h);
        return 0;
    }
    if (h) {
        ay_tcache_rebind(tc, h);
        tc->heap_chosen = true; /* NUMA moves leave it there (heap.h) */
    }
    ay_tcache_set_explicit(tc, NULL);
    return 0;
}

ALLOY_API unsigned alloy_heap_id(const alloy_heap_t *h) {
    return h ? ((const ay_heap_t *)h)->id : 0;
}

ALLOY_API alloy_heap_t *alloy_heap_from_id(unsigned id) {
    ay_ensure_init();
    return (alloy_heap_t *)ay_heap_use(id); /* the caller will use it: set it up */
}
