/* SPDX-License-Identifier: MIT */
/* pagelist.h - the page heap's record and its free spans: the lock, the
 * reserve of span records, the 257 size lists with their bitmap, the decay
 * FIFO, best fit, splitting and merging, and the page counters.  This is the
 * lowest module of the page heap: the modules of blocks (pageblock.h), decay
 * (pagedecay.h) and kept spans (pagekeep.h) work on the lists through it,
 * and the page heap's entry points (pageheap.h) put them together.  The
 * layout of ay_pageheap_t is here, for all of them.
 *
 * A free span is on the list of its length ([256]: 256 pages or more),
 * dirty spans before clean ones, so that best fit reuses touched pages
 * before it touches purged or fresh ones; a dirty one is also on the decay
 * FIFO, in the order the spans became free and dirty (freed_ms).  A span
 * never crosses a block (the record of the block it lies in is s->block),
 * and merging looks only at the pages of the span's own block, whose
 * records are this page heap's.
 *
 * Invariants (under the lock): no two free spans of one block are adjacent
 * unless one of them is kept (pagekeep.h); a kept span is dirty, and its
 * pages map to it in the pagemap (a LARGE span's do, bin 0: neither its
 * free nor its reuse whole writes them), while the pages inside any other
 * free span map to nothing, its first and last page to it; every free span
 * is on exactly one size list, and on the decay FIFO iff it is dirty;
 * bit i of nonempty is set iff first[i] is not NULL; kept_pages is the kept
 * spans' pages; the page counters add up:
 *   active + free_dirty + free_clean + purging = mapped  (pages).
 * No system call runs under the lock, and no span record is made under it:
 * the records an operation needs come from the reserve, filled beforehand
 * (ay_pagelist_reserve).  Lock order: the page heap lock is taken alone or
 * before the metadata lock (a leaf, which it takes inside to give span
 * records back).
 */
#ifndef ALLOY_PAGELIST_H
#define ALLOY_PAGELIST_H
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal.h"
#include "lock.h"
#include "span.h"
#include "usage.h"

#define AY_BLOCK_PAGES 256      /* pages of a block taken from the OS: 1 MiB, or a multiple */
#define AY_LARGE_MAX_PAGES 8192 /* 32 MiB: larger requests are direct maps */
#define AY_RECORDS_NEEDED 2 /* records an allocation may take under the lock: a head and a tail */

typedef struct ay_pageheap {
    pthread_mutex_t lock;
    /* free spans by length ([256]: 256 or more), through prev/next, NULL at
     * both ends: two pointers a length (4 KiB in all, where span records as
     * list heads took 39 KiB, nearly all resident) */
    ay_span_t *first[AY_MAX_SPAN_PAGES + 1];
    ay_span_t *last[AY_MAX_SPAN_PAGES + 1];
    uint64_t nonempty[(AY_MAX_SPAN_PAGES + 64) / 64]; /* bit i: first[i] is not NULL */
    ay_span_t dirty;          /* decay FIFO head (dprev/dnext), oldest first */
    ay_span_t purging;        /* list head (dprev/dnext): spans being purged, off the lists */
    ay_span_t blocks;         /* list head: one record per block taken from the OS */
    ay_span_t *spare;         /* reserve of span records, linked by next */
    unsigned nspare;          /* records in the reserve */
    ay_usage_t *usage;        /* the owning heap's active bytes */
    int node;                 /* NUMA node index its blocks are placed on; -1: none */
    size_t mapped_pages;      /* pages of blocks taken from the OS */
    size_t active_pages;      /* pages of SMALL and LARGE spans */
    size_t small_pages;       /* pages of SMALL spans (written under the lock, read without) */
    size_t free_dirty_pages;  /* free pages that may be resident */
    size_t free_clean_pages;  /* free pages never touched or purged */
    size_t kept_pages;        /* free dirty pages of LARGE blocks kept whole (of free_dirty) */
    int resident_avg;         /* sampled freed LARGE spans' resident fraction, 0..256 */
    unsigned medium_frees;    /* kept-size LARGE spans freed (atomic) */
    unsigned keep_shift;      /* 1 in 2^this of them sampled; grows while samples agree */
    size_t purging_pages;     /* free pages off the lists while being purged */
    uint64_t purges;          /* purges: madvise calls and unmaps of wholly free blocks */
    uint64_t blocks_unmapped; /* wholly free blocks given back to the OS */
    uint64_t huge_blocks;     /* blocks mapped with MADV_HUGEPAGE */
    uint64_t used_ms;         /* when an allocation, resize or free last ended (written
                               * under the lock, read without: ay_pageheap_idle) */
} ay_pageheap_t;

