/* malloc.c - the public entry points: the malloc family under alloy_* names
 * and, as aliases, under the libc names.  The small-object paths are the
 * inline fast paths of tcache.h; everything else is a slow path here.
 *
 * Bad input: a size that cannot be met (above PTRDIFF_MAX, or overflowing in
 * calloc/reallocarray) gives NULL with errno ENOMEM; an invalid alignment
 * gives EINVAL; freeing a pointer alloy does not own aborts with a message
 * naming the pointer.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "alloy.h"
#include "alloy/heap.h"
#include "conf.h"
#include "heap.h"
#include "init.h"
#include "pagemap.h"
#include "tcache.h"

#define MAX_REQUEST ((size_t)PTRDIFF_MAX)

/* An explicit heap set as this thread's default (alloy_heap_set_default):
 * while it is set, ay_tc points at the empty cache and every allocation of
 * the thread takes the slow path to this heap. */
static __thread ay_heap_t *heap_override __attribute__((tls_model("initial-exec")));

/* The heap the calling thread allocates from. */
static ay_heap_t *thread_heap(void) {
    if (heap_override)
        return heap_override;
    ay_tcache_t *tc = ay_tcache_get();
    return tc ? tc->heap : ay_heaps[0];
}

/* ---- debugging fills (junk:true, zero:true); they turn the caches off ---- */

static void *fill_new(void *p, size_t usable) {
    if (AY_UNLIKELY(ay_conf.junk || ay_conf.zero) && p)
        memset(p, ay_conf.zero ? 0 : 0xa5, usable);
    return p;
}

static void fill_freed(void *p, size_t usable) {
    if (AY_UNLIKELY(ay_conf.junk))
        memset(p, 0x5a, usable);
}

/* ---- large blocks: whole pages from the page heap, or direct maps ---- */

static void *large_malloc(ay_heap_t *h, size_t size, size_t align) {
    if (size > MAX_REQUEST - AY_PAGE_SIZE)
        return ay_oom();
    uintptr_t npages = (size + AY_PAGE_SIZE - 1) >> AY_PAGE_SHIFT;
    uintptr_t align_pages = align > AY_PAGE_SIZE ? align >> AY_PAGE_SHIFT : 1;
    ay_span_t *s;
    if (npages == 0)
        npages = 1;
    if (npages + align_pages - 1 <= AY_MAX_SPAN_PAGES)
        s = ay_pageheap_alloc(&h->pages, npages, align_pages, AY_SPAN_LARGE, 0);
    else
        s = ay_direct_alloc(&h->pages, npages << AY_PAGE_SHIFT, align_pages << AY_PAGE_SHIFT);
    return s ? fill_new((void *)s->start, npages << AY_PAGE_SHIFT) : ay_oom();
}

/* An allocation that bypasses the thread cache: from heap h's central cache,
 * or its page heap.  align (a power of two) above a page forces pages. */
static void *heap_alloc(ay_heap_t *h, size_t size, size_t align) {
    if (size > MAX_REQUEST)
        return ay_oom();
    unsigned b = align <= AY_PAGE_SIZE ? ay_size_bin(size) : 0;
    if (!b)
        return large_malloc(h, size, align);
    void *head, *tail;
    if (!ay_central_fetch(&h->central[b - 1], 1, &head, &tail))
        return ay_oom();
    return fill_new(head, ay_bin_size[b]);
}

void *ay_malloc_slow(size_t size) {
    ay_ensure_init();
    ay_tcache_t *tc = heap_override ? NULL : ay_tcache_get();
    unsigned b = ay_size_bin(size);
    if (b && tc && tc->cache_on)
        return ay_tcache_refill(tc, b);
    return heap_alloc(thread_heap(), size, 0);
}

/* The debug flavour checks that p is an object boundary and not already free. */
static void debug_check_small_free(ay_span_t *s, void *p) {
    if ((((uintptr_t)p - s->start) % s->size) != 0 || (uintptr_t)p >= s->limit)
        ay_fatal("free(): pointer is not the start of a block", p);
    if (ay_tcache_contains(s->cls + 1, p))
        ay_fatal("free(): double free (block is in the thread cache)", p);
    ay_central_t *c = &s->heap->central[s->cls];
    ay_central_lock(c);
    int found = (uintptr_t)p >= s->bump;
    for (void *q = s->free; q && !found; q = *(void **)q)
        found = q == p;
    ay_central_unlock(c);
    if (found)
        ay_fatal("free(): double free (block is in the central cache)", p);
}

