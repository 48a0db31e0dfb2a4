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
#include "conf.h"
#include "heap.h"
#include "init.h"
#include "pagemap.h"
#include "tcache.h"

#define MAX_REQUEST ((size_t)PTRDIFF_MAX)

static ay_heap_t *thread_heap(void) { return &ay_heap_main; }

/* ---- large blocks: whole pages from the page heap, or direct maps ---- */

static void *large_malloc(size_t size, size_t align) {
    if (size > MAX_REQUEST - AY_PAGE_SIZE) {
        errno = ENOMEM;
        return NULL;
    }
    uintptr_t npages = (size + AY_PAGE_SIZE - 1) >> AY_PAGE_SHIFT;
    uintptr_t align_pages = align > AY_PAGE_SIZE ? align >> AY_PAGE_SHIFT : 1;
    ay_heap_t *h = thread_heap();
    ay_span_t *s;
    if (npages == 0)
        npages = 1;
    if (npages + align_pages - 1 <= AY_MAX_SPAN_PAGES)
        s = ay_pageheap_alloc(&h->pages, npages, align_pages, AY_SPAN_LARGE, 0);
    else
        s = ay_direct_alloc(&h->pages, npages << AY_PAGE_SHIFT, align_pages << AY_PAGE_SHIFT);
    if (!s) {
        errno = ENOMEM;
        return NULL;
    }
    return (void *)s->start;
}

/* ---- uncached small blocks: threads without a cache ---- */

static void *uncached_malloc(unsigned b) {
    void *head, *tail;
    if (!ay_central_fetch(&thread_heap()->central[b - 1], 1, &head, &tail)) {
        errno = ENOMEM;
        return NULL;
    }
    return head;
}

void *ay_malloc_slow(size_t size) {
    ay_ensure_init();
    unsigned b = ay_size_bin(size);
    if (b == 0) {
        if (size > MAX_REQUEST) {
            errno = ENOMEM;
            return NULL;
        }
        return large_malloc(size, AY_PAGE_SIZE);
    }
    ay_tcache_t *tc = ay_tcache_get();
    return tc ? ay_tcache_refill(tc, b) : uncached_malloc(b);
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
        ay_tcache_t *tc = ay_tcache_get();
        if (tc)
            ay_tcache_push_overflow(tc, s->cls + 1u, p);
        else
            ay_central_release(&s->heap->central[s->cls], p, 1);
        return;
    }
    case AY_SPAN_LARGE:
        if ((uintptr_t)p != s->start)
            ay_fatal("free(): pointer is not the start of a block", p);
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
    if (__builtin_mul_overflow(n, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
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
        return size <= usable && ay_size_bin(size) == s->cls + 1u;
    if (s->state == AY_SPAN_LARGE)
        return size > AY_MAX_SMALL_SIZE && size <= usable && size > usable / 2;
    return 0;
}

ALLOY_API void *alloy_realloc(void *p, size_t size) {
    if (!p)
        return alloy_malloc(size);
    if (size == 0) { /* glibc: free and return NULL */
        alloy_free(p);
        return NULL;
    }
    if (size > MAX_REQUEST) {
        errno = ENOMEM;
        return NULL;
    }
    ay_span_t *s = ay_pagemap_span(p);
    if (!s || s->state < AY_SPAN_SMALL)
        ay_fatal("realloc(): invalid pointer, not allocated by alloy", p);
    size_t usable = alloy_malloc_usable_size(p);
    if (fits_in_place(s, usable, size))
        return p;
    if (s->state == AY_SPAN_DIRECT && (uintptr_t)p == s->start &&
        size > ((size_t)AY_MAX_SPAN_PAGES << AY_PAGE_SHIFT)) {
        size_t bytes = (size + AY_PAGE_SIZE - 1) & ~(AY_PAGE_SIZE - 1);
        if (ay_direct_resize(&s->heap->pages, s, bytes) == 0)
            return (void *)s->start;
    }
    void *q = alloy_malloc(size);
    if (!q)
        return NULL; /* p is untouched */
    memcpy(q, p, usable < size ? usable : size);
    alloy_free(p);
    return q;
}

ALLOY_API void *alloy_reallocarray(void *p, size_t n, size_t size) {
    size_t total;
    if (__builtin_mul_overflow(n, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    return alloy_realloc(p, total);
}

/* Aligned allocation for align a power of two. */
static void *aligned_malloc(size_t align, size_t size) {
    if (align <= 8)
        return alloy_malloc(size);
    if (size > MAX_REQUEST - align) {
        errno = ENOMEM;
        return NULL;
    }
    size_t rounded = (size + align - 1) & ~(align - 1);
    if (rounded == 0)
        rounded = align;
    if (align <= AY_PAGE_SIZE && rounded <= AY_MAX_SMALL_SIZE) {
        /* objects of class S sit at page start + k*S: any class whose size
         * is a multiple of align gives aligned blocks */
        for (unsigned c = ay_policy_size_class(rounded); c < AY_NUM_CLASSES; c++)
            if (ay_policy_class_size(c) % align == 0)
                return alloy_malloc(ay_policy_class_size(c));
    }
    ay_ensure_init();
    return large_malloc(rounded, align);
}

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
    if (size > MAX_REQUEST - AY_PAGE_SIZE) {
        errno = ENOMEM;
        return NULL;
    }
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
    if (tc)
        ay_tcache_flush(tc);
}

ALLOY_API void alloy_purge(void) {
    ay_ensure_init();
    ay_pageheap_purge(&ay_heap_main.pages, 1);
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
