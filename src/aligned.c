/* SPDX-License-Identifier: MIT */
/* aligned.c - the aligned family: alloy_posix_memalign, alloy_aligned_alloc,
 * alloy_memalign, alloy_valloc, alloy_pvalloc (see aligned.h).
 *
 * Objects of class S sit at page start + k*S, so any class whose size is a
 * multiple of the alignment gives aligned blocks: up to a page, an aligned
 * request is served from the smallest such class.  Larger alignments, and
 * sizes above the classes, get whole pages.
 *
 * Invariants: every block returned is aligned to the alignment asked for
 * (the classes' objects start at span start + k * S, spans are page-aligned,
 * and whole-page blocks are aligned by the page heap or the direct map);
 * posix_memalign leaves errno as it found it and returns its error; bad
 * alignments get EINVAL before anything is allocated. */
#include "aligned.h"

#include <errno.h>

#include "alloc.h"
#include "alloy.h"
#include "init.h"
#include "large.h"

/* The smallest class that holds `size` bytes (and the secure flavour's
 * tag) and whose size is a multiple of align (a power of two, at most a
 * page): the request size that malloc maps to it; 0 when there is none. */
static size_t aligned_class_size(size_t size, size_t align) {
    for (unsigned c = ay_policy_size_class(size + AY_TAG_BYTES); c < AY_NUM_CLASSES; c++)
        if (ay_policy_class_size(c) % align == 0)
            return ay_policy_class_size(c) - AY_TAG_BYTES; /* a request that maps to class c */
    return 0;
}

size_t ay_aligned_request(size_t size, size_t align) {
    size_t rounded = (size + align - 1) & ~(align - 1);
    if (rounded == 0)
        rounded = align;
    return align <= AY_PAGE_SIZE && rounded <= AY_MAX_BINNED_SIZE
               ? aligned_class_size(rounded, align)
               : 0;
}

void *ay_alloc_aligned(ay_heap_t *h, size_t size, size_t align) {
    if (align <= 8)
        return ay_alloc_in(h, size);
    if (size > AY_MAX_REQUEST - align)
        return ay_oom();
    size_t rounded = (size + align - 1) & ~(align - 1);
    if (rounded == 0)
        rounded = align;
    size_t request = ay_aligned_request(size, align);
    if (request)
        return ay_alloc_in(h, request);
    ay_ensure_init();
    ay_heap_t *in = h ? h : ay_tcache_heap();
    void *p = ay_prof_count(rounded) ? ay_alloc_sampled(in, rounded, align, false)
                                     : ay_large_alloc(in, rounded, align, false);
    return p ? p : ay_oom();
}

ALLOY_API int alloy_posix_memalign(void **out, size_t align, size_t size) {
    if (!ay_is_pow2(align) || align < sizeof(void *))
        return EINVAL;
    int saved = errno;
    void *p = ay_alloc_aligned(NULL, size, align);
    if (!p) {
        errno = saved;
        return ENOMEM;
    }
    *out = p;
    return 0;
}

ALLOY_API void *alloy_aligned_alloc(size_t align, size_t size) {
    if (!ay_is_pow2(align)) {
        errno = EINVAL;
        return NULL;
    }
    return ay_alloc_aligned(NULL, size, align);
}

ALLOY_API void *alloy_memalign(size_t align, size_t size) {
    if (align > ((size_t)1 << (sizeof(size_t) * 8 - 2))) {
        errno = EINVAL;
        return NULL;
    }
    size_t a = 1; /* glibc rounds a non-power-of-two alignment up */
    while (a < align)
        a <<= 1;
    return ay_alloc_aligned(NULL, size, a);
}

ALLOY_API void *alloy_valloc(size_t size) { return ay_alloc_aligned(NULL, size, AY_PAGE_SIZE); }

ALLOY_API void *alloy_pvalloc(size_t size) {
    if (size > AY_MAX_REQUEST - AY_PAGE_SIZE)
        return ay_oom();
    size_t rounded = (size + AY_PAGE_SIZE - 1) & ~(AY_PAGE_SIZE - 1);
    return ay_alloc_aligned(NULL, rounded ? rounded : AY_PAGE_SIZE, AY_PAGE_SIZE);
}
