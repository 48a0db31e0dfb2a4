/* SPDX-License-Identifier: MIT */
/* pageheap.c - the page heap's entry points (see pageheap.h): allocation
 * in the order of its fits, free (kept or merged), resize in place, purge,
 * destruction, validation and fork.  Every system call here runs with the
 * lock dropped. */
#include "pageheap.h"

#include "conf.h"
#include "os.h"
#include "pageblock.h"
#include "pagedecay.h"
#include "pagekeep.h"
#include "pagemap.h"
#include "meta.h"

void ay_pageheap_init(ay_pageheap_t *ph, ay_usage_t *usage) {
    pthread_mutex_init(&ph->lock, NULL);
    ph->dirty.dprev = ph->dirty.dnext = &ph->dirty;
    ph->purging.dprev = ph->purging.dnext = &ph->purging;
    ay_list_init(&ph->blocks);
    ph->usage = usage;
    ph->node = -1;
    ph->keep_shift = AY_KEEP_SHIFT_MIN;
}

/* ---- purging ---- */

/* What is due leaves: the dirty spans (pagedecay.h). */
static void decay(ay_pageheap_t *ph, bool all) { ay_pagedecay_run(ph, ay_os_now_ms(), all); }

void ay_pageheap_purge(ay_pageheap_t *ph, bool all) { decay(ph, all); }

bool ay_pageheap_idle(const ay_pageheap_t *ph, uint64_t now) {
    return ay_conf.decay_ms >= 0 && now - AY_LOAD(&ph->used_ms) >= (uint64_t)ay_conf.decay_ms;
}

/* The end of an allocation or a free: check the invariants (debug), drop the
 * lock, and purge what is due, without it. */
static void finish(ay_pageheap_t *ph, uint64_t now) {
    AY_STORE(&ph->used_ms, now);
    bool due = ay_pagedecay_due(ph, now, false);
    if (ay_debug >= 3)
        ay_pageheap_validate(ph);
    ay_pagelist_unlock(ph);
    if (due)
        decay(ph, false);
}

/* ---- allocation ---- */

/* The pages of a LARGE span for a request of npages: from 8 pages to
 * AY_MAX_SPAN_PAGES, rounded up to one of eight lengths per doubling (8, 9,
 * ..., 16, 18, 20, ..., 32, 36, ..., 240, 256), so that a kept span serves
 * every request that rounds to its length; the pages past the request cost
 * address space, not memory, until they are written.  (Four lengths per
 * doubling, as rpmalloc's classes have, made the sparse row's RSS bigger:
 * docs/HISTORY.md, "Targets for sparse buffers, small programs and
 * memory".) */
uintptr_t ay_pageheap_large_pages(uintptr_t npages) {
    if (npages < 8 || npages >= AY_MAX_SPAN_PAGES)
        return npages;
    uintptr_t step = ((uintptr_t)1 << (63 - __builtin_clzll(npages))) / 8;
    return (npages + step - 1) & ~(step - 1);
}

