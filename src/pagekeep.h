/* SPDX-License-Identifier: MIT */
/* pagekeep.h - kept spans: a freed LARGE span below AY_MAX_SPAN_PAGES is
 * *kept* while the heap's freed ones are not nearly all resident: it goes
 * on its length's list whole and dirty, unmerged, so that the next request
 * of that length (a LARGE span's length is rounded to one of eight per
 * doubling) gets the very pages it left, the few its block touched among
 * them (the sparse row: a buffer written at its two ends); in a heap whose
 * blocks are written all over, merging loses nothing, as any placement in
 * free pages reuses touched ones.
 *
 * Whether they are is sampled: one freed medium span in 2^keep_shift (8 to
 * 256) is looked at with mincore, without the lock, and moves the heap's
 * average resident fraction (resident_avg, 0..256); a sample on the side of
 * the threshold the average is on doubles the interval to the next one, a
 * sample on the other side brings it back to the shortest.
 *
 * A kept span merges when decay purges it, when an allocation finds no
 * dirty fit and the span has waited KEPT_MIN_AGE_MS (oldest first, until a
 * fit appears: ay_pagekeep_merge_oldest), and, all of them, when the OS
 * refuses a new block (ay_pagekeep_merge_all).  Invariants: a kept span is
 * FREE and dirty, and every one of its pages maps to it (pagelist.h);
 * AY_KEEP_SHIFT_MIN <= keep_shift <= AY_KEEP_SHIFT_MAX.
 */
#ifndef ALLOY_PAGEKEEP_H
#define ALLOY_PAGEKEEP_H
#include <stdbool.h>
#include <stdint.h>

#include "pagelist.h"

#define AY_KEEP_SHIFT_MIN 3 /* a mincore sample every 8 freed medium spans at most, */
#define AY_KEEP_SHIFT_MAX 8 /* and every 256 at least */

/* Without the lock, for span s of ph being freed (its pages purged or
 * not): is it kept?  *resident is its resident pages when it was sampled,
 * else -1 (for ay_pagekeep_learn).  Decided on the average so far, read
 * without the lock; a sample moves it for the frees after it. */
bool ay_pagekeep_decide(ay_pageheap_t *ph, const ay_span_t *s, bool purged, int *resident);
/* Under the lock: a sample of `resident` resident pages of span s (-1: no
 * sample) moves the average and the sampling interval. */
void ay_pagekeep_learn(ay_pageheap_t *ph, const ay_span_t *s, int resident);
/* Under the lock: every kept span is merged with its free neighbours, so
 * that a request no span fits, or a wholly free block, can be seen. */
void ay_pagekeep_merge_all(ay_pageheap_t *ph, uint64_t now);
/* Under the lock, when no dirty span fits npages: the kept spans that have
 * waited KEPT_MIN_AGE_MS or longer are merged, oldest first, until one of
 * them makes a dirty fit, which is returned (on the lists); NULL when none
 * does. */
ay_span_t *ay_pagekeep_merge_oldest(ay_pageheap_t *ph, uintptr_t npages);
/* Under the lock, abort on a violation of the sampling's bounds:
 * AY_KEEP_SHIFT_MIN <= keep_shift <= AY_KEEP_SHIFT_MAX, 0 <= resident_avg
 * <= 256. */
void ay_pagekeep_validate(const ay_pageheap_t *ph);

#endif
