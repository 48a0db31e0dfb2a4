/* SPDX-License-Identifier: MIT */
/* pageblock.h - the page heap's blocks: memory taken from the OS and given
 * back.  A block is 256 pages (1 MiB); for a request of more pages, that
 * request rounded up to a multiple of 256 pages; for a request of more than
 * half a block and less than a block, that request rounded up to a multiple
 * of 16 pages (64 KiB), so that it costs about its size in address space; its record (DEAD, on ph's
 * `blocks` list) holds its range, and every span carved from it points to
 * that record (s->block).  A block is mapped, placed on the heap's NUMA node
 * and given its pagemap leaves and span records before the lock is taken,
 * then goes on the free lists whole (pagelist.h); a wholly free block is
 * forgotten under the lock and unmapped after it.
 *
 * Transparent huge pages (the thp setting, conf.h): under auto, a block of
 * its own (a request of 2 MiB or more) is 2 MiB aligned with MADV_HUGEPAGE,
 * and every other block is left to the kernel's default; always: every
 * block so, from the first (2 MiB, 512 pages, rather than 1 MiB); never:
 * every block is marked MADV_NOHUGEPAGE, so that not even a kernel set to
 * "always" gives it huge pages.
 *
 * When the OS refuses a new block, every wholly free block is unmapped and
 * the map tried again.  A request that needs a block of its own first
 * unmaps the free blocks of their own, which were too small for it: with
 * varying sizes they would otherwise pile up, resident, without serving
 * anything.  Invariant: mapped_pages is the pages of the blocks on ph's
 * `blocks` list; no system call runs under the lock.
 */
#ifndef ALLOY_PAGEBLOCK_H
#define ALLOY_PAGEBLOCK_H
#include <stdbool.h>
#include <stdint.h>

#include "pagelist.h"

#define AY_HUGE_PAGES 512    /* 2 MiB: blocks this large get transparent huge pages */
#define AY_OWN_BLOCK_STEP 16 /* pages: a block of its own is a multiple of this */

/* Without the lock: map a new block of at least npages pages and put it on
 * ph's free lists, clean.  false when out of memory. */
bool ay_pageblock_grow(ay_pageheap_t *ph, uintptr_t npages);
/* Under the lock: free span s, off the lists, is a whole block; forget the
 * block (its pages, its records) and return its range for the caller to
 * unmap (ay_os_unmap_chunk) once the lock is dropped. */
void ay_pageblock_drop(ay_pageheap_t *ph, ay_span_t *s, uintptr_t *start, uintptr_t *npages);
/* Under the lock: forget every span record of every block of ph, whatever
 * its state, and move the blocks' records from ph's list onto `out` (a
 * list head), for ay_pageblock_unmap_all once the lock is dropped. */
void ay_pageblock_forget_all(ay_pageheap_t *ph, ay_span_t *out);
/* Without the lock: unmap every block on list `blocks` and delete its
 * record. */
void ay_pageblock_unmap_all(ay_span_t *blocks);

#endif