void ay_free_slow(void *p) {
    if (!p)
        return;
    ay_span_t *s = ay_pagemap_span(p);
    if (AY_UNLIKELY(!s))
        ay_fatal("free(): invalid pointer, not allocated by alloy", p);
    switch (s->state) {
    case AY_SPAN_SMALL: {
        if (ay_debug >= 3)
            debug_check_small_free(s, p);
        ay_tcache_t *tc = s->heap->cached ? ay_tcache_get() : NULL;
        if (tc && tc->cache_on) {
            ay_tcache_push_overflow(tc, s->cls + 1u, p);
        } else {
            fill_freed(p, s->size);
            ay_central_release(s->cls, p, 1);
        }
        return;
    }
    case AY_SPAN_LARGE:
        if ((uintptr_t)p != s->start)
            ay_fatal("free(): pointer is not the start of a block", p);
        fill_freed(p, (size_t)s->npages << AY_PAGE_SHIFT);
        ay_pageheap_free(&s->heap->pages, s);
        return;
    case AY_SPAN_DIRECT:
        if ((uintptr_t)p != s->start)
            ay_fatal("free(): pointer is not the start of a block", p);
        ay_direct_free(&s->heap->pages, s);
        return;
    default:
        ay_fatal("free(): double free or invalid pointer", p);
    }
}

/* ---- the public API ---- */

ALLOY_API void *alloy_malloc(size_t size) { return ay_malloc_fast(size); }

ALLOY_API void alloy_free(void *p) {
    if (ay_debug >= 3)
        return ay_free_slow(p);
    ay_free_fast(p);
}

ALLOY_API size_t alloy_malloc_usable_size(const void *p) {
    ay_span_t *s = p ? ay_pagemap_span(p) : NULL;
    if (!s)
        return 0;
    switch (s->state) {
    case AY_SPAN_SMALL:
        return s->size;
    case AY_SPAN_LARGE:
    case AY_SPAN_DIRECT:
        return ((size_t)s->npages << AY_PAGE_SHIFT) - ((uintptr_t)p - s->start);
    default:
        return 0;
    }
}

ALLOY_API void *alloy_calloc(size_t n, size_t size) {
    size_t total;
    if (__builtin_mul_overflow(n, size, &total))
        return ay_oom();
    void *p = ay_malloc_fast(total);
    if (!p)
        return NULL;
    ay_span_t *s = total > AY_MAX_SMALL_SIZE ? ay_pagemap_span(p) : NULL;
    if (!s || s->state != AY_SPAN_DIRECT) /* fresh direct maps are zero */
        memset(p, 0, total);
    return p;
}

/* Can p (of span s) hold `size` bytes where it is, without wasting more than
 * half of its block? */
static int fits_in_place(ay_span_t *s, size_t usable, size_t size) {
    if (s->state == AY_SPAN_SMALL)
        return size <= usable && (size > usable / 2 || ay_size_bin(size) == s->cls + 1u);
    if (s->state == AY_SPAN_LARGE)
        return size > AY_MAX_SMALL_SIZE && size <= usable && size > usable / 2;
    return 0;
}

/* Allocate size bytes aligned to align (a power of two) from heap h, or,
 * when h is NULL, from wherever the thread's malloc goes. */
static void *alloc_in(ay_heap_t *h, size_t size, size_t align) {
    if (size > MAX_REQUEST - align)
        return ay_oom();
    size_t request = size;
    if (align > 8) {
        size_t rounded = (size + align - 1) & ~(align - 1);
        request = 0;
        if (rounded == 0)
            rounded = align;
        /* objects of class S sit at page start + k*S: any class whose size
         * is a multiple of align gives aligned blocks */
        if (align <= AY_PAGE_SIZE && rounded <= AY_MAX_SMALL_SIZE)
            for (unsigned c = ay_policy_size_class(rounded); c < AY_NUM_CLASSES && !request; c++)
                if (ay_policy_class_size(c) % align == 0)
                    request = ay_policy_class_size(c);
        if (!request) {
            ay_ensure_init();
            return large_malloc(h ? h : thread_heap(), rounded, align);
        }
    }
    if (h) {
        ay_ensure_init();
        ay_tcache_t *tc = heap_override ? NULL : ay_tcache_get();
        if (!tc || tc->heap != h || !tc->cache_on)
            return heap_alloc(h, request, 0); /* another heap: uncached */
    }
    return ay_malloc_fast(request);
}

