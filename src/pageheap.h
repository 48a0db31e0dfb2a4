/* SPDX-License-Identifier: MIT */
/* pageheap.h - the page heap: spans of pages carved from blocks taken from
 * the OS: blocks of 256 pages (1 MiB), or, for a request of more pages, a
 * block of that request rounded up to a multiple of 256 pages.  Requests up
 * to AY_LARGE_MAX_PAGES come here; only larger ones are direct maps
 * (direct.h).
 *
 * Allocation is best fit, touched pages first: the smallest dirty free span
 * that is large enough, else the smallest clean one, with its tail split
 * off and put back, so that freed large blocks serve later requests, of any
 * size up to theirs, before untouched pages are.  Freeing merges the span
 * with its free neighbours in the same block (a span never crosses a block:
 * the page heap only ever reads the records of its own blocks, and a block
 * that is wholly free can be given back), except for a LARGE span below
 * AY_MAX_SPAN_PAGES, which is *kept* while the heap's freed ones are not
 * nearly all resident (one in 8 to one in 256 is sampled with mincore,
 * fewer while the samples agree with the average): it goes on its
 * length's list whole and dirty, unmerged, so that the next request of
 * that length (a LARGE span's length is rounded to one of eight per
 * doubling) gets the very pages it left, the few its block touched among
 * them (the sparse row: a buffer written at its two ends); in a heap whose
 * blocks are written all over, merging loses nothing, as any placement in
 * free pages reuses touched ones.  A kept span merges when decay purges
 * it, when an allocation finds no dirty fit and the span has waited
 * KEPT_MIN_AGE_MS (oldest first, until a fit appears), and, all of them,
 * when the OS refuses a new block.  Free spans whose pages may
 * be resident ("dirty") sit in a FIFO by the time they were freed; once one
 * has been free for decay_ms it is purged (0: at once, -1: never), and dirty
 * pages above max(64 MiB, 2 x active) are purged at once, oldest first.
 * Purging a span that is a whole block unmaps the block (address space goes
 * back too); any other span is purged with madvise.  When the OS refuses a
 * new block, every wholly free block is unmapped and the map tried again.
 * A request that needs a new block of its own (2 MiB or more) first unmaps
 * the free blocks of their own, which were too small for it: with varying
 * sizes they would otherwise pile up, resident, without serving anything.
 *
 * Transparent huge pages (the thp setting, conf.h): under auto, a block of
 * its own is 2 MiB aligned with MADV_HUGEPAGE, and every other block is
 * left to the kernel's default; always: every block so, from the first
 * (2 MiB, 512 pages, rather than 1 MiB); never: every block is
 * marked MADV_NOHUGEPAGE, so that not even a kernel set to "always" gives
 * it huge pages.
 *
 * The secure flavour's large blocks have a guard page before and after
 * them (large.c), made inaccessible with mprotect.  A freed one keeps its
 * guards: its span waits, GUARDED, in the page heap's guarded cache (up to
 * AY_GUARDED_SPANS spans and AY_GUARDED_MAX_PAGES pages, oldest first), and
 * the next large block that fits it (within a quarter more pages) takes it
 * with no system call.  A span leaves the cache when it is the oldest and
 * a new one needs the room, when it has waited decay_ms (as a free span's
 * pages are purged), or on a purge of everything; only then are its guards
 * lifted and the span freed and merged.  Its pages count as free and dirty
 * in the stats (guarded_pages).
 *
 * No system call runs under the page-heap lock.  A new block is mapped, and
 * its pagemap leaves and span records made, before the lock is taken; spans
 * to purge are taken off the lists under the lock, purged without it, and
 * put back (or their block dropped).  Span records needed under the lock
 * come from a small reserve filled beforehand.  Callers must not hold a
 * central-cache lock either: the central cache drops its lock before it
 * calls in.
 *
 * Invariants (under the lock): no two free spans of one block are adjacent
 * unless one of them is kept; a kept span is dirty, and its pages map to it
 * in the pagemap (a LARGE span's do, bin 0: neither its free nor its reuse
 * whole writes them), while the pages inside any other free span map to
 * nothing; every free span is on
 * exactly one size list, and on the decay FIFO iff it is dirty; kept_pages
 * is the kept spans' pages; guarded[0 .. nguarded-1] are the GUARDED
 * spans, oldest first; the page counters add up:
 *   active + free_dirty + free_clean + purging + guarded = mapped  (pages).
 * Lock order: the page heap lock is taken alone or before the metadata lock
 * (a leaf, which it takes inside to give span records back).
 */
