/* pageheap.c - spans of pages: best fit, split, coalesce, decay (see pageheap.h). */
#include "pageheap.h"

#include "conf.h"
#include "internal.h"
#include "meta.h"
#include "os.h"
#include "pagemap.h"

static unsigned size_index(uintptr_t npages) {
    return npages >= AY_MAX_SPAN_PAGES ? AY_MAX_SPAN_PAGES : (unsigned)npages;
}

void ay_pageheap_init(ay_pageheap_t *ph, struct ay_heap *owner) {
    pthread_mutex_init(&ph->lock, NULL);
    for (unsigned i = 0; i <= AY_MAX_SPAN_PAGES; i++)
        ay_list_init(&ph->free[i]);
    ph->dirty.dprev = ph->dirty.dnext = &ph->dirty;
    ay_list_init(&ph->blocks);
    ay_list_init(&ph->direct);
    ph->heap = owner;
}

/* ---- free-span bookkeeping: size lists, bitmap, decay FIFO, counters ---- */

static void free_insert(ay_pageheap_t *ph, ay_span_t *s, uint64_t now) {
    unsigned i = size_index(s->npages);
    s->state = AY_SPAN_FREE;
    s->heap = ph->heap;
    /* dirty spans first: among spans of one length, reuse pages that are
     * already resident before touching purged or fresh ones */
    if (s->dirty)
        ay_list_push(&ph->free[i], s);
    else
        ay_list_append(&ph->free[i], s);
    ph->nonempty[i / 64] |= (uint64_t)1 << (i % 64);
    if (s->dirty) {
        s->freed_ms = now;
        s->dprev = ph->dirty.dprev; /* append: the FIFO stays sorted by time */
        s->dnext = &ph->dirty;
        ph->dirty.dprev->dnext = s;
        ph->dirty.dprev = s;
        ph->free_dirty_pages += s->npages;
    } else {
        ph->free_clean_pages += s->npages;
    }
    ay_pagemap_set1(s->start, s, 0);
    ay_pagemap_set1(s->start + AY_PAGES_BYTES(s->npages - 1), s, 0);
}

static void free_remove(ay_pageheap_t *ph, ay_span_t *s) {
    unsigned i = size_index(s->npages);
    ay_list_remove(s);
    if (ph->free[i].next == &ph->free[i])
        ph->nonempty[i / 64] &= ~((uint64_t)1 << (i % 64));
    if (s->dirty) {
        s->dprev->dnext = s->dnext;
        s->dnext->dprev = s->dprev;
        s->dprev = s->dnext = NULL;
        ph->free_dirty_pages -= s->npages;
    } else {
        ph->free_clean_pages -= s->npages;
    }
    /* the caller re-registers whatever the pages become */
    ay_pagemap_set1(s->start, NULL, 0);
    ay_pagemap_set1(s->start + AY_PAGES_BYTES(s->npages - 1), NULL, 0);
}

static void span_purge(ay_pageheap_t *ph, ay_span_t *s) {
    /* called on a span already off the lists */
    ay_os_purge((void *)s->start, AY_PAGES_BYTES(s->npages));
    ph->purges++;
    s->dirty = 0;
}

/* Free span s, merged with its free neighbours, goes on the lists. */
static void free_coalesce(ay_pageheap_t *ph, ay_span_t *s, uint64_t now) {
    if (s->dirty && ay_conf.decay_ms == 0)
        span_purge(ph, s); /* only these pages: the neighbours are purged already */
    ay_span_t *left = s->start >= AY_PAGE_SIZE ? ay_pagemap_span((void *)(s->start - AY_PAGE_SIZE)) : NULL;
    if (left && left->state == AY_SPAN_FREE && left->heap == ph->heap &&
        left->start + AY_PAGES_BYTES(left->npages) == s->start) {
        free_remove(ph, left);
        s->start = left->start;
        s->npages += left->npages;
        s->dirty |= left->dirty;
        ay_span_delete(left);
    }
    ay_span_t *right = ay_pagemap_span((void *)(s->start + AY_PAGES_BYTES(s->npages)));
    if (right && right->state == AY_SPAN_FREE && right->heap == ph->heap &&
        right->start == s->start + AY_PAGES_BYTES(s->npages)) {
        free_remove(ph, right);
        s->npages += right->npages;
        s->dirty |= right->dirty;
        ay_span_delete(right);
    }
    free_insert(ph, s, now);
}

