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
 * Invariants: a LARGE or DIRECT span holds exactly one block, at
 * ay_large_start; in the secure flavour the pages of a LARGE span outside
 * [open, user_end) are inaccessible, the block is [user, user_end) (open ==
 * user but in a span reused from the guarded cache), a freed one waits in
 * that cache with its guards, and a span is wholly accessible again before
 * it is freed to the page heap's lists; a sampled block's
 * span is given back only when the profiler does not keep it (prof.h). */
#include "large.h"

#include <string.h>

#include "fill.h"
#include "os.h"
#include "prof.h"
#include "secure.h"

/* The secure flavour's large block from the page heap: a span with the
 * block in it, aligned to `align`, and every page of the span before and
 * after the block inaccessible: a guard page (or more) on each side.  A
 * block aligned to a page at most takes a span of the page heap's guarded
 * cache first (pageguard.h), whose accessible pages are npages to a quarter
 * more: the block goes at their end, against the guard after them, and the
 * spare pages before it stay accessible, unused; no system call.  Else a
 * new span of npages pages and at least two more, guarded now (two
 * mprotect calls, or one for a span at either end of its page-heap block,
 * whose mapping has a guard page there already: the block goes against it,
 * and a block of its own keeps its first huge page; when the kernel
 * refuses, the span is a block without guards).  A freed span keeps its guards (ay_large_free). */
static ay_span_t *large_guarded(ay_heap_t *h, uintptr_t npages, size_t align) {
    ay_span_t *s;
    if (align <= AY_PAGE_SIZE &&
        (s = ay_pageheap_guarded_take(&h->pages, npages, npages + npages / 4)) != NULL) {
        s->user = s->user_end - AY_PAGES_BYTES(npages);
        return s;
    }
    uintptr_t slack = align > AY_PAGE_SIZE ? (align >> AY_PAGE_SHIFT) - 1 : 0;
    uintptr_t total = npages + 2 + slack;
    s = ay_pageheap_alloc(&h->pages, total, 1, AY_SPAN_LARGE, 0);
    if (!s)
        return NULL;
    size_t a = align > AY_PAGE_SIZE ? align : AY_PAGE_SIZE;
    uintptr_t user = (s->start + AY_PAGE_SIZE + a - 1) & ~(uintptr_t)(a - 1);
    uintptr_t end = s->start + AY_PAGES_BYTES(total);
    const ay_span_t *b = s->block; /* its mapping has a guard page at each end (ay_chunk_map) */
    if (align <= AY_PAGE_SIZE && s->start == b->start)
        user = s->start; /* the mapping's guard is before it: one mprotect, after */
    else if (align <= AY_PAGE_SIZE && end == b->start + AY_PAGES_BYTES(b->npages))
        user = end - AY_PAGES_BYTES(npages); /* the mapping's guard is after it */
    s->open = s->user = user;
    s->user_end = user + AY_PAGES_BYTES(npages);
    if ((user > s->start && ay_os_guard((void *)s->start, user - s->start, true) != 0) ||
        (end > s->user_end && ay_os_guard((void *)s->user_end, end - s->user_end, true) != 0)) {
        /* refused (counted): a block without guards, the whole span */
        ay_os_guard((void *)s->start, AY_PAGES_BYTES(total), false);
        s->user = s->user_end = s->open = 0;
    }
    return s;
}

void *ay_large_alloc(ay_heap_t *h, size_t size, size_t align, bool zero) {
    if (size > AY_MAX_REQUEST - AY_PAGE_SIZE)
        return NULL;
    uintptr_t npages = (size + AY_PAGE_SIZE - 1) >> AY_PAGE_SHIFT;
    uintptr_t align_pages = align > AY_PAGE_SIZE ? align >> AY_PAGE_SHIFT : 1;
    if (npages == 0)
        npages = 1;
    ay_span_t *s;
    bool known_zero;
    if (ay_secure_guards && npages + align_pages + 1 <= AY_LARGE_MAX_PAGES) {
        s = large_guarded(h, npages, align);
        known_zero = s && !s->dirty;
    } else if (!ay_secure_guards && npages + align_pages - 1 <= AY_LARGE_MAX_PAGES) {
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
    if (s->user && s->npages <= AY_GUARDED_MAX_PAGES) { /* it waits, guards and all */
        ay_pageheap_guarded_keep(s->owner.pages, s);
        return;
    }
    if (s->user) { /* the guards go: the page heap's free spans are all accessible */
        ay_os_guard((void *)s->start, AY_PAGES_BYTES(s->npages), false);
        s->user = s->user_end = s->open = 0;
    }
    ay_pageheap_free(s->owner.pages, s);
}

size_t ay_large_usable(const ay_span_t *s, const void *p) {
    if (s->user)
        return s->user_end - (uintptr_t)p;
    return AY_PAGES_BYTES(s->npages) - ((uintptr_t)p - s->start);
}

bool ay_large_resize_in_place(ay_span_t *s, size_t size) {
    uintptr_t npages = (size + AY_PAGE_SIZE - 1) >> AY_PAGE_SHIFT;
    if (s->user || npages > AY_LARGE_MAX_PAGES)
        return false;
    return ay_pageheap_resize(s->owner.pages, s, npages);
}

void *ay_large_resize(ay_span_t *s, size_t size) {
    size_t bytes = (size + AY_PAGE_SIZE - 1) & ~(AY_PAGE_SIZE - 1);
    return ay_direct_resize(s, bytes) == 0 ? (void *)s->start : NULL;
}
