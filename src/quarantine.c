/* SPDX-License-Identifier: MIT */
/* quarantine.c - the secure flavour's quarantine of freed blocks (the
 * setting quarantine:BYTES): making it and emptying it (see quarantine.h,
 * whose invariants this keeps; the push is in free.h, the rotation and a
 * class's joining inline in quarantine.h).  A quarantine is part of its
 * thread's cache record (tcache.h). */
#include "quarantine.h"

#include "policy.h"

void ay_quarantine_init(ay_quarantine_t *q, size_t bound) {
    for (unsigned b = 0; b < AY_NUM_BINS; b++) {
        /* bin b: class b - 1; it joins at its first free (quarantine.h) */
        uint32_t k = b && bound && ay_quarantine_k_max(ay_policy_class_size(b - 1))
                         ? AY_QUARANTINE_K_MIN
                         : 0;
        q->fresh[b].head = AY_LIST_END;
        q->fresh[b].limit = k; /* the thread cache adds the align mask (tcache.c) */
        q->fresh[b].room = 0;  /* the first push arms it (free.h) */
    }
    q->held = 0;
    q->bound = bound;
}

uint32_t ay_quarantine_take(ay_quarantine_t *q, unsigned b, void **head, void **tail) {
    if (!q->nold[b] && q->fresh_tail[b])
        ay_quarantine_fresh_to_old(q, b);
    return ay_quarantine_old_out(q, b, head, tail);
}