/* Dirty free pages kept at most: twice the active pages, and never less than
 * 64 MiB.  It is a safety valve, not the decay policy: a program that frees
 * most of a large heap gets the excess purged at once, even if it then idles
 * without calling the allocator again (there is no background thread by
 * default); a program that only churns keeps its free pages for reuse.  A
 * tighter cap (a quarter of the active pages, 16 MiB) made bench_frag 35%
 * slower: pages purged when it shrinks fault back in when it regrows. */
static size_t dirty_cap(const ay_pageheap_t *ph) {
    size_t floor_pages = ((size_t)64 << 20) >> AY_PAGE_SHIFT;
    return 2 * ph->active_pages > floor_pages ? 2 * ph->active_pages : floor_pages;
}

static void decay_locked(ay_pageheap_t *ph, uint64_t now, int all) {
    int64_t decay = ay_conf.decay_ms;
    if (decay < 0 && !all)
        return; /* -1: never purge, not even above the cap */
    size_t cap = dirty_cap(ph);
    while (ph->dirty.dnext != &ph->dirty) {
        ay_span_t *s = ph->dirty.dnext; /* the oldest */
        if (!all && now - s->freed_ms < (uint64_t)decay && ph->free_dirty_pages <= cap)
            break;
        free_remove(ph, s);
        span_purge(ph, s);
        free_insert(ph, s, now);
    }
}

void ay_pageheap_purge(ay_pageheap_t *ph, int all) {
    pthread_mutex_lock(&ph->lock);
    decay_locked(ph, ay_os_now_ms(), all);
    pthread_mutex_unlock(&ph->lock);
}

/* Map a new block of at least npages pages; it joins the free lists. */
static int grow(ay_pageheap_t *ph, uintptr_t npages, uint64_t now) {
    uintptr_t pages = npages > AY_BLOCK_PAGES ? npages : AY_BLOCK_PAGES;
    void *block = ay_os_map(AY_PAGES_BYTES(pages), AY_PAGE_SIZE);
    if (!block)
        return -1;
    ay_span_t *s = ay_span_new(), *rec = ay_span_new();
    if (!s || !rec || ay_pagemap_ensure((uintptr_t)block, pages) != 0) {
        if (s)
            ay_span_delete(s);
        if (rec)
            ay_span_delete(rec);
        ay_os_unmap(block, AY_PAGES_BYTES(pages));
        return -1;
    }
    rec->start = (uintptr_t)block; /* the block's record, for heap destroy */
    rec->npages = pages;
    ay_list_push(&ph->blocks, rec);
    s->start = (uintptr_t)block;
    s->npages = pages;
    s->dirty = 0; /* fresh pages are not resident until touched */
    ph->mapped_pages += pages;
    free_coalesce(ph, s, now);
    return 0;
}

/* Smallest free span of at least npages pages, or NULL. */
static ay_span_t *best_fit(ay_pageheap_t *ph, uintptr_t npages) {
    for (unsigned i = size_index(npages); i <= AY_MAX_SPAN_PAGES;) {
        uint64_t word = ph->nonempty[i / 64] >> (i % 64);
        if (!word) {
            i = (i / 64 + 1) * 64;
            continue;
        }
        i += (unsigned)__builtin_ctzll(word);
        if (i > AY_MAX_SPAN_PAGES)
            break;
        if (i < AY_MAX_SPAN_PAGES)
            return ph->free[i].next;
        ay_span_t *best = NULL; /* the >= 256 list is unsorted: scan it */
        for (ay_span_t *s = ph->free[i].next; s != &ph->free[i]; s = s->next)
            if (s->npages >= npages &&
                (!best || s->npages < best->npages || (s->npages == best->npages && s->dirty)))
                best = s;
        return best;
    }
    return NULL;
}

