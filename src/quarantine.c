/* SPDX-License-Identifier: MIT */
/* quarantine.c - the secure flavour's quarantine of freed blocks: making a
 * ring and emptying it (see quarantine.h, whose invariants these keep; the
 * fast path is in free.h).  A ring is metadata memory, zeroed (every slot
 * empty) when it is made, and kept with its thread's cache record. */
#include "quarantine.h"

#include "meta.h"

ay_quarantine_t *ay_quarantine_new(void) { return ay_meta_alloc(sizeof(ay_quarantine_t)); }

uintptr_t ay_quarantine_take(ay_quarantine_t *q) {
    for (unsigned k = 0; k < AY_QUARANTINE_SLOTS; k++) {
        uintptr_t *sl = &q->slot[(q->head + k) % AY_QUARANTINE_SLOTS];
        if (*sl) {
            uintptr_t out = *sl;
            *sl = 0;
            return out;
        }
    }
    return 0;
}
