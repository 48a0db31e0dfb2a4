/* SPDX-License-Identifier: MIT */
/* pagedecay.h - purging the page heap's dirty free spans.  Free spans
 * whose pages may be resident ("dirty") sit in the decay FIFO by the time
 * they were freed (pagelist.h); once one has been free for decay_ms it is
 * purged (0: at once, -1: never), and dirty pages above the cap,
 * max(64 MiB, 2 x active), are purged at once, oldest first.  Purging a
 * span that is a whole block unmaps the block (address space goes back
 * too, pageblock.h); any other span is purged with madvise and goes back on
 * the lists clean, merged.
 *
 * No system call runs under the lock: spans to purge are taken off the
 * lists under it, onto the `purging` list (their pages counted in
 * purging_pages), purged without it, and put back (or their block dropped).
 * Invariant: a span is on the purging list iff it is off the size lists
 * while a pass purges it.
 */
#ifndef ALLOY_PAGEDECAY_H
#define ALLOY_PAGEDECAY_H
#include <stdbool.h>
#include <stdint.h>

#include "pagelist.h"

/* Under the lock: is the oldest dirty span due to be purged at time now
 * (ms), by age or by the cap?  With `all`, any dirty span is. */
bool ay_pagedecay_due(const ay_pageheap_t *ph, uint64_t now, bool all);
/* Without the lock: purge every span that is due at time now, oldest
 * first, a batch at a time.  A pass stops when madvise fails. */
void ay_pagedecay_run(ay_pageheap_t *ph, uint64_t now, bool all);
/* Fork child, under the (new) lock: spans that a thread of the parent was
 * purging go back on the lists, still dirty. */
void ay_pagedecay_after_fork_child(ay_pageheap_t *ph);

#endif
