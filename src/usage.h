/* SPDX-License-Identifier: MIT */
/* usage.h - one heap's active bytes and their peak, shared by the two
 * modules that hand out its pages: the page heap (spans) and the direct
 * maps.  Each adds and subtracts its own bytes; the peak is the highest sum
 * seen.  Lock-free (relaxed atomics), so either module may update it with
 * or without its own lock held, and stats read it at any time.
 */
#ifndef ALLOY_USAGE_H
#define ALLOY_USAGE_H
#include <stddef.h>

#include "internal.h"

typedef struct ay_usage {
    size_t active; /* bytes of live spans and direct maps */
    size_t peak;   /* highest `active` seen */
} ay_usage_t;

AY_INLINE void ay_usage_add(ay_usage_t *u, ptrdiff_t delta) {
    size_t now = __atomic_add_fetch(&u->active, (size_t)delta, __ATOMIC_RELAXED);
    if (delta <= 0)
        return;
    size_t peak = AY_LOAD(&u->peak);
    while (now > peak && !__atomic_compare_exchange_n(&u->peak, &peak, now, 1, __ATOMIC_RELAXED,
                                                      __ATOMIC_RELAXED))
        ;
}

#endif
