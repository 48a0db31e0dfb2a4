/* SPDX-License-Identifier: MIT */
/* pageheap.c - spans of pages: best fit, split, coalesce, decay (see
 * pageheap.h).  Every system call here runs with the lock dropped. */
#include "pageheap.h"

#include <string.h>

#include "conf.h"
#include "error.h"
#include "lock.h"
#include "meta.h"
#include "os.h"
#include "pagemap.h"
#include "secure.h"
#include "topology.h"

#define RECORDS_NEEDED 2      /* records an allocation may take under the lock: a head and a tail */
#define SPARE_MAX 16          /* records the reserve keeps at most */
#define PURGE_BATCH 16        /* spans purged per round with the lock dropped */
#define KEEP_RESIDENT_MAX 224 /* of 256: the sampled resident fraction up to which spans are kept */
#define KEPT_MIN_AGE_MS 10    /* a kept span younger than this is not merged for a fit */

static unsigned size_index(uintptr_t npages) {
    return npages >= AY_MAX_SPAN_PAGES ? AY_MAX_SPAN_PAGES : (unsigned)npages;
}

void ay_pageheap_init(ay_pageheap_t *ph, ay_usage_t *usage) {
    pthread_mutex_init(&ph->lock, NULL);
    ph->dirty.dprev = ph->dirty.dnext = &ph->dirty;
    ph->purging.dprev = ph->purging.dnext = &ph->purging;
    ay_list_init(&ph->blocks);
    ph->usage = usage;
    ph->node = -1;
    ph->keep_shift = AY_KEEP_SHIFT_MIN;
}

/* ---- span records: a reserve, so that no record is made under the lock ---- */

/* Under the lock, with nspare >= 1. */
static ay_span_t *record_take(ay_pageheap_t *ph) {
    ay_span_t *s = ph->spare;
    ph->spare = s->next;
    AY_STORE(&ph->nspare, ph->nspare - 1);
    memset(s, 0, sizeof *s);
    return s;
}

/* Under the lock. */
static void record_give(ay_pageheap_t *ph, ay_span_t *s) {
    if (ph->nspare >= SPARE_MAX) {
        ay_span_delete(s);
        return;
    }
    s->state = AY_SPAN_DEAD;
    s->next = ph->spare;
    ph->spare = s;
    AY_STORE(&ph->nspare, ph->nspare + 1);
}

/* Without the lock: fill the reserve.  false when metadata ran out. */
static bool reserve(ay_pageheap_t *ph) {
    while (AY_LOAD(&ph->nspare) < RECORDS_NEEDED) {
        ay_span_t *s = ay_span_new();
        if (!s)
            return false;
        ay_pageheap_lock(ph);
        record_give(ph, s);
        pthread_mutex_unlock(&ph->lock);
    }
    return true;
}

/* ---- free-span bookkeeping: size lists, bitmap, decay FIFO, counters ---- */

