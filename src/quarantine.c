/* SPDX-License-Identifier: MIT */
/* quarantine.c - the secure flavour's quarantine of freed blocks: making it
 * and emptying it (see quarantine.h, whose invariants this keeps; the push
 * is in free.h, the rotation inline in quarantine.h).  A quarantine is
 * metadata memory, made with its thread's cache record and kept with it. */
#include "quarantine.h"

#include "meta.h"
#include "policy.h"

ay_quarantine_t *ay_quarantine_new(void) {
    ay_quarantine_t *q = ay_meta_alloc(sizeof(ay_quarantine_t));
    if (!q)
        return NULL;
    for (unsigned b = 0; b < AY_NUM_BINS; b++) {
        uint32_t k = b ? ay_quarantine_k(ay_policy_class_size(b - 1)) : 0; /* bin b: class b - 1 */
        q->fresh[b].head = AY_LIST_END;
        q->fresh[b].limit = k;
        q->fresh[b].room = 0; /* the first push arms it (tcache.c) */
    }
    return q;
}

uint32_t ay_quarantine_take(ay_quarantine_t *q, unsigned b, void **head, void **tail) {
    if (!q->nold[b] && q->fresh_tail[b])
        ay_quarantine_fresh_to_old(q, b);
    return ay_quarantine_old_out(q, b, head, tail);
}
