/* SPDX-License-Identifier: MIT */
/* pageguard.h - the secure flavour's guarded cache.  The secure flavour's
 * large blocks have a guard page before and after them (large.c), made
 * inaccessible with mprotect.  A freed one keeps its guards: its span
 * waits, GUARDED, in its page heap's cache (up to AY_GUARDED_SPANS spans
 * and AY_GUARDED_MAX_PAGES pages, oldest first), and the next large block
 * that fits it (within a quarter more pages) takes it with no system call.
 * A span leaves the cache when it is the oldest and a new one needs the
 * room, when it has waited decay_ms (as a free span's pages are purged), or
 * on a purge of everything; only then are its guards lifted and the span
 * freed and merged (pageheap.c: that needs the free path).  Its pages count
 * as free and dirty in the stats (guarded_pages).
 *
 * This module keeps the cache under the page-heap lock and makes no system
 * call.  Invariants (under the lock): guarded[0 .. nguarded-1] are the
 * GUARDED spans of ph, oldest (smallest freed_ms) first; guarded_pages is
 * their pages; their pages map to them (span.h), and they count in none of
 * the other page counters (pagelist.h).
 */
#ifndef ALLOY_PAGEGUARD_H
#define ALLOY_PAGEGUARD_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pagelist.h"

/* Under the lock: is the oldest guarded span due to leave the cache at time
 * now (ms)?  With `all`, any is. */
bool ay_pageguard_due(const ay_pageheap_t *ph, uint64_t now, bool all);
/* Under the lock: the guarded spans that are due leave the cache, oldest
 * first, into out[] (room for AY_GUARDED_SPANS), LARGE and active again,
 * their guards still on; returns how many. */
unsigned ay_pageguard_expire(ay_pageheap_t *ph, uint64_t now, bool all, ay_span_t **out);
/* Under the lock: the guarded span whose accessible pages are the fewest
 * within min_pages..max_pages leaves the cache, LARGE and active again;
 * NULL when none fits. */
ay_span_t *ay_pageguard_take(ay_pageheap_t *ph, uintptr_t min_pages, uintptr_t max_pages);
/* Under the lock: freed LARGE span s becomes GUARDED, freed at now, and
 * joins the cache; the oldest spans it pushes out, for room, go into out[]
 * (room for AY_GUARDED_SPANS) as ay_pageguard_expire's do; returns how
 * many. */
unsigned ay_pageguard_push(ay_pageheap_t *ph, ay_span_t *s, uint64_t now, ay_span_t **out);
/* Under the lock: the cache forgets its spans, whose records went with
 * their blocks (an explicit heap's destruction). */
void ay_pageguard_forget(ay_pageheap_t *ph);
/* Under the lock: check the invariants above; aborts on a violation.
 * Returns the cache's pages, counted. */
size_t ay_pageguard_validate(const ay_pageheap_t *ph);

#endif
