/* SPDX-License-Identifier: MIT */
/* pagedecay.c - decay, purge and the dirty cap (see pagedecay.h).  Every
 * system call here runs with the lock dropped. */
#include "pagedecay.h"

#include "conf.h"
#include "os.h"
#include "pageblock.h"

#define PURGE_BATCH 16 /* spans purged per round with the lock dropped */

/* Dirty free pages kept at most: twice the active pages, and never less than
 * 64 MiB.  It is a safety valve, not the decay policy: a program that frees
 * most of a large heap gets the excess purged at once, even if it then idles
 * without calling the allocator again (there is no background thread by
 * default); a program that only churns keeps its free pages for reuse.  A
 * tighter cap costs a program whose heap shrinks and regrows (bench_frag)
 * time: pages purged when it shrinks fault back in when it regrows
 * (docs/ARCHITECTURE.md, "Returning memory to the OS", has the figure).
 * The cap is a page heap's: a process of N heaps keeps N times it. */
static size_t dirty_cap(const ay_pageheap_t *ph) {
    size_t floor_pages = ((size_t)64 << 20) >> AY_PAGE_SHIFT;
    return 2 * ph->active_pages > floor_pages ? 2 * ph->active_pages : floor_pages;
}

bool ay_pagedecay_due(const ay_pageheap_t *ph, uint64_t now, bool all) {
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
void ay_pagedecay_run(ay_pageheap_t *ph, uint64_t now, bool all) {
    for (bool refused = false; !refused;) {
        bool clean[PURGE_BATCH];
        ay_span_t *batch[PURGE_BATCH]; /* NULL: an unmapped block, in gone[] */
        uintptr_t gone[PURGE_BATCH][2];
        unsigned n = 0;
        ay_pagelist_lock(ph);
        while (n < PURGE_BATCH && ay_pagedecay_due(ph, now, all)) {
            ay_span_t *s = ph->dirty.dnext;
            ay_pagelist_remove(ph, s);
            if (ay_pagelist_whole_block(s)) {
                ay_pageblock_drop(ph, s, &gone[n][0], &gone[n][1]);
                batch[n++] = NULL;
            } else {
                purging_add(ph, s);
                batch[n++] = s;
            }
        }
        ay_pagelist_unlock(ph);
        if (n == 0)
            return;
        for (unsigned i = 0; i < n; i++) {
            if (batch[i])
                clean[i] =
                    ay_os_purge((void *)batch[i]->start, AY_PAGES_BYTES(batch[i]->npages)) == 0;
            else
                ay_os_unmap_chunk((void *)gone[i][0], AY_PAGES_BYTES(gone[i][1]));
        }
        ay_pagelist_lock(ph);
        for (unsigned i = 0; i < n; i++) {
            if (!batch[i])
                continue;
            purging_remove(ph, batch[i]);
            ph->purges += clean[i];
            refused |= !clean[i];
            batch[i]->dirty = !clean[i];
            ay_pagelist_coalesce(ph, batch[i], now);
        }
        ay_pagelist_unlock(ph);
    }
}

void ay_pagedecay_after_fork_child(ay_pageheap_t *ph) {
    uint64_t now = ay_os_now_ms();
    while (ph->purging.dnext != &ph->purging) {
        ay_span_t *s = ph->purging.dnext;
        purging_remove(ph, s);
        ay_pagelist_coalesce(ph, s, now); /* still dirty: it was not purged, or not known to be */
    }
}