/* realloc, with the new block (if any) from heap h (NULL: as malloc does). */
static void *realloc_in(ay_heap_t *h, void *p, size_t size) {
    if (!p)
        return alloc_in(h, size, 1);
    if (size == 0) { /* glibc: free and return NULL */
        alloy_free(p);
        return NULL;
    }
    if (size > MAX_REQUEST)
        return ay_oom();
    ay_span_t *s = ay_pagemap_span(p);
    if (!s || s->state < AY_SPAN_SMALL)
        ay_fatal("realloc(): invalid pointer, not allocated by alloy", p);
    size_t usable = alloy_malloc_usable_size(p);
    if ((!h || s->heap == h) && fits_in_place(s, usable, size))
        return p;
    if (s->state == AY_SPAN_DIRECT && (!h || s->heap == h) && (uintptr_t)p == s->start &&
        size > ((size_t)AY_MAX_SPAN_PAGES << AY_PAGE_SHIFT)) {
        size_t bytes = (size + AY_PAGE_SIZE - 1) & ~(AY_PAGE_SIZE - 1);
        if (ay_direct_resize(&s->heap->pages, s, bytes) == 0)
            return (void *)s->start;
    }
    /* a block that grows gets an eighth more room, so that a string or
     * buffer growing a little at a time moves O(log n) times, not at every
     * class boundary (classes are only 16 bytes apart below 1 KiB) */
    size_t want = size > usable && size <= MAX_REQUEST - size / 8 ? size + size / 8 : size;
    void *q = alloc_in(h, want, 1);
    if (!q)
        return NULL; /* p is untouched */
    memcpy(q, p, usable < size ? usable : size);
    alloy_free(p);
    return q;
}

ALLOY_API void *alloy_realloc(void *p, size_t size) { return realloc_in(NULL, p, size); }

ALLOY_API void *alloy_reallocarray(void *p, size_t n, size_t size) {
    size_t total;
    if (__builtin_mul_overflow(n, size, &total))
        return ay_oom();
    return alloy_realloc(p, total);
}

static void *aligned_malloc(size_t align, size_t size) { return alloc_in(NULL, size, align); }

static int is_pow2(size_t x) { return x && !(x & (x - 1)); }

ALLOY_API int alloy_posix_memalign(void **out, size_t align, size_t size) {
    if (!is_pow2(align) || align < sizeof(void *))
        return EINVAL;
    int saved = errno;
    void *p = aligned_malloc(align, size);
    if (!p) {
        errno = saved;
        return ENOMEM;
    }
    *out = p;
    return 0;
}

ALLOY_API void *alloy_aligned_alloc(size_t align, size_t size) {
    if (!is_pow2(align)) {
        errno = EINVAL;
        return NULL;
    }
    return aligned_malloc(align, size);
}

ALLOY_API void *alloy_memalign(size_t align, size_t size) {
    if (align > ((size_t)1 << (sizeof(size_t) * 8 - 2))) {
        errno = EINVAL;
        return NULL;
    }
    size_t a = 1; /* glibc rounds a non-power-of-two alignment up */
    while (a < align)
        a <<= 1;
    return aligned_malloc(a, size);
}

ALLOY_API void *alloy_valloc(size_t size) { return aligned_malloc(AY_PAGE_SIZE, size); }

ALLOY_API void *alloy_pvalloc(size_t size) {
    if (size > MAX_REQUEST - AY_PAGE_SIZE)
        return ay_oom();
    size_t rounded = (size + AY_PAGE_SIZE - 1) & ~(AY_PAGE_SIZE - 1);
    return aligned_malloc(AY_PAGE_SIZE, rounded ? rounded : AY_PAGE_SIZE);
}

ALLOY_API void alloy_free_sized(void *p, size_t size) {
    if (ay_debug >= 3 && p && size > alloy_malloc_usable_size(p))
        ay_fatal("free_sized(): size larger than the block", p);
    alloy_free(p);
}

ALLOY_API void alloy_free_aligned_sized(void *p, size_t align, size_t size) {
    if (ay_debug >= 3 && p && ((uintptr_t)p & (align - 1)))
        ay_fatal("free_aligned_sized(): pointer not aligned as stated", p);
    alloy_free_sized(p, size);
}

ALLOY_API const char *alloy_version(void) { return ALLOY_VERSION_STRING; }

ALLOY_API void alloy_thread_flush(void) {
    ay_tcache_t *tc = ay_tcache_get();
    if (tc && tc->cache_on)
        ay_tcache_flush(tc);
}

