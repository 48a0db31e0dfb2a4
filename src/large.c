/* SPDX-License-Identifier: MIT */
/* large.c - blocks above 32 KiB, blocks aligned to more than a page, and
 * heap-profiler samples of any size: whole pages from the heap's page heap
 * up to AY_LARGE_MAX_PAGES (32 MiB, a LARGE span), so that freed large
 * blocks are reused; a direct map above (see direct.h), which realloc can
 * resize with mremap.
 *
 * calloc asks for zeroed memory: pages that are fresh from the OS or were
 * purged read as zero already, so only pages that may hold old data are
 * cleared.  That saves a write to every page of a fresh block, which is a
 * page fault each.
 *
 * Every flavour lays the blocks out alike: a block has no guard page of its
 * own.  In the secure flavour the page heap's blocks and the direct maps
 * have a guard page at each end of their mapping (ay_os_map_chunk, os.h),
 * and a write past a large block's end by memcpy, memset and their kin
 * aborts (checked.c), as it does for a small block.
 *
 * Invariants: a LARGE or DIRECT span holds exactly one block, which starts
 * at the span's first page and may use all its pages; a sampled block's
 * span is given back only when the profiler does not keep it (prof.h). */
#include "large.h"

#include <string.h>

#include "fill.h"
#include "prof.h"

void *ay_large_alloc(ay_heap_t *h, size_t size, size_t align, bool zero) {
    if (size > AY_MAX_REQUEST - AY_PAGE_SIZE)
        return NULL;
    uintptr_t npages = (size + AY_PAGE_SIZE - 1) >> AY_PAGE_SHIFT;
    uintptr_t align_pages = align > AY_PAGE_SIZE ? align >> AY_PAGE_SHIFT : 1;
    if (npages == 0)
        npages = 1;
    ay_span_t *s;
    bool known_zero;
    if (npages + align_pages - 1 <= AY_LARGE_MAX_PAGES) {
        s = ay_pageheap_alloc(&h->pages, npages, align_pages, AY_SPAN_LARGE, 0);
        known_zero = s && !s->dirty;
    } else {
        s = ay_direct_alloc(&h->direct, AY_PAGES_BYTES(npages), AY_PAGES_BYTES(align_pages));
        known_zero = true;
    }
    if (!s)
        return NULL;
    void *p = (void *)ay_large_start(s);
    if (!zero)
        return ay_fill_new(p, ay_large_usable(s, p)); /* (the page heap may round npages up) */
    if (!known_zero)
        memset(p, 0, ay_large_usable(s, p));
    return p;
}

void ay_large_free(ay_span_t *s, void *p) {
    if (AY_UNLIKELY(s->prof != NULL) && ay_prof_release(s))
        return; /* a sampled block's page, kept for the next sample (prof.h) */
    if (s->state == AY_SPAN_DIRECT) {
        ay_direct_free(s);
        return;
    }
    ay_fill_freed(p, ay_large_usable(s, p));
    ay_pageheap_free(s->owner.pages, s);
}

size_t ay_large_usable(const ay_span_t *s, const void *p) {
    return AY_PAGES_BYTES(s->npages) - ((uintptr_t)p - s->start);
}

bool ay_large_resize_in_place(ay_span_t *s, size_t size) {
    uintptr_t npages = (size + AY_PAGE_SIZE - 1) >> AY_PAGE_SHIFT;
    if (npages > AY_LARGE_MAX_PAGES)
        return false;
    return ay_pageheap_resize(s->owner.pages, s, npages);
}

void *ay_large_resize(ay_span_t *s, size_t size) {
    size_t bytes = (size + AY_PAGE_SIZE - 1) & ~(AY_PAGE_SIZE - 1);
    return ay_direct_resize(s, bytes) == 0 ? (void *)s->start : NULL;
}
