/* SPDX-License-Identifier: MIT */
/* pagelist.c - the page heap's free spans: the reserve of span records,
 * the size lists and their bitmap, the decay FIFO, best fit, split and
 * merge (see pagelist.h).  Nothing here makes a system call. */
#include "pagelist.h"

#include <string.h>

#include "error.h"
#include "meta.h"
#include "pagemap.h"

#define SPARE_MAX 16 /* records the reserve keeps at most */

/* ---- span records: a reserve, so that no record is made under the lock ---- */

ay_span_t *ay_pagelist_record_take(ay_pageheap_t *ph) {
    ay_span_t *s = ph->spare;
    ph->spare = s->next;
    AY_STORE(&ph->nspare, ph->nspare - 1);
    memset(s, 0, sizeof *s);
    return s;
}

void ay_pagelist_record_give(ay_pageheap_t *ph, ay_span_t *s) {
    if (ph->nspare >= SPARE_MAX) {
        ay_span_delete(s);
        return;
    }
    s->state = AY_SPAN_DEAD;
    s->next = ph->spare;
    ph->spare = s;
    AY_STORE(&ph->nspare, ph->nspare + 1);
}

bool ay_pagelist_reserve(ay_pageheap_t *ph) {
    while (AY_LOAD(&ph->nspare) < AY_RECORDS_NEEDED) {
        ay_span_t *s = ay_span_new();
        if (!s)
            return false;
        ay_pagelist_lock(ph);
        ay_pagelist_record_give(ph, s);
        ay_pagelist_unlock(ph);
    }
    return true;
}

/* ---- free-span bookkeeping: size lists, bitmap, decay FIFO, counters ---- */