ay_span_t *ay_pageheap_alloc(ay_pageheap_t *ph, uintptr_t npages, uintptr_t align_pages,
                             unsigned state, uint32_t list) {
    if (state == AY_SPAN_LARGE && align_pages <= 1)
        npages = ay_pageheap_large_pages(npages);
    uintptr_t want = npages + (align_pages > 1 ? align_pages - 1 : 0);
    ay_span_t *s;
    /* touched pages first: the smallest dirty span that fits, else one that
     * old kept spans make (ay_pagekeep_merge_oldest), else the smallest clean one, else
     * a new block; when the OS refuses that, every kept span is merged and
     * the search tried once more */
    bool merged = false;
    for (;;) { /* until a fit is found with the records it needs; leaves the lock held */
        if (!ay_pagelist_reserve(ph))
            return NULL;
        ay_pagelist_lock(ph);
        bool records = ph->nspare >= AY_RECORDS_NEEDED;
        if (records && ((s = ay_pagelist_best_fit(ph, want, true)) != NULL ||
                        (s = ay_pagekeep_merge_oldest(ph, want)) != NULL ||
                        (s = ay_pagelist_best_fit(ph, want, false)) != NULL))
            break;
        ay_pagelist_unlock(ph);
        if (records && !ay_pageblock_grow(ph, want)) {
            if (merged)
                return NULL;
            /* out of memory: merge the kept spans, which may make a fit, or
             * a wholly free block that ay_pageblock_grow gives back before it retries */
            ay_pagelist_lock(ph);
            bool any = ph->kept_pages != 0;
            ay_pagekeep_merge_all(ph, ay_os_now_ms());
            ay_pagelist_unlock(ph);
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
    ay_pagelist_unlist(ph, s, map_stays);
    if (align_pages > 1) {
        uintptr_t align = AY_PAGES_BYTES(align_pages);
        uintptr_t head = (((s->start + align - 1) & ~(align - 1)) - s->start) >> AY_PAGE_SHIFT;
        if (head)
            ay_pagelist_split_head(ph, s, head, was_kept, now);
    }
    if (s->npages > npages)
        ay_pagelist_split_tail(ph, s, npages, was_kept, now);
    ay_span_part_clear(s); /* the new state's part starts zero (span.h) */
    s->state = (uint8_t)state;
    s->owner.pages = ph;
    ph->active_pages += npages;
    if (state == AY_SPAN_SMALL) /* (atomic: stats read it without the lock) */
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

/* ---- resize in place ---- */

/* Grow LARGE span s in place to npages pages, into the free span that
 * follows it in its block, kept or not (a kept one too short is merged
 * with what follows it first; what is left of one goes back merged).  Under the lock; false when that span is not there or too
 * short. */
static bool grow_in_place(ay_pageheap_t *ph, ay_span_t *s, uintptr_t npages, uint64_t now) {
    ay_span_t *r = ay_pagelist_next_free(s, true);
    uintptr_t more = npages - s->npages;
    if (r && r->kept && r->npages < more) { /* too short whole: merged, it may do */
        ay_pagelist_remove(ph, r);
        ay_pagelist_coalesce(ph, r, now); /* (its left neighbour is s: r stays where it starts) */
    }
    if (!r || r->npages < more)
        return false;
    bool was_kept = r->kept;
    ay_pagelist_remove(ph, r);
    s->dirty |= r->dirty;
    if (r->npages == more) {
        ay_pagelist_record_give(ph, r);
    } else {
        r->start += AY_PAGES_BYTES(more);
        r->npages -= more;
        ay_pagelist_piece_insert(ph, r, was_kept, now);
    }
    s->npages = npages;
    ph->active_pages += more;
    return true;
}

/* Shrink LARGE span s in place to npages pages: its tail goes back, merged
 * with a free span after it.  Under the lock, with a record reserved. */
static void shrink_in_place(ay_pageheap_t *ph, ay_span_t *s, uintptr_t npages, bool purged,
                            uint64_t now) {
    ay_span_t *t = ay_pagelist_record_take(ph);
    t->start = s->start + AY_PAGES_BYTES(npages);
    t->npages = s->npages - npages;
    t->dirty = !purged; /* the block's owner wrote there, whatever s's pages were when
                           they came out (its dirty mark tells only that) */
    if (purged)
        ph->purges++;
    t->block = s->block;
    s->npages = npages;
    ph->active_pages -= t->npages;
    ay_pagelist_coalesce(ph, t, now);
}

bool ay_pageheap_resize(ay_pageheap_t *ph, ay_span_t *s, uintptr_t npages) {
    uintptr_t old = s->npages;
    uintptr_t tail = s->start + AY_PAGES_BYTES(npages);
    bool purged = false;
    if (npages == old)
        return true;
    if (npages < old) {
        if (!ay_pagelist_reserve(ph))
            return false;
        /* the tail's entries go first: s is the caller's alone, and once
         * the tail is free a neighbour may merge with it; decay_ms:0
         * purges it at once, as a span freed (ay_pageheap_free) */
        ay_pagemap_set(tail, old - npages, NULL, 0);
        if (ay_conf.decay_ms == 0)
            purged = ay_os_purge((void *)tail, AY_PAGES_BYTES(old - npages)) == 0;
    }
    uint64_t now = ay_os_now_ms();
    ay_pagelist_lock(ph);
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

/* ---- free ---- */

void ay_pageheap_free(ay_pageheap_t *ph, ay_span_t *s) {
    /* decay_ms:0 purges the freed pages at once (only these: their free
     * neighbours were purged when they were freed); s is the caller's alone
     * until it is on the lists, so this needs no lock */
    bool purged =
        ay_conf.decay_ms == 0 && ay_os_purge((void *)s->start, AY_PAGES_BYTES(s->npages)) == 0;
    /* a LARGE span below AY_MAX_SPAN_PAGES is kept whole while the heap's
     * freed ones are not nearly all resident (pagekeep.h): a kept span's
     * pages still map to it, bin 0, as a LARGE span's do, and need no
     * write; any other span's map to nothing once it is free.  s is still
     * the caller's alone. */
    int resident;
    bool keep = ay_pagekeep_decide(ph, s, purged, &resident);
    uint64_t now = ay_os_now_ms();
    ay_usage_add(ph->usage, -(ptrdiff_t)AY_PAGES_BYTES(s->npages));
    if (!keep)
        ay_pagemap_set(s->start, s->npages, NULL, 0);
    ay_pagelist_lock(ph);
    ph->active_pages -= s->npages;
    if (s->state == AY_SPAN_SMALL)
        __atomic_fetch_sub(&ph->small_pages, s->npages, __ATOMIC_RELAXED);
    if (purged)
        ph->purges++;
    ay_pagekeep_learn(ph, s, resident);
    if (s->state == AY_SPAN_SMALL) /* the page part overlays the SMALL one (span.h) */
        ay_span_part_clear(s);
    s->dirty = !purged;
    if (keep) { /* at the front of its length's list: the same pages serve the next */
        s->kept = 1;
        ay_pagelist_insert(ph, s, now);
    } else {
        ay_pagelist_coalesce(ph, s, now);
    }
    finish(ph, now);
}

/* ---- destruction ---- */

void ay_pageheap_release_all(ay_pageheap_t *ph) {
    ay_span_t blocks;
    ay_list_init(&blocks);
    ay_pagelist_lock(ph);
    ay_pageblock_forget_all(ph, &blocks);
    while (ph->spare)
        ay_span_delete(ay_pagelist_record_take(ph));
    ay_pagelist_unlock(ph);
    ay_pageblock_unmap_all(&blocks);
}

/* ---- invariants, lock, fork ---- */

void ay_pageheap_validate(ay_pageheap_t *ph) {
    ay_pagelist_validate(ph);
    ay_pagekeep_validate(ph);
}

void ay_pageheap_lock(ay_pageheap_t *ph) { ay_pagelist_lock(ph); }
void ay_pageheap_unlock(ay_pageheap_t *ph) { ay_pagelist_unlock(ph); }
void ay_pageheap_after_fork_child(ay_pageheap_t *ph) {
    pthread_mutex_init(&ph->lock, NULL);
    ay_pagedecay_after_fork_child(ph);
}