/* Split the first `npages` pages off free-list-less span s; the rest goes
 * back to the free lists.  -1 when no record is left for the rest. */
static int split_tail(ay_pageheap_t *ph, ay_span_t *s, uintptr_t npages, uint64_t now) {
    if (s->npages == npages)
        return 0;
    ay_span_t *rest = ay_span_new();
    if (!rest)
        return -1;
    rest->start = s->start + AY_PAGES_BYTES(npages);
    rest->npages = s->npages - npages;
    rest->dirty = s->dirty;
    s->npages = npages;
    free_insert(ph, rest, now);
    return 0;
}

ay_span_t *ay_pageheap_alloc(ay_pageheap_t *ph, uintptr_t npages, uintptr_t align_pages,
                             unsigned state, unsigned bin) {
    uintptr_t want = npages + (align_pages > 1 ? align_pages - 1 : 0);
    uint64_t now = ay_os_now_ms();
    pthread_mutex_lock(&ph->lock);
    ay_span_t *s = best_fit(ph, want);
    if (!s) {
        if (grow(ph, want, now) != 0 || !(s = best_fit(ph, want))) {
            pthread_mutex_unlock(&ph->lock);
            return NULL;
        }
    }
    free_remove(ph, s);
    if (align_pages > 1) {
        uintptr_t align = AY_PAGES_BYTES(align_pages);
        uintptr_t head = (((s->start + align - 1) & ~(align - 1)) - s->start) >> AY_PAGE_SHIFT;
        if (head) {
            ay_span_t *h = ay_span_new();
            if (!h) {
                free_insert(ph, s, now);
                pthread_mutex_unlock(&ph->lock);
                return NULL;
            }
            h->start = s->start;
            h->npages = head;
            h->dirty = s->dirty;
            s->start += AY_PAGES_BYTES(head);
            s->npages -= head;
            free_insert(ph, h, now);
        }
    }
    if (split_tail(ph, s, npages, now) != 0) {
        free_coalesce(ph, s, now);
        pthread_mutex_unlock(&ph->lock);
        return NULL;
    }
    s->state = (uint8_t)state;
    s->heap = ph->heap;
    s->dirty = 0;
    ph->active_pages += npages;
    size_t active = AY_PAGES_BYTES(ph->active_pages) + AY_LOAD(&ph->direct_bytes);
    if (active > ph->peak_active_bytes)
        ph->peak_active_bytes = active;
    ay_pagemap_set(s->start, npages, s, bin);
    decay_locked(ph, now, 0);
    if (ay_debug >= 3)
        ay_pageheap_validate(ph);
    pthread_mutex_unlock(&ph->lock);
    return s;
}

void ay_pageheap_free(ay_pageheap_t *ph, ay_span_t *s) {
    uint64_t now = ay_os_now_ms();
    pthread_mutex_lock(&ph->lock);
    ph->active_pages -= s->npages;
    ay_pagemap_set(s->start, s->npages, NULL, 0);
    s->dirty = 1;
    s->free = NULL;
    s->used = s->capacity = 0;
    free_coalesce(ph, s, now);
    decay_locked(ph, now, 0);
    if (ay_debug >= 3)
        ay_pageheap_validate(ph);
    pthread_mutex_unlock(&ph->lock);
}

/* ---- direct maps ---- */

