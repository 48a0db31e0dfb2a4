/* pageheap.h - the page heap: spans of 1..256 pages carved from 256-page
 * (1 MiB) blocks taken from the OS, plus direct maps above 256 pages.
 *
 * Allocation is best fit: the smallest free span that is large enough, with
 * its tail split off and put back.  Freeing merges the span with free
 * neighbours on both sides.  Free spans whose pages may be resident ("dirty")
 * sit in a FIFO by the time they were freed; once one has been free for
 * decay_ms it is purged with madvise (0: at once, -1: never).  Dirty pages
 * above max(64 MiB, 2 x active) are purged at once, oldest first.
 *
 * Invariants: no two free spans are adjacent; every free span is on exactly
 * one size list, and on the decay FIFO iff it is dirty; the page counters add
 * up: active + free_dirty + free_clean = mapped / 4 KiB.
 * Lock order: a central-cache lock may be held when calling in; the page
 * heap lock is taken inside, and the metadata and pagemap locks inside that.
 */
#ifndef ALLOY_PAGEHEAP_H
#define ALLOY_PAGEHEAP_H
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "internal.h"
#include "span.h"

#define AY_BLOCK_PAGES 256 /* pages taken from the OS at a time */

typedef struct ay_pageheap {
    pthread_mutex_t lock;
    ay_span_t free[AY_MAX_SPAN_PAGES + 1]; /* list heads by length; [256] holds >= 256 */
    uint64_t nonempty[(AY_MAX_SPAN_PAGES + 64) / 64]; /* bit i: free[i] is not empty */
    ay_span_t dirty;              /* decay FIFO head (dprev/dnext), oldest first */
    ay_span_t blocks;             /* list head: one record per block taken from the OS */
    ay_span_t direct;             /* list head: live direct maps */
    struct ay_heap *heap;         /* owner, recorded in every span */
    size_t mapped_pages;          /* pages of blocks taken from the OS */
    size_t active_pages;          /* pages of SMALL and LARGE spans */
    size_t free_dirty_pages;      /* free pages that may be resident */
    size_t free_clean_pages;      /* free pages never touched or purged */
    size_t peak_active_bytes;     /* high-water mark of active bytes, direct included */
    size_t direct_bytes;          /* bytes of live direct maps */
    uint64_t purges;              /* madvise calls */
} ay_pageheap_t;

void ay_pageheap_init(ay_pageheap_t *ph, struct ay_heap *owner);

/* A span of npages pages (1..256) whose start is aligned to align_pages pages
 * (a power of two; 1 for none), in the given state, with every page mapped to
 * it under `bin`.  NULL when out of memory. */
ay_span_t *ay_pageheap_alloc(ay_pageheap_t *ph, uintptr_t npages, uintptr_t align_pages,
                             unsigned state, unsigned bin);
/* Give a SMALL or LARGE span back; it is merged with free neighbours. */
void ay_pageheap_free(ay_pageheap_t *ph, ay_span_t *s);
/* Purge dirty free spans: those older than decay_ms, or all when `all`. */
void ay_pageheap_purge(ay_pageheap_t *ph, int all);

/* A block of `bytes` (page multiple) aligned to `align` mapped straight from
 * the OS and registered as a DIRECT span.  NULL when out of memory. */
ay_span_t *ay_direct_alloc(ay_pageheap_t *ph, size_t bytes, size_t align);
void ay_direct_free(ay_pageheap_t *ph, ay_span_t *s);
/* Resize a direct map in place or by moving it (mremap).  0 or -1. */
int ay_direct_resize(ay_pageheap_t *ph, ay_span_t *s, size_t bytes);

/* Check every invariant above; aborts on a violation (debug builds). */
void ay_pageheap_validate(ay_pageheap_t *ph);

#endif