#ifndef ALLOY_PAGEHEAP_H
#define ALLOY_PAGEHEAP_H
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal.h"
#include "span.h"
#include "usage.h"

#define AY_BLOCK_PAGES 256         /* pages of a block taken from the OS: 1 MiB, or a multiple */
#define AY_LARGE_MAX_PAGES 8192    /* 32 MiB: larger requests are direct maps */
#define AY_HUGE_PAGES 512          /* 2 MiB: blocks this large get transparent huge pages */
#define AY_GUARDED_SPANS 8         /* secure: freed large spans kept with their guards */
#define AY_GUARDED_MAX_PAGES 4096u /* 16 MiB: and at most this many pages of them */
#define AY_KEEP_SHIFT_MIN 3        /* a mincore sample every 8 freed medium spans at most, */
#define AY_KEEP_SHIFT_MAX 8        /* and every 256 at least */

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
    ay_span_t *guarded[AY_GUARDED_SPANS]; /* secure: GUARDED spans, oldest first */
    unsigned nguarded;
    size_t guarded_pages; /* their pages */
} ay_pageheap_t;

/* Set up ph, which must be zero. */
void ay_pageheap_init(ay_pageheap_t *ph, ay_usage_t *usage);

/* A span of npages pages (1..AY_LARGE_MAX_PAGES) whose start is aligned to
 * align_pages pages (a power of two; 1 for none), in the given state (a
 * LARGE span without alignment of 8 to 255 pages has npages rounded up to
 * one of eight lengths per doubling, but in the secure flavour, whose
 * guarded spans large.c lays out: s->npages says how many), with
 * every page mapped to it with the pagemap entry `list` (pagemap.h), owned
 * by ph.  s->dirty tells whether
 * its pages may be non-zero (0: fresh or purged, they read as zero).  NULL
 * when out of memory. */
ay_span_t *ay_pageheap_alloc(ay_pageheap_t *ph, uintptr_t npages, uintptr_t align_pages,
                             unsigned state, uint32_t list);
/* The pages of a LARGE span that ay_pageheap_alloc gives a request of
 * npages without alignment: npages, rounded up from 8 to 255 pages to one
 * of eight lengths per doubling (8, 9, ..., 16, 18, ..., 240, 256). */
uintptr_t ay_pageheap_large_pages(uintptr_t npages);
/* Resize LARGE span s of ph in place to npages pages (1..AY_LARGE_MAX_PAGES):
 * it grows into the free span that follows it in its block, or gives its
 * tail back (merged with a free span after it).  false, with s untouched,
 * when the free span after it is missing or too short, or no span record
 * can be had. */
bool ay_pageheap_resize(ay_pageheap_t *ph, ay_span_t *s, uintptr_t npages);
/* Secure flavour: a GUARDED span of ph of min_pages to max_pages pages
 * (the fewest), now LARGE again, its first and last page still
 * inaccessible; NULL when none fits. */
ay_span_t *ay_pageheap_guarded_take(ay_pageheap_t *ph, uintptr_t min_pages, uintptr_t max_pages);
/* Secure flavour: freed LARGE span s, whose first and last page (and no
 * other) are inaccessible, waits in ph's guarded cache; the spans it
 * pushes out (the oldest) have their guards lifted and are freed. */
void ay_pageheap_guarded_keep(ay_pageheap_t *ph, ay_span_t *s);
/* Give a SMALL or LARGE span of ph back; it is merged with free neighbours. */
void ay_pageheap_free(ay_pageheap_t *ph, ay_span_t *s);
/* Purge dirty free spans: those older than decay_ms, or all when `all`. */
void ay_pageheap_purge(ay_pageheap_t *ph, bool all);
/* Forget every span and unmap every block (an explicit heap's destruction;
 * nothing of ph may be in use, and no purge under way: see ay_heap_pin). */
void ay_pageheap_release_all(ay_pageheap_t *ph);

/* Check every invariant above; aborts on a violation (debug builds). */
void ay_pageheap_validate(ay_pageheap_t *ph);

/* Take ph's lock: tried, then spun on for a short while before the thread
 * sleeps (lock.h).  Every path of this module takes it so, and fork too. */
void ay_pageheap_lock(ay_pageheap_t *ph);
/* Fork support.  In the child, spans that a thread of the parent was
 * purging go back on the lists, still dirty. */
void ay_pageheap_unlock(ay_pageheap_t *ph);
void ay_pageheap_after_fork_child(ay_pageheap_t *ph);

#endif