void ay_pagelist_insert(ay_pageheap_t *ph, ay_span_t *s, uint64_t now) {
    unsigned i = ay_pagelist_index(s->npages);
    s->state = AY_SPAN_FREE;
    s->owner.pages = ph;
    /* dirty spans first: among spans of one length, reuse pages that are
     * already resident before touching purged or fresh ones */
    if (s->dirty || !ph->first[i]) { /* at the front */
        s->prev = NULL;
        s->next = ph->first[i];
        *(s->next ? &s->next->prev : &ph->last[i]) = s;
        ph->first[i] = s;
    } else { /* at the back */
        s->next = NULL;
        s->prev = ph->last[i];
        ph->last[i]->next = s;
        ph->last[i] = s;
    }
    ph->nonempty[i / 64] |= (uint64_t)1 << (i % 64);
    ph->kept_pages += s->kept ? s->npages : 0;
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

void ay_pagelist_unlist(ay_pageheap_t *ph, ay_span_t *s, bool map_stays) {
    unsigned i = ay_pagelist_index(s->npages);
    *(s->prev ? &s->prev->next : &ph->first[i]) = s->next;
    *(s->next ? &s->next->prev : &ph->last[i]) = s->prev;
    s->prev = s->next = NULL;
    if (!ph->first[i])
        ph->nonempty[i / 64] &= ~((uint64_t)1 << (i % 64));
    ph->kept_pages -= s->kept ? s->npages : 0;
    if (s->dirty) {
        s->dprev->dnext = s->dnext;
        s->dnext->dprev = s->dprev;
        s->dprev = s->dnext = NULL;
        ph->free_dirty_pages -= s->npages;
    } else {
        ph->free_clean_pages -= s->npages;
    }
    if (!map_stays) {
        if (s->kept && s->npages > 2)
            ay_pagemap_set(s->start + AY_PAGE_SIZE, s->npages - 2, NULL, 0);
        ay_pagemap_set1(s->start, NULL, 0);
        ay_pagemap_set1(s->start + AY_PAGES_BYTES(s->npages - 1), NULL, 0);
    }
    s->kept = 0;
}

void ay_pagelist_remove(ay_pageheap_t *ph, ay_span_t *s) { ay_pagelist_unlist(ph, s, false); }

/* Is n, a neighbour of a span of this page heap, a free span (kept or not,
 * as kept_too says)?  Its state and kept are read a byte at a time: a
 * neighbour may be SMALL, whose central cache writes cls, beside them in the
 * same word, under its own lock (a wider load would race with that write). */
static bool is_free_span(const ay_span_t *n, bool kept_too) {
    return AY_LOAD(&n->state) == AY_SPAN_FREE && (kept_too || !AY_LOAD(&n->kept));
}

/* The free span whose last page is just before s, in s's block, or NULL; a
 * kept span (pagekeep.h) does not count.  Only pages of s's block are
 * looked at: they and their records are ph's. */
static ay_span_t *free_left(const ay_span_t *s) {
    if (s->start == s->block->start)
        return NULL;
    ay_span_t *n = ay_pagemap_span((void *)(s->start - AY_PAGE_SIZE));
    return n && is_free_span(n, false) ? n : NULL;
}

ay_span_t *ay_pagelist_next_free(const ay_span_t *s, bool kept_too) {
    uintptr_t end = ay_pagelist_end(s);
    if (end == ay_pagelist_end(s->block))
        return NULL;
    ay_span_t *n = ay_pagemap_span((void *)end);
    return n && is_free_span(n, kept_too) && n->start == end ? n : NULL;
}

void ay_pagelist_coalesce(ay_pageheap_t *ph, ay_span_t *s, uint64_t now) {
    ay_span_t *left = free_left(s);
    if (left) {
        ay_pagelist_remove(ph, left);
        s->start = left->start;
        s->npages += left->npages;
        s->dirty |= left->dirty;
        ay_pagelist_record_give(ph, left);
    }
    ay_span_t *right = ay_pagelist_next_free(s, false);
    if (right) {
        ay_pagelist_remove(ph, right);
        s->npages += right->npages;
        s->dirty |= right->dirty;
        ay_pagelist_record_give(ph, right);
    }
    ay_pagelist_insert(ph, s, now);
}

ay_span_t *ay_pagelist_best_fit(ay_pageheap_t *ph, uintptr_t npages, bool dirty_only) {
    for (unsigned i = ay_pagelist_index(npages); i <= AY_MAX_SPAN_PAGES; i++) {
        uint64_t word = ph->nonempty[i / 64] >> (i % 64);
        if (!word) {
            i = (i / 64 + 1) * 64 - 1;
            continue;
        }
        i += (unsigned)__builtin_ctzll(word);
        if (i > AY_MAX_SPAN_PAGES)
            break;
        if (i < AY_MAX_SPAN_PAGES) {
            if (!dirty_only || ph->first[i]->dirty)
                return ph->first[i];
            continue;
        }
        ay_span_t *best = NULL; /* the >= 256 list is unsorted: scan it */
        for (ay_span_t *s = ph->first[i]; s; s = s->next)
            if (s->npages >= npages && (!dirty_only || s->dirty) &&
                (!best || s->npages < best->npages || (s->npages == best->npages && s->dirty)))
                best = s;
        return best;
    }
    return NULL;
}

void ay_pagelist_piece_insert(ay_pageheap_t *ph, ay_span_t *piece, bool was_kept, uint64_t now) {
    if (was_kept)
        ay_pagelist_coalesce(ph, piece, now);
    else
        ay_pagelist_insert(ph, piece, now);
}

void ay_pagelist_split_head(ay_pageheap_t *ph, ay_span_t *s, uintptr_t pages, bool was_kept,
                            uint64_t now) {
    ay_span_t *h = ay_pagelist_record_take(ph);
    h->start = s->start;
    h->npages = pages;
    h->dirty = s->dirty;
    h->block = s->block;
    s->start += AY_PAGES_BYTES(pages);
    s->npages -= pages;
    ay_pagelist_piece_insert(ph, h, was_kept, now);
}

void ay_pagelist_split_tail(ay_pageheap_t *ph, ay_span_t *s, uintptr_t pages, bool was_kept,
                            uint64_t now) {
    ay_span_t *rest = ay_pagelist_record_take(ph);
    rest->start = s->start + AY_PAGES_BYTES(pages);
    rest->npages = s->npages - pages;
    rest->dirty = s->dirty;
    rest->block = s->block;
    s->npages = pages;
    ay_pagelist_piece_insert(ph, rest, was_kept, now);
}

/* ---- invariants ---- */

/* The spans of size list i, checked one by one; their pages added to
 * *dirty, *clean and *kept. */
static void validate_list(ay_pageheap_t *ph, unsigned i, size_t *dirty, size_t *clean,
                          size_t *kept) {
    for (ay_span_t *s = ph->first[i]; s; s = s->next) {
        if ((s->next ? s->next->prev : ph->last[i]) != s)
            ay_fatal("pageheap: broken size list", (void *)s->start);
        if (s->state != AY_SPAN_FREE || s->owner.pages != ph || ay_pagelist_index(s->npages) != i ||
            s->start < s->block->start || ay_pagelist_end(s) > ay_pagelist_end(s->block))
            ay_fatal("pageheap: bad span on free list", (void *)s->start);
        if (ay_pagemap_span((void *)s->start) != s ||
            ay_pagemap_span((void *)(s->start + AY_PAGES_BYTES(s->npages - 1))) != s)
            ay_fatal("pageheap: free span not in pagemap", (void *)s->start);
        if (s->npages > 2 &&
            ay_pagemap_span((void *)(s->start + AY_PAGE_SIZE)) != (s->kept ? s : NULL))
            ay_fatal("pageheap: a free span's second page maps wrong", (void *)s->start);
        if (!s->kept && ay_pagelist_next_free(s, false))
            ay_fatal("pageheap: adjacent free spans not merged", (void *)s->start);
        if (s->kept && !s->dirty)
            ay_fatal("pageheap: a kept span is clean", (void *)s->start);
        *kept += s->kept ? s->npages : 0;
        *(s->dirty ? dirty : clean) += s->npages;
    }
}

void ay_pagelist_validate(ay_pageheap_t *ph) {
    size_t dirty = 0, clean = 0, kept = 0;
    for (unsigned i = 1; i <= AY_MAX_SPAN_PAGES; i++) {
        int bit = (ph->nonempty[i / 64] >> (i % 64)) & 1;
        if (bit != (ph->first[i] != NULL) || (ph->first[i] == NULL) != (ph->last[i] == NULL))
            ay_fatal("pageheap: bitmap disagrees with list", &ph->first[i]);
        validate_list(ph, i, &dirty, &clean, &kept);
    }
    size_t fifo = 0;
    for (ay_span_t *s = ph->dirty.dnext; s != &ph->dirty; s = s->dnext) {
        if (!s->dirty || s->state != AY_SPAN_FREE)
            ay_fatal("pageheap: clean span on decay FIFO", (void *)s->start);
        fifo += s->npages;
    }
    if (dirty != ph->free_dirty_pages || kept != ph->kept_pages || clean != ph->free_clean_pages ||
        fifo != dirty || ph->active_pages + dirty + clean + ph->purging_pages != ph->mapped_pages)
        ay_fatal("pageheap: page counters do not add up", ph);
    size_t purging = 0;
    for (ay_span_t *s = ph->purging.dnext; s != &ph->purging; s = s->dnext) {
        if (s->state != AY_SPAN_FREE)
            ay_fatal("pageheap: a span being purged is not free", (void *)s->start);
        purging += s->npages;
    }
    size_t blocks = 0;
    for (ay_span_t *b = ph->blocks.next; b != &ph->blocks; b = b->next)
        blocks += b->npages;
    if (purging != ph->purging_pages || blocks != ph->mapped_pages)
        ay_fatal("pageheap: the purging list or the blocks disagree with their counters", ph);
}