/* Take ph's lock: tried, then spun on for a short while before the thread
 * sleeps (lock.h).  Every path of the page heap takes it so, and fork too. */
static inline void ay_pagelist_lock(ay_pageheap_t *ph) { (void)ay_lock_take(&ph->lock); }
/* Release ph's lock. */
static inline void ay_pagelist_unlock(ay_pageheap_t *ph) { pthread_mutex_unlock(&ph->lock); }

/* The size list of a span of npages pages. */
static inline unsigned ay_pagelist_index(uintptr_t npages) {
    return npages >= AY_MAX_SPAN_PAGES ? AY_MAX_SPAN_PAGES : (unsigned)npages;
}

/* The first byte past span s. */
static inline uintptr_t ay_pagelist_end(const ay_span_t *s) {
    return s->start + AY_PAGES_BYTES(s->npages);
}

/* Does span s (FREE, SMALL or LARGE) cover its whole block? */
static inline bool ay_pagelist_whole_block(const ay_span_t *s) {
    return s->start == s->block->start && s->npages == s->block->npages;
}

/* A zeroed span record from the reserve.  Under the lock, with nspare >= 1. */
ay_span_t *ay_pagelist_record_take(ay_pageheap_t *ph);
/* Span record s goes back to the reserve, DEAD, or to the metadata when the
 * reserve is full.  Under the lock. */
void ay_pagelist_record_give(ay_pageheap_t *ph, ay_span_t *s);
/* Without the lock: fill the reserve to AY_RECORDS_NEEDED records.  false
 * when metadata ran out. */
bool ay_pagelist_reserve(ay_pageheap_t *ph);

/* Span s, off the lists, becomes FREE and goes on its length's list (dirty
 * ones at the front), and, dirty, at the back of the decay FIFO with
 * freed_ms = now; its first and last page map to it.  Under the lock; s is
 * not merged (ay_pagelist_coalesce merges). */
void ay_pagelist_insert(ay_pageheap_t *ph, ay_span_t *s, uint64_t now);
/* Span s leaves the lists.  Its boundary pages map to nothing until the
 * caller re-registers whatever the pages become, so that no neighbour sees
 * (and merges with) it meanwhile; a kept span's other pages, which still
 * map to it, map to nothing too, unless map_stays: the caller takes s
 * whole, as a LARGE span, whose every page maps to s with bin 0 already.
 * s is no longer kept. */
void ay_pagelist_unlist(ay_pageheap_t *ph, ay_span_t *s, bool map_stays);
/* ay_pagelist_unlist without map_stays. */
void ay_pagelist_remove(ay_pageheap_t *ph, ay_span_t *s);
/* The free span that starts just after s, in s's block, or NULL; a kept
 * span counts only with kept_too.  Under the lock. */
ay_span_t *ay_pagelist_next_free(const ay_span_t *s, bool kept_too);
/* Free span s (not kept, off the lists), merged with its free neighbours
 * that are not kept, goes on the lists; the neighbours' records go back to
 * the reserve.  Under the lock. */
void ay_pagelist_coalesce(ay_pageheap_t *ph, ay_span_t *s, uint64_t now);
/* A piece split off a free span goes on the lists: merged with its free
 * neighbours when the span was a kept one (whose neighbours may be free),
 * as it is otherwise (a span that was not kept has none). */
void ay_pagelist_piece_insert(ay_pageheap_t *ph, ay_span_t *piece, bool was_kept, uint64_t now);
/* The first `pages` pages of span s (off the lists) become a free span of
 * their own, and s keeps the rest.  Under the lock, with a record reserved. */
void ay_pagelist_split_head(ay_pageheap_t *ph, ay_span_t *s, uintptr_t pages, bool was_kept,
                            uint64_t now);
/* Span s (off the lists) keeps its first `pages` pages; the rest becomes a
 * free span.  Under the lock, with a record reserved. */
void ay_pagelist_split_tail(ay_pageheap_t *ph, ay_span_t *s, uintptr_t pages, bool was_kept,
                            uint64_t now);
/* Smallest free span of at least npages pages, or NULL; with dirty_only,
 * the smallest dirty one.  Under the lock; the span stays on the lists. */
ay_span_t *ay_pagelist_best_fit(ay_pageheap_t *ph, uintptr_t npages, bool dirty_only);

/* Under the lock, abort on a violation of: the bitmap against the size
 * lists; each free span on its length's list, inside its block, its first
 * and last page (and, kept or not, its second) mapped as above, not next
 * to a free span unless kept, dirty if kept; the decay FIFO holding dirty
 * free spans only; the page counters against the lists and adding up; the
 * purging list (free spans) against purging_pages; the blocks' pages
 * against mapped_pages. */
void ay_pagelist_validate(ay_pageheap_t *ph);

#endif