static void direct_account(ay_pageheap_t *ph, ptrdiff_t delta) {
    size_t d = __atomic_add_fetch(&ph->direct_bytes, (size_t)delta, __ATOMIC_RELAXED);
    if (delta > 0) {
        size_t active = AY_PAGES_BYTES(AY_LOAD(&ph->active_pages)) + d;
        size_t peak = AY_LOAD(&ph->peak_active_bytes);
        while (active > peak &&
               !__atomic_compare_exchange_n(&ph->peak_active_bytes, &peak, active, 1,
                                            __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            ;
    }
}

ay_span_t *ay_direct_alloc(ay_pageheap_t *ph, size_t bytes, size_t align) {
    void *p = ay_os_map(bytes, align);
    if (!p)
        return NULL;
    ay_span_t *s = ay_span_new();
    if (!s || ay_pagemap_ensure((uintptr_t)p, 1) != 0) {
        if (s)
            ay_span_delete(s);
        ay_os_unmap(p, bytes);
        return NULL;
    }
    s->start = (uintptr_t)p;
    s->npages = bytes >> AY_PAGE_SHIFT;
    s->state = AY_SPAN_DIRECT;
    s->heap = ph->heap;
    ay_pagemap_set1(s->start, s, 0);
    pthread_mutex_lock(&ph->lock);
    ay_list_push(&ph->direct, s);
    pthread_mutex_unlock(&ph->lock);
    direct_account(ph, (ptrdiff_t)bytes);
    return s;
}

void ay_direct_free(ay_pageheap_t *ph, ay_span_t *s) {
    size_t bytes = AY_PAGES_BYTES(s->npages);
    pthread_mutex_lock(&ph->lock);
    ay_list_remove(s);
    pthread_mutex_unlock(&ph->lock);
    ay_pagemap_set1(s->start, NULL, 0);
    ay_os_unmap((void *)s->start, bytes);
    direct_account(ph, -(ptrdiff_t)bytes);
    ay_span_delete(s);
}

int ay_direct_resize(ay_pageheap_t *ph, ay_span_t *s, size_t bytes) {
    size_t old = AY_PAGES_BYTES(s->npages);
    void *q = ay_os_remap((void *)s->start, old, bytes, NULL);
    if (!q)
        return -1;
    if (q != (void *)s->start && ay_pagemap_ensure((uintptr_t)q, 1) != 0) {
        /* moved where the map has no leaf and none can be made: move it back,
         * at its old size (the old range is free since the move) */
        ay_os_remap(q, bytes, old, (void *)s->start);
        return -1;
    }
    ay_pagemap_set1(s->start, NULL, 0);
    s->start = (uintptr_t)q;
    s->npages = bytes >> AY_PAGE_SHIFT;
    ay_pagemap_set1(s->start, s, 0);
    direct_account(ph, (ptrdiff_t)bytes - (ptrdiff_t)old);
    return 0;
}

/* ---- invariants ---- */

void ay_pageheap_validate(ay_pageheap_t *ph) {
    size_t dirty = 0, clean = 0;
    for (unsigned i = 1; i <= AY_MAX_SPAN_PAGES; i++) {
        int bit = (ph->nonempty[i / 64] >> (i % 64)) & 1;
        if (bit != (ph->free[i].next != &ph->free[i]))
            ay_fatal("pageheap: bitmap disagrees with list", &ph->free[i]);
        for (ay_span_t *s = ph->free[i].next; s != &ph->free[i]; s = s->next) {
            if (s->state != AY_SPAN_FREE || size_index(s->npages) != i)
                ay_fatal("pageheap: bad span on free list", (void *)s->start);
            if (ay_pagemap_span((void *)s->start) != s ||
                ay_pagemap_span((void *)(s->start + AY_PAGES_BYTES(s->npages - 1))) != s)
                ay_fatal("pageheap: free span not in pagemap", (void *)s->start);
            ay_span_t *r = ay_pagemap_span((void *)(s->start + AY_PAGES_BYTES(s->npages)));
            if (r && r->state == AY_SPAN_FREE && r->heap == ph->heap &&
                r->start == s->start + AY_PAGES_BYTES(s->npages))
                ay_fatal("pageheap: adjacent free spans not merged", (void *)s->start);
            *(s->dirty ? &dirty : &clean) += s->npages;
        }
    }
    size_t fifo = 0;
    for (ay_span_t *s = ph->dirty.dnext; s != &ph->dirty; s = s->dnext) {
        if (!s->dirty || s->state != AY_SPAN_FREE)
            ay_fatal("pageheap: clean span on decay FIFO", (void *)s->start);
        fifo += s->npages;
    }
    if (dirty != ph->free_dirty_pages || clean != ph->free_clean_pages || fifo != dirty ||
        ph->active_pages + dirty + clean != ph->mapped_pages)
        ay_fatal("pageheap: page counters do not add up", ph);
}