static void free_insert(ay_pageheap_t *ph, ay_span_t *s, uint64_t now) {
    unsigned i = size_index(s->npages);
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

/* Span s leaves the lists.  Its boundary pages map to nothing until the
 * caller re-registers whatever the pages become, so that no neighbour sees
 * (and merges with) it meanwhile; a kept span's other pages, which still map
 * to it, map to nothing too, unless map_stays: the caller takes s whole, as
 * a LARGE span, whose every page maps to s with bin 0 already. */
static void free_unlist(ay_pageheap_t *ph, ay_span_t *s, bool map_stays) {
    unsigned i = size_index(s->npages);
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

static void free_remove(ay_pageheap_t *ph, ay_span_t *s) { free_unlist(ph, s, false); }

/* Does span s (FREE, SMALL or LARGE) cover its whole block? */
static bool whole_block(const ay_span_t *s) {
    return s->start == s->block->start && s->npages == s->block->npages;
}

static uintptr_t span_end(const ay_span_t *s) { return s->start + AY_PAGES_BYTES(s->npages); }

/* The free span whose last page is just before s, in s's block, or NULL; a
 * kept span (pageheap.h) does not count.  Only pages of s's block are looked
 * at: they and their records are ph's. */
static ay_span_t *free_left(const ay_span_t *s) {
    if (s->start == s->block->start)
        return NULL;
    ay_span_t *n = ay_pagemap_span((void *)(s->start - AY_PAGE_SIZE));
    return n && n->state == AY_SPAN_FREE && !n->kept ? n : NULL;
}

/* The free span that starts just after s, in s's block, or NULL; a kept
 * span counts only with kept_too. */
static ay_span_t *next_free(const ay_span_t *s, bool kept_too) {
    uintptr_t end = span_end(s);
    if (end == span_end(s->block))
        return NULL;
    ay_span_t *n = ay_pagemap_span((void *)end);
    return n && n->state == AY_SPAN_FREE && (kept_too || !n->kept) && n->start == end ? n : NULL;
}

static ay_span_t *free_right(const ay_span_t *s) { return next_free(s, false); }

/* Free span s (not kept), merged with its free neighbours that are not
 * kept, goes on the lists. */
static void free_coalesce(ay_pageheap_t *ph, ay_span_t *s, uint64_t now) {
    ay_span_t *left = free_left(s);
    if (left) {
        free_remove(ph, left);
        s->start = left->start;
        s->npages += left->npages;
        s->dirty |= left->dirty;
        record_give(ph, left);
    }
    ay_span_t *right = free_right(s);
    if (right) {
        free_remove(ph, right);
        s->npages += right->npages;
        s->dirty |= right->dirty;
        record_give(ph, right);
    }
    free_insert(ph, s, now);
}

/* Under the lock: free span s, off the lists, is a whole block; forget the
 * block (its pages, its records) and return its range for the caller to
 * unmap once the lock is dropped.  A fork child taken before the unmap
 * keeps the mapping, unknown to it: a harmless leak in the child. */
static void block_drop(ay_pageheap_t *ph, ay_span_t *s, uintptr_t *start, uintptr_t *npages) {
    ay_span_t *b = s->block;
    *start = b->start;
    *npages = b->npages;
    ay_list_remove(b);
    ph->mapped_pages -= b->npages;
    ph->blocks_unmapped++;
    ph->purges++;
    record_give(ph, s);
    record_give(ph, b);
}

/* ---- decay ---- */

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

/* Under the lock: is the oldest dirty span due to be purged? */
static bool purge_due(const ay_pageheap_t *ph, uint64_t now, bool all) {
    const ay_span_t *oldest = ph->dirty.dnext;
    if (oldest == &ph->dirty)
        return false;
    if (all)
        return true;
    int64_t decay = ay_conf.decay_ms;
    if (decay < 0)
        return false; /* -1: never purge, not even above the cap */
    return now - oldest->freed_ms >= (uint64_t)decay || ph->free_dirty_pages > dirty_cap(ph);
}

/* The purging list, through dprev/dnext: spans off the lists while their
 * pages are purged without the lock. */
static void purging_add(ay_pageheap_t *ph, ay_span_t *s) {
    s->dnext = ph->purging.dnext;
    s->dprev = &ph->purging;
    ph->purging.dnext->dprev = s;
    ph->purging.dnext = s;
    ph->purging_pages += s->npages;
}

static void purging_remove(ay_pageheap_t *ph, ay_span_t *s) {
    s->dprev->dnext = s->dnext;
    s->dnext->dprev = s->dprev;
    s->dprev = s->dnext = NULL;
    ph->purging_pages -= s->npages;
}

/* Purge every span that is due, oldest first: a batch at a time is taken off
 * the lists under the lock and purged without it.  A span that is a whole
 * block is unmapped, and its block forgotten; any other is purged with
 * madvise and put back clean, or dirty still when madvise failed (counted
 * by ay_os_purge), and then this pass stops: what is due is tried again by
 * the next one, not in a loop here. */
static void guarded_expire(ay_pageheap_t *ph, uint64_t now, bool all);

static void decay(ay_pageheap_t *ph, bool all) {
    uint64_t now = ay_os_now_ms();
    guarded_expire(ph, now, all);
    for (bool refused = false; !refused;) {
        bool clean[PURGE_BATCH];
        ay_span_t *batch[PURGE_BATCH]; /* NULL: an unmapped block, in gone[] */
        uintptr_t gone[PURGE_BATCH][2];
        unsigned n = 0;
        ay_pageheap_lock(ph);
        while (n < PURGE_BATCH && purge_due(ph, now, all)) {
            ay_span_t *s = ph->dirty.dnext;
            free_remove(ph, s);
            if (whole_block(s)) {
                block_drop(ph, s, &gone[n][0], &gone[n][1]);
                batch[n++] = NULL;
            } else {
                purging_add(ph, s);
                batch[n++] = s;
            }
        }
        pthread_mutex_unlock(&ph->lock);
        if (n == 0)
            return;
        for (unsigned i = 0; i < n; i++) {
            if (batch[i])
                clean[i] =
                    ay_os_purge((void *)batch[i]->start, AY_PAGES_BYTES(batch[i]->npages)) == 0;
            else
                ay_chunk_unmap((void *)gone[i][0], AY_PAGES_BYTES(gone[i][1]));
        }
        ay_pageheap_lock(ph);
        for (unsigned i = 0; i < n; i++) {
            if (!batch[i])
                continue;
            purging_remove(ph, batch[i]);
            ph->purges += clean[i];
            refused |= !clean[i];
            batch[i]->dirty = !clean[i];
            free_coalesce(ph, batch[i], now);
        }
        pthread_mutex_unlock(&ph->lock);
    }
}

/* Without the lock: unmap every block of at least min_pages pages that is
 * wholly free, dirty or clean.  Returns how many. */
static unsigned release_free_blocks(ay_pageheap_t *ph, uintptr_t min_pages) {
    unsigned total = 0;
    for (;;) {
        uintptr_t gone[PURGE_BATCH][2];
        unsigned n = 0;
        ay_pageheap_lock(ph);
        /* whole blocks are >= 256 pages */
        for (ay_span_t *s = ph->first[AY_MAX_SPAN_PAGES], *next; s && n < PURGE_BATCH; s = next) {
            next = s->next;
            if (whole_block(s) && s->npages >= min_pages) {
                free_remove(ph, s);
                block_drop(ph, s, &gone[n][0], &gone[n][1]);
                n++;
            }
        }
        pthread_mutex_unlock(&ph->lock);
        for (unsigned i = 0; i < n; i++)
            ay_chunk_unmap((void *)gone[i][0], AY_PAGES_BYTES(gone[i][1]));
        total += n;
        if (n < PURGE_BATCH)
            return total;
    }
}

void ay_pageheap_purge(ay_pageheap_t *ph, bool all) { decay(ph, all); }

/* ---- the secure flavour's guarded cache (pageheap.h) ---- */

/* Under the lock: guarded[i] leaves the cache, LARGE and active again. */
static ay_span_t *guarded_remove(ay_pageheap_t *ph, unsigned i) {
    ay_span_t *s = ph->guarded[i];
    memmove(&ph->guarded[i], &ph->guarded[i + 1], (ph->nguarded - i - 1) * sizeof s);
    AY_STORE(&ph->nguarded, ph->nguarded - 1);
    ph->guarded_pages -= s->npages;
    ph->active_pages += s->npages;
    s->state = AY_SPAN_LARGE;
    return s;
}

/* Without the lock: span s, off the cache, has its guards lifted and is
 * freed.  When mprotect refuses, s stays as it is, a LARGE span that no
 * block uses (counted in os_failures): freeing it would hand inaccessible
 * pages out. */
static void guarded_release(ay_pageheap_t *ph, ay_span_t *s) {
    ay_usage_add(ph->usage, (ptrdiff_t)AY_PAGES_BYTES(s->npages)); /* (the free takes it) */
    if (ay_os_protect((void *)s->start, AY_PAGES_BYTES(s->npages), 1) != 0) {
        return;
    }
    s->user = s->user_end = s->open = 0;
    ay_pageheap_free(ph, s);
}

/* Under the lock: is the oldest guarded span due to go? */
static bool guarded_due(const ay_pageheap_t *ph, uint64_t now, bool all) {
    if (ph->nguarded == 0)
        return false;
    int64_t decay = ay_conf.decay_ms;
    return all || (decay >= 0 && now - ph->guarded[0]->freed_ms >= (uint64_t)decay);
}

/* The guarded spans that are due leave the cache, oldest first. */
static void guarded_expire(ay_pageheap_t *ph, uint64_t now, bool all) {
    ay_span_t *out[AY_GUARDED_SPANS];
    unsigned n = 0;
    ay_pageheap_lock(ph);
    while (guarded_due(ph, now, all))
        out[n++] = guarded_remove(ph, 0);
    pthread_mutex_unlock(&ph->lock);
    for (unsigned i = 0; i < n; i++)
        guarded_release(ph, out[i]);
}

ay_span_t *ay_pageheap_guarded_take(ay_pageheap_t *ph, uintptr_t min_pages, uintptr_t max_pages) {
    if (AY_LOAD(&ph->nguarded) == 0)
        return NULL;
    ay_pageheap_lock(ph);
    unsigned best = ph->nguarded;
    uintptr_t best_pages = 0;
    for (unsigned i = 0; i < ph->nguarded; i++) {
        const ay_span_t *g = ph->guarded[i];
        uintptr_t pages = (g->user_end - g->open) >> AY_PAGE_SHIFT;
        if (pages >= min_pages && pages <= max_pages &&
            (best == ph->nguarded || pages < best_pages))
            best = i, best_pages = pages;
    }
    ay_span_t *s = best < ph->nguarded ? guarded_remove(ph, best) : NULL;
    pthread_mutex_unlock(&ph->lock);
    if (s)
        ay_usage_add(ph->usage, (ptrdiff_t)AY_PAGES_BYTES(s->npages));
    return s;
}

void ay_pageheap_guarded_keep(ay_pageheap_t *ph, ay_span_t *s) {
    ay_span_t *out[AY_GUARDED_SPANS];
    unsigned n = 0;
    ay_usage_add(ph->usage, -(ptrdiff_t)AY_PAGES_BYTES(s->npages));
    uint64_t now = ay_os_now_ms();
    ay_pageheap_lock(ph);
    s->state = AY_SPAN_GUARDED;
    s->dirty = 1; /* its pages were the block's */
    s->freed_ms = now;
    ph->active_pages -= s->npages;
    while (ph->nguarded > 0 && (ph->nguarded == AY_GUARDED_SPANS ||
                                ph->guarded_pages + s->npages > AY_GUARDED_MAX_PAGES))
        out[n++] = guarded_remove(ph, 0);
    ph->guarded[ph->nguarded] = s;
    AY_STORE(&ph->nguarded, ph->nguarded + 1);
    ph->guarded_pages += s->npages;
    bool due = purge_due(ph, now, false);
    if (ay_debug >= 3)
        ay_pageheap_validate(ph);
    pthread_mutex_unlock(&ph->lock);
    for (unsigned i = 0; i < n; i++)
        guarded_release(ph, out[i]);
    if (due)
        decay(ph, false);
}

/* Under the lock: every kept span is merged with its free neighbours, so
 * that a request no span fits, or a wholly free block, can be seen.  The
 * kept spans all leave the lists first (their boundary pages then map to
 * nothing, so none merges with another while it is off them), then each
 * goes back merged. */
static void unkeep_all(ay_pageheap_t *ph, uint64_t now) {
    ay_span_t *off = NULL;
    for (ay_span_t *s = ph->dirty.dnext, *next; s != &ph->dirty && ph->kept_pages; s = next) {
        next = s->dnext;
        if (s->kept) {
            free_remove(ph, s);
            s->next = off;
            off = s;
        }
    }
    while (off) {
        ay_span_t *s = off;
        off = s->next;
        free_coalesce(ph, s, now);
    }
}

static ay_span_t *best_fit(ay_pageheap_t *ph, uintptr_t npages, bool dirty_only);

/* Under the lock, when no dirty span fits npages: the kept spans that have
 * waited KEPT_MIN_AGE_MS or longer are merged with their free neighbours,
 * oldest first (the decay FIFO's order), until one of them makes a dirty
 * fit, which is returned; NULL when none does.  Younger ones stay whole: a
 * span freed a moment ago is the one most likely to serve its length again
 * (merging every kept span here gave the sparse row its faults back,
 * BENCHMARKS.md).  Each merge ends one kept span, which one free made. */
static ay_span_t *unkeep_oldest(ay_pageheap_t *ph, uintptr_t npages) {
    uint64_t now = ay_os_now_ms();
    while (ph->kept_pages) {
        ay_span_t *k = ph->dirty.dnext;
        while (k != &ph->dirty && !k->kept)
            k = k->dnext;
        if (k == &ph->dirty || now - k->freed_ms < KEPT_MIN_AGE_MS)
            return NULL;
        free_remove(ph, k);
        free_coalesce(ph, k, now); /* k is the merged span now */
        if (k->npages >= npages)
            return best_fit(ph, npages, true);
    }
    return NULL;
}

/* ---- allocation ---- */

/* Without the lock: map a new block of at least npages pages (a multiple of
 * 256), and put it on the free lists.  When the OS refuses, the wholly free
 * blocks are given back and the map is tried once more.  false when out of
 * memory. */
static bool grow(ay_pageheap_t *ph, uintptr_t npages) {
    uintptr_t pages = (npages + AY_BLOCK_PAGES - 1) / AY_BLOCK_PAGES * AY_BLOCK_PAGES;
    /* a block for a request of 2 MiB or more is used whole: 2 MiB aligned,
     * with transparent huge pages, it faults in 2 MiB at a time */
    bool own = pages >= AY_HUGE_PAGES;
    /* the blocks for smaller requests get huge pages under thp:always only
     * (under auto, a heap with 64 MiB of small spans also grew in 2 MiB
     * huge blocks: in interleaved runs that made frag and malloc_test at
     * 100 threads slower, not faster, BENCHMARKS.md, "Huge pages for busy
     * heaps, removed") */
    bool huge = own ? ay_conf.thp != AY_THP_NEVER : ay_conf.thp == AY_THP_ALWAYS;
    if (huge && !own)
        pages = AY_HUGE_PAGES;
    size_t align = own || huge ? AY_PAGES_BYTES(AY_HUGE_PAGES) : AY_PAGE_SIZE;
    /* a request for a block of its own that no free span could serve: the
     * free blocks of their own (2 MiB or more) are too small for it, so they
     * go back first, rather than pile up while sizes vary */
    if (own)
        release_free_blocks(ph, AY_HUGE_PAGES);
    void *block = ay_chunk_map(AY_PAGES_BYTES(pages), align);
    if (!block && release_free_blocks(ph, 1))
        block = ay_chunk_map(AY_PAGES_BYTES(pages), align);
    if (!block)
        return false;
    if (huge || ay_conf.thp == AY_THP_NEVER)
        ay_os_hugepages(block, AY_PAGES_BYTES(pages), huge);
    ay_topology_place(block, AY_PAGES_BYTES(pages), ph->node); /* NUMA: before any touch */
    ay_span_t *s = ay_span_new(), *rec = ay_span_new();
    if (!s || !rec || ay_pagemap_ensure((uintptr_t)block, pages) != 0) {
        if (s)
            ay_span_delete(s);
        if (rec)
            ay_span_delete(rec);
        ay_chunk_unmap(block, AY_PAGES_BYTES(pages));
        return false;
    }
    rec->start = (uintptr_t)block; /* the block's record */
    rec->npages = pages;
    s->start = (uintptr_t)block;
    s->npages = pages;
    s->block = rec;
    s->dirty = 0; /* fresh pages are zero, and not resident until touched */
    uint64_t now = ay_os_now_ms();
    ay_pageheap_lock(ph);
    ay_list_push(&ph->blocks, rec);
    ph->mapped_pages += pages;
    ph->huge_blocks += huge;
    free_insert(ph, s, now);
    pthread_mutex_unlock(&ph->lock);
    return true;
}

/* Smallest free span of at least npages pages, or NULL; with dirty_only,
 * the smallest dirty one (a list holds its dirty spans first, so its head
 * says whether it has one). */
static ay_span_t *best_fit(ay_pageheap_t *ph, uintptr_t npages, bool dirty_only) {
    for (unsigned i = size_index(npages); i <= AY_MAX_SPAN_PAGES; i++) {
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

/* A piece split off a free span goes on the lists: merged with its free
 * neighbours when the span was a kept one (whose neighbours may be free),
 * as it is otherwise (a span that was not kept has none). */
static void piece_insert(ay_pageheap_t *ph, ay_span_t *piece, bool was_kept, uint64_t now) {
    if (was_kept)
        free_coalesce(ph, piece, now);
    else
        free_insert(ph, piece, now);
}

/* The first `pages` pages of span s (off the lists) become a free span of
 * their own, and s keeps the rest.  Under the lock, with a record reserved. */
static void split_head(ay_pageheap_t *ph, ay_span_t *s, uintptr_t pages, bool was_kept,
                       uint64_t now) {
    ay_span_t *h = record_take(ph);
    h->start = s->start;
    h->npages = pages;
    h->dirty = s->dirty;
    h->block = s->block;
    s->start += AY_PAGES_BYTES(pages);
    s->npages -= pages;
    piece_insert(ph, h, was_kept, now);
}

/* Span s (off the lists) keeps its first `pages` pages; the rest becomes a
 * free span.  Under the lock, with a record reserved. */
static void split_tail(ay_pageheap_t *ph, ay_span_t *s, uintptr_t pages, bool was_kept,
                       uint64_t now) {
    ay_span_t *rest = record_take(ph);
    rest->start = s->start + AY_PAGES_BYTES(pages);
    rest->npages = s->npages - pages;
    rest->dirty = s->dirty;
    rest->block = s->block;
    s->npages = pages;
    piece_insert(ph, rest, was_kept, now);
}

/* The end of an allocation or a free: check the invariants (debug), drop the
 * lock, and purge what is due, without it. */
static void finish(ay_pageheap_t *ph, uint64_t now) {
    bool due = purge_due(ph, now, false) || guarded_due(ph, now, false);
    if (ay_debug >= 3)
        ay_pageheap_validate(ph);
    pthread_mutex_unlock(&ph->lock);
    if (due)
        decay(ph, false);
}

/* The pages of a LARGE span for a request of npages: from 8 pages to
 * AY_MAX_SPAN_PAGES, rounded up to one of eight lengths per doubling (8, 9,
 * ..., 16, 18, 20, ..., 32, 36, ..., 240, 256), so that a kept span serves
 * every request that rounds to its length; the pages past the request cost
 * address space, not memory, until they are written.  (Four lengths per
 * doubling, as rpmalloc's classes have, made the short sparse row 12%
 * bigger: BENCHMARKS.md.) */
uintptr_t ay_pageheap_large_pages(uintptr_t npages) {
    if (npages < 8 || npages >= AY_MAX_SPAN_PAGES)
        return npages;
    uintptr_t step = ((uintptr_t)1 << (63 - __builtin_clzll(npages))) / 8;
    return (npages + step - 1) & ~(step - 1);
}

ay_span_t *ay_pageheap_alloc(ay_pageheap_t *ph, uintptr_t npages, uintptr_t align_pages,
                             unsigned state, uint32_t list) {
    if (state == AY_SPAN_LARGE && align_pages <= 1 && !ay_secure_guards)
        npages = ay_pageheap_large_pages(npages); /* (guarded spans: large.c lays them out) */
    uintptr_t want = npages + (align_pages > 1 ? align_pages - 1 : 0);
    ay_span_t *s;
    /* touched pages first: the smallest dirty span that fits, else one that
     * old kept spans make (unkeep_oldest), else the smallest clean one, else
     * a new block; when the OS refuses that, every kept span is merged and
     * the search tried once more */
    bool merged = false;
    for (;;) { /* until a fit is found with the records it needs; leaves the lock held */
        if (!reserve(ph))
            return NULL;
        ay_pageheap_lock(ph);
        bool records = ph->nspare >= RECORDS_NEEDED;
        if (records &&
            ((s = best_fit(ph, want, true)) != NULL || (s = unkeep_oldest(ph, want)) != NULL ||
             (s = best_fit(ph, want, false)) != NULL))
            break;
        pthread_mutex_unlock(&ph->lock);
        if (records && !grow(ph, want)) {
            if (merged)
                return NULL;
            /* out of memory: merge the kept spans, which may make a fit, or
             * a wholly free block that grow gives back before it retries */
            ay_pageheap_lock(ph);
            bool any = ph->kept_pages != 0;
            unkeep_all(ph, ay_os_now_ms());
            pthread_mutex_unlock(&ph->lock);
            if (!any)
                return NULL;
            merged = true;
        }
    }
    uint64_t now = ay_os_now_ms();
    bool was_kept = s->kept;
    /* a kept span taken whole for a LARGE block keeps its pagemap entries:
     * they map to it already (the sparse row's buffers: no write per page) */
    bool map_stays = was_kept && state == AY_SPAN_LARGE && align_pages <= 1 && s->npages == npages;
    free_unlist(ph, s, map_stays);
    if (align_pages > 1) {
        uintptr_t align = AY_PAGES_BYTES(align_pages);
        uintptr_t head = (((s->start + align - 1) & ~(align - 1)) - s->start) >> AY_PAGE_SHIFT;
        if (head)
            split_head(ph, s, head, was_kept, now);
    }
    if (s->npages > npages)
        split_tail(ph, s, npages, was_kept, now);
    s->state = (uint8_t)state;
    s->owner.pages = ph;
    ph->active_pages += npages;
    if (state == AY_SPAN_SMALL) /* (atomic: grow reads it without the lock) */
        __atomic_fetch_add(&ph->small_pages, npages, __ATOMIC_RELAXED);
    finish(ph, now);
    /* the span is the caller's now: its pagemap entries and the usage count
     * need no lock (a neighbour that looks at a boundary page meanwhile sees
     * NULL or this span, neither of which it merges with) */
    ay_usage_add(ph->usage, (ptrdiff_t)AY_PAGES_BYTES(npages));
    if (!map_stays)
        ay_pagemap_set(s->start, npages, s, list);
    return s;
}

/* Grow LARGE span s in place to npages pages, into the free span that
 * follows it in its block, kept or not (a kept one too short is merged
 * with what follows it first; what is left of one goes back merged).  Under the lock; false when that span is not there or too
 * short. */
static bool grow_in_place(ay_pageheap_t *ph, ay_span_t *s, uintptr_t npages, uint64_t now) {
    ay_span_t *r = next_free(s, true);
    uintptr_t more = npages - s->npages;
    if (r && r->kept && r->npages < more) { /* too short whole: merged, it may do */
        free_remove(ph, r);
        free_coalesce(ph, r, now); /* (its left neighbour is s: r stays where it starts) */
    }
    if (!r || r->npages < more)
        return false;
    bool was_kept = r->kept;
    free_remove(ph, r);
    s->dirty |= r->dirty;
    if (r->npages == more) {
        record_give(ph, r);
    } else {
        r->start += AY_PAGES_BYTES(more);
        r->npages -= more;
        piece_insert(ph, r, was_kept, now);
    }
    s->npages = npages;
    ph->active_pages += more;
    return true;
}

/* Shrink LARGE span s in place to npages pages: its tail goes back, merged
 * with a free span after it.  Under the lock, with a record reserved. */
static void shrink_in_place(ay_pageheap_t *ph, ay_span_t *s, uintptr_t npages, bool purged,
                            uint64_t now) {
    ay_span_t *t = record_take(ph);
    t->start = s->start + AY_PAGES_BYTES(npages);
    t->npages = s->npages - npages;
    t->dirty = !purged; /* the block's owner wrote there, whatever s's pages were when
                           they came out (its dirty mark tells only that) */
    if (purged)
        ph->purges++;
    t->block = s->block;
    s->npages = npages;
    ph->active_pages -= t->npages;
    free_coalesce(ph, t, now);
}

bool ay_pageheap_resize(ay_pageheap_t *ph, ay_span_t *s, uintptr_t npages) {
    uintptr_t old = s->npages;
    uintptr_t tail = s->start + AY_PAGES_BYTES(npages);
    bool purged = false;
    if (npages == old)
        return true;
    if (npages < old) {
        if (!reserve(ph))
            return false;
        /* the tail's entries go first: s is the caller's alone, and once
         * the tail is free a neighbour may merge with it; decay_ms:0
         * purges it at once, as a span freed (ay_pageheap_free) */
        ay_pagemap_set(tail, old - npages, NULL, 0);
        if (ay_conf.decay_ms == 0)
            purged = ay_os_purge((void *)tail, AY_PAGES_BYTES(old - npages)) == 0;
    }
    uint64_t now = ay_os_now_ms();
    ay_pageheap_lock(ph);
    bool done = true;
    if (npages > old)
        done = grow_in_place(ph, s, npages, now);
    else if (ph->nspare >= 1)
        shrink_in_place(ph, s, npages, purged, now);
    else
        done = false;
    finish(ph, now);
    if (!done) {
        if (npages < old) /* (the reserve was taken meanwhile) */
            ay_pagemap_set(tail, old - npages, s, 0);
        return false;
    }
    ay_usage_add(ph->usage, (ptrdiff_t)AY_PAGES_BYTES(npages) - (ptrdiff_t)AY_PAGES_BYTES(old));
    if (npages > old)
        ay_pagemap_set(s->start + AY_PAGES_BYTES(old), npages - old, s, 0);
    return true;
}

void ay_pageheap_free(ay_pageheap_t *ph, ay_span_t *s) {
    /* decay_ms:0 purges the freed pages at once (only these: their free
     * neighbours were purged when they were freed); s is the caller's alone
     * until it is on the lists, so this needs no lock */
    bool purged =
        ay_conf.decay_ms == 0 && ay_os_purge((void *)s->start, AY_PAGES_BYTES(s->npages)) == 0;
    /* a LARGE span below AY_MAX_SPAN_PAGES is kept whole (pageheap.h) while
     * the heap's freed ones are not nearly all resident: one in 2^keep_shift
     * of them (by count, so that blocks of any length and alignment are
     * sampled) is looked at with mincore, without the lock, and moves the
     * heap's average of their resident fraction; a heap
     * whose blocks are written all over merges them, as it did before (any
     * placement in such free pages reuses touched ones) */
    bool medium = s->state == AY_SPAN_LARGE && !purged && s->npages < AY_MAX_SPAN_PAGES;
    int resident = -1;
    if (medium && (__atomic_fetch_add(&ph->medium_frees, 1, __ATOMIC_RELAXED) &
                   ((1u << AY_LOAD(&ph->keep_shift)) - 1)) == 0)
        resident = ay_os_resident_pages((void *)s->start, s->npages);
    /* decided on the average so far, read without the lock (a sample moves
     * it for the frees after it): a kept span's pages still map to it, bin
     * 0, as a LARGE span's do, and need no write; any other span's map to
     * nothing once it is free.  s is still the caller's alone. */
    bool keep = medium && AY_LOAD(&ph->resident_avg) <= KEEP_RESIDENT_MAX;
    uint64_t now = ay_os_now_ms();
    ay_usage_add(ph->usage, -(ptrdiff_t)AY_PAGES_BYTES(s->npages));
    if (!keep)
        ay_pagemap_set(s->start, s->npages, NULL, 0);
    ay_pageheap_lock(ph);
    ph->active_pages -= s->npages;
    if (s->state == AY_SPAN_SMALL)
        __atomic_fetch_sub(&ph->small_pages, s->npages, __ATOMIC_RELAXED);
    if (purged)
        ph->purges++;
    if (resident >= 0) { /* resident_avg: 0..256, weight 1/8 to the new sample */
        int frac = (int)((uintptr_t)resident * 256 / s->npages);
        /* a sample on the side of the threshold the average is on doubles
         * the interval to the next one (a settled heap pays few mincore
         * calls: sparse made 33k of them in 400k frees); one on the other
         * side brings it back to the shortest */
        bool agrees = (frac <= KEEP_RESIDENT_MAX) == (ph->resident_avg <= KEEP_RESIDENT_MAX);
        AY_STORE(&ph->keep_shift, agrees ? ph->keep_shift + (ph->keep_shift < AY_KEEP_SHIFT_MAX)
                                         : AY_KEEP_SHIFT_MIN);
        AY_STORE(&ph->resident_avg, ph->resident_avg + (frac - ph->resident_avg) / 8);
    }
    s->dirty = !purged;
    s->free = NULL;
    s->used = s->capacity = 0;
    if (keep) { /* at the front of its length's list: the same pages serve the next */
        s->kept = 1;
        free_insert(ph, s, now);
    } else {
        free_coalesce(ph, s, now);
    }
    finish(ph, now);
}

/* ---- destruction ---- */

/* Forget every span record in block b: walk it page by page.  Under the lock. */
static void forget_block_spans(ay_pageheap_t *ph, const ay_span_t *b) {
    uintptr_t end = b->start + AY_PAGES_BYTES(b->npages);
    for (uintptr_t a = b->start; a < end;) {
        ay_span_t *s = ay_pagemap_span((void *)a);
        if (s && s->start == a && s->state != AY_SPAN_DEAD) {
            uintptr_t n = s->npages;
            ay_pagemap_set(a, n, NULL, 0);
            ay_span_delete(s);
            a += AY_PAGES_BYTES(n);
        } else {
            ay_pagemap_set1(a, NULL, 0);
            a += AY_PAGE_SIZE;
        }
    }
}

void ay_pageheap_release_all(ay_pageheap_t *ph) {
    ay_pageheap_lock(ph);
    for (ay_span_t *b = ph->blocks.next; b != &ph->blocks; b = b->next)
        forget_block_spans(ph, b);
    ay_span_t blocks;
    ay_list_init(&blocks);
    while (!ay_list_empty(&ph->blocks)) {
        ay_span_t *b = ph->blocks.next;
        ay_list_remove(b);
        ay_list_push(&blocks, b);
    }
    while (ph->spare)
        ay_span_delete(record_take(ph));
    ph->nguarded = 0; /* (their records went with their blocks' spans) */
    ph->guarded_pages = 0;
    pthread_mutex_unlock(&ph->lock);
    while (!ay_list_empty(&blocks)) {
        ay_span_t *b = blocks.next;
        ay_list_remove(b);
        ay_chunk_unmap((void *)b->start, AY_PAGES_BYTES(b->npages));
        ay_span_delete(b);
    }
}

/* ---- invariants ---- */

void ay_pageheap_validate(ay_pageheap_t *ph) {
    size_t dirty = 0, clean = 0, kept = 0;
    for (unsigned i = 1; i <= AY_MAX_SPAN_PAGES; i++) {
        int bit = (ph->nonempty[i / 64] >> (i % 64)) & 1;
        if (bit != (ph->first[i] != NULL) || (ph->first[i] == NULL) != (ph->last[i] == NULL))
            ay_fatal("pageheap: bitmap disagrees with list", &ph->first[i]);
        for (ay_span_t *s = ph->first[i]; s; s = s->next) {
            if ((s->next ? s->next->prev : ph->last[i]) != s)
                ay_fatal("pageheap: broken size list", (void *)s->start);
            if (s->state != AY_SPAN_FREE || s->owner.pages != ph || size_index(s->npages) != i ||
                s->start < s->block->start || span_end(s) > span_end(s->block))
                ay_fatal("pageheap: bad span on free list", (void *)s->start);
            if (ay_pagemap_span((void *)s->start) != s ||
                ay_pagemap_span((void *)(s->start + AY_PAGES_BYTES(s->npages - 1))) != s)
                ay_fatal("pageheap: free span not in pagemap", (void *)s->start);
            if (s->npages > 2 &&
                ay_pagemap_span((void *)(s->start + AY_PAGE_SIZE)) != (s->kept ? s : NULL))
                ay_fatal("pageheap: a free span's second page maps wrong", (void *)s->start);
            if (!s->kept && free_right(s))
                ay_fatal("pageheap: adjacent free spans not merged", (void *)s->start);
            if (s->kept && !s->dirty)
                ay_fatal("pageheap: a kept span is clean", (void *)s->start);
            kept += s->kept ? s->npages : 0;
            *(s->dirty ? &dirty : &clean) += s->npages;
        }
    }
    size_t fifo = 0;
    for (ay_span_t *s = ph->dirty.dnext; s != &ph->dirty; s = s->dnext) {
        if (!s->dirty || s->state != AY_SPAN_FREE)
            ay_fatal("pageheap: clean span on decay FIFO", (void *)s->start);
        fifo += s->npages;
    }
    size_t guarded = 0;
    for (unsigned i = 0; i < ph->nguarded; i++) {
        const ay_span_t *g = ph->guarded[i];
        if (g->state != AY_SPAN_GUARDED || g->owner.pages != ph ||
            (i > 0 && g->freed_ms < ph->guarded[i - 1]->freed_ms))
            ay_fatal("pageheap: bad span in the guarded cache", (void *)g->start);
        guarded += g->npages;
    }
    if (dirty != ph->free_dirty_pages || kept != ph->kept_pages || clean != ph->free_clean_pages ||
        fifo != dirty || guarded != ph->guarded_pages ||
        ph->active_pages + dirty + clean + ph->purging_pages + guarded != ph->mapped_pages)
        ay_fatal("pageheap: page counters do not add up", ph);
}

void ay_pageheap_lock(ay_pageheap_t *ph) { (void)ay_lock_take(&ph->lock); }
void ay_pageheap_unlock(ay_pageheap_t *ph) { pthread_mutex_unlock(&ph->lock); }
void ay_pageheap_after_fork_child(ay_pageheap_t *ph) {
    pthread_mutex_init(&ph->lock, NULL);
    uint64_t now = ay_os_now_ms();
    while (ph->purging.dnext != &ph->purging) {
        ay_span_t *s = ph->purging.dnext;
        purging_remove(ph, s);
        free_coalesce(ph, s, now); /* still dirty: it was not purged, or not known to be */
    }
}
