/* SPDX-License-Identifier: MIT */
/* pageheap.h - the page heap: spans of pages carved from blocks taken from
 * the OS (pageblock.h).  Requests up to AY_LARGE_MAX_PAGES come here; only
 * larger ones are direct maps (direct.h).  This module is the page heap's
 * entry points; the work is done by the modules under it, each with its
 * own invariants:
 *   pagelist   the record (ay_pageheap_t), its lock, the span-record
 *              reserve, the free spans' size lists, best fit, split, merge,
 *              the page counters
 *   pageblock  blocks from the OS and back, transparent huge pages
 *   pagedecay  purging dirty free spans: decay_ms and the dirty cap
 *   pagekeep   kept spans and the resident sample that decides them
 *
 * Allocation is best fit, touched pages first: the smallest dirty free span
 * that is large enough, else one that kept spans old enough make when
 * merged, else the smallest clean one, else a new block, with its tail
 * split off and put back, so that freed large blocks serve later requests,
 * of any size up to theirs, before untouched pages are; when the OS refuses
 * a new block, every kept span is merged and the search tried once more.
 * Freeing merges the span with its free neighbours in the same block (a
 * wholly free block can be given back), except for a LARGE span that is
 * kept (pagekeep.h).  The end of every allocation, free and resize purges
 * what has become due (pagedecay.h), with the lock dropped.
 * Resizing a LARGE span in place grows it into the free span that follows
 * it, or gives its tail back.
 *
 * No system call runs under the page-heap lock.  A new block is mapped, and
 * its pagemap leaves and span records made, before the lock is taken; spans
 * to purge are taken off the lists under the lock, purged without it, and
 * put back (or their block dropped).  Callers must not hold a
 * central-cache lock either: the central cache drops its lock before it
 * calls in.  Lock order: pagelist.h.
 */
#ifndef ALLOY_PAGEHEAP_H
#define ALLOY_PAGEHEAP_H
#include <stdbool.h>
#include <stdint.h>

#include "pagelist.h"
#include "span.h"
#include "usage.h"

/* Set up ph, which must be zero. */
void ay_pageheap_init(ay_pageheap_t *ph, ay_usage_t *usage);

/* A span of npages pages (1..AY_LARGE_MAX_PAGES) whose start is aligned to
 * align_pages pages (a power of two; 1 for none), in the given state (a
 * LARGE span without alignment of 8 to 255 pages has npages rounded up to
 * one of eight lengths per doubling: s->npages says how many), with every
 * page mapped to it with the pagemap entry `list` (pagemap.h), owned
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
/* Give a SMALL or LARGE span of ph back; it is merged with free neighbours. */
void ay_pageheap_free(ay_pageheap_t *ph, ay_span_t *s);
/* Purge what is due (pagedecay.h): the dirty free spans older than
 * decay_ms or above the cap; all of them when `all`. */
void ay_pageheap_purge(ay_pageheap_t *ph, bool all);
/* Has nothing been allocated from or freed to ph for decay_ms, at time now
 * (ms)?  Then every free span in it has been free that long.  Read without
 * the lock: a hint, as of some moment before the call. */
bool ay_pageheap_idle(const ay_pageheap_t *ph, uint64_t now);
/* Forget every span and unmap every block (an explicit heap's destruction;
 * nothing of ph may be in use, and no purge under way: see ay_heap_pin). */
void ay_pageheap_release_all(ay_pageheap_t *ph);

/* Under the lock, abort on a violation of the invariants that
 * ay_pagelist_validate (the lists, the page counters, the purging list,
 * the blocks) and ay_pagekeep_validate (the sampling's bounds) check; the
 * debug flavour runs it at the end of its allocations and frees. */
void ay_pageheap_validate(ay_pageheap_t *ph);

/* Take ph's lock (ay_pagelist_lock): tried, then spun on for a short while
 * before the thread sleeps (lock.h).  Every path of the page heap takes it
 * so, and fork too. */
void ay_pageheap_lock(ay_pageheap_t *ph);
/* Fork support.  In the child, spans that a thread of the parent was
 * purging go back on the lists, still dirty. */
void ay_pageheap_unlock(ay_pageheap_t *ph);
void ay_pageheap_after_fork_child(ay_pageheap_t *ph);

#endif