ALLOY_API void alloy_purge(void) {
    ay_ensure_init();
    for (unsigned i = 0; i < ay_heaps_limit; i++) {
        ay_heap_t *h = ay_heap_get(i);
        if (h)
            ay_pageheap_purge(&h->pages, 1);
    }
}

/* ---- explicit heaps (include/alloy/heap.h) ---- */

ALLOY_API alloy_heap_t *alloy_heap_create(void) {
    ay_ensure_init();
    ay_heap_t *h = ay_heap_create();
    return h ? (alloy_heap_t *)h : ay_oom();
}

ALLOY_API int alloy_heap_destroy(alloy_heap_t *heap) {
    ay_heap_t *h = (ay_heap_t *)heap;
    if (!h || h == heap_override)
        return EINVAL;
    return ay_heap_destroy(h);
}

ALLOY_API void *alloy_heap_malloc(alloy_heap_t *h, size_t size) {
    return alloc_in((ay_heap_t *)h, size, 1);
}

ALLOY_API void *alloy_heap_calloc(alloy_heap_t *h, size_t n, size_t size) {
    size_t total;
    if (__builtin_mul_overflow(n, size, &total))
        return ay_oom();
    void *p = alloc_in((ay_heap_t *)h, total, 1);
    if (p)
        memset(p, 0, total);
    return p;
}

ALLOY_API void *alloy_heap_realloc(alloy_heap_t *h, void *p, size_t size) {
    return realloc_in((ay_heap_t *)h, p, size);
}

ALLOY_API void *alloy_heap_aligned_alloc(alloy_heap_t *h, size_t align, size_t size) {
    if (!is_pow2(align)) {
        errno = EINVAL;
        return NULL;
    }
    return alloc_in((ay_heap_t *)h, size, align);
}

ALLOY_API void alloy_heap_free(alloy_heap_t *h, void *p) {
    if (ay_debug >= 1 && p) {
        ay_span_t *s = ay_pagemap_span(p);
        if (s && s->heap != (ay_heap_t *)h)
            ay_fatal("alloy_heap_free(): block belongs to another heap", p);
    }
    alloy_free(p);
}

ALLOY_API alloy_heap_t *alloy_heap_get_default(void) {
    ay_ensure_init();
    return (alloy_heap_t *)thread_heap();
}

ALLOY_API int alloy_heap_set_default(alloy_heap_t *heap) {
    ay_heap_t *h = (ay_heap_t *)heap;
    ay_ensure_init();
    ay_tcache_t *tc = ay_tcache_get();
    if (!tc)
        return EAGAIN; /* the thread is exiting */
    if (h && !h->cached) { /* explicit heap: uncached, every call to it */
        heap_override = h;
        ay_tcache_route(tc, 0);
        return 0;
    }
    heap_override = NULL;
    if (h)
        ay_tcache_rebind(tc, h);
    ay_tcache_route(tc, 1);
    return 0;
}

ALLOY_API unsigned alloy_heap_id(const alloy_heap_t *h) {
    return h ? ((const ay_heap_t *)h)->id : 0;
}

ALLOY_API alloy_heap_t *alloy_heap_from_id(unsigned id) {
    ay_ensure_init();
    return (alloy_heap_t *)ay_heap_get(id);
}

/* ---- the libc names ---- */

#define ALIAS(name) __attribute__((alias(name), visibility("default"), used))
void *malloc(size_t size) ALIAS("alloy_malloc");
void free(void *p) ALIAS("alloy_free");
void *calloc(size_t n, size_t size) ALIAS("alloy_calloc");
void *realloc(void *p, size_t size) ALIAS("alloy_realloc");
void *reallocarray(void *p, size_t n, size_t size) ALIAS("alloy_reallocarray");
int posix_memalign(void **out, size_t align, size_t size) ALIAS("alloy_posix_memalign");
void *aligned_alloc(size_t align, size_t size) ALIAS("alloy_aligned_alloc");
void *memalign(size_t align, size_t size) ALIAS("alloy_memalign");
void *valloc(size_t size) ALIAS("alloy_valloc");
void *pvalloc(size_t size) ALIAS("alloy_pvalloc");
size_t malloc_usable_size(void *p) ALIAS("alloy_malloc_usable_size");
void free_sized(void *p, size_t size) ALIAS("alloy_free_sized");
void free_aligned_sized(void *p, size_t align, size_t size) ALIAS("alloy_free_aligned_sized");
void cfree(void *p) ALIAS("alloy_free");
