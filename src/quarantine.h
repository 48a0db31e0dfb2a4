/* SPDX-License-Identifier: MIT */
/* quarantine.h - the secure flavour's quarantine: freed small blocks wait
 * here, per thread, before they go back to a free list, so that a block is
 * not handed out again right after it was freed.
 *
 * A ring of AY_QUARANTINE_SLOTS blocks per thread, first in, first out, for
 * blocks of up to AY_QUARANTINE_MAX_BLOCK bytes (holding larger ones back
 * makes every reuse a fresh block, and a page fault; scudo's quarantine also
 * stops at a chunk size): at most 512 KiB per thread.  A free puts its block
 * in the slot the oldest one leaves, and that one goes on to a free list.
 * A block that waits holds its "free" tag (secure.h) in its first word as
 * well as in its tag word; both are checked when it leaves, and a block
 * that was written to after it was freed ends the process with a message.
 * Free's fast path (free.h) does all this inline; the ring is made with
 * the thread's cache (tcache.c) and emptied whenever the cache is flushed:
 * at thread exit, by alloy_thread_flush, and when the thread changes heaps.
 * Only blocks of automatic heaps enter (explicit heaps can be destroyed
 * with everything in them).
 *
 * Invariants: slot[i].block is NULL or a free block of slot[i].size bytes
 * whose bin offset is slot[i].off; `head` is the slot the next block goes
 * into, which holds the oldest one.
 */
#ifndef ALLOY_QUARANTINE_H
#define ALLOY_QUARANTINE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "secure.h"

#define AY_QUARANTINE_SLOTS 128u /* a power of two */
#define AY_QUARANTINE_MAX_BLOCK ((size_t)4096)

typedef struct ay_quarantine_slot {
    void *block;   /* NULL: empty */
    uint32_t off;  /* its bin's offset (tcache.h) */
    uint32_t size; /* its size */
} ay_quarantine_slot_t;

typedef struct ay_quarantine {
    uint32_t head; /* the next slot: the oldest block */
    ay_quarantine_slot_t slot[AY_QUARANTINE_SLOTS];
} ay_quarantine_t;

/* Block p (of `size` bytes) enters: its tag word says "free", and so does
 * its first word. */
AY_INLINE void ay_quarantine_mark(void *p, size_t size) {
    uintptr_t f = ay_tag_free(p);
    *ay_tag_at(p, size) = f;
    *(uintptr_t *)p = f;
}

/* Block p (of `size` bytes) leaves: were both words left alone? */
AY_INLINE bool ay_quarantine_intact(void *p, size_t size) {
    uintptr_t f = ay_tag_free(p);
    return *(const uintptr_t *)p == f && *ay_tag_at(p, size) == f;
}

/* p (`size` bytes, bin offset off) takes the oldest block's slot, whose
 * contents are copied to *out (out->block NULL while the ring fills). */
AY_INLINE void ay_quarantine_swap(ay_quarantine_t *q, void *p, unsigned off, size_t size,
                                  ay_quarantine_slot_t *out) {
    ay_quarantine_slot_t *sl = &q->slot[q->head];
    *out = *sl;
    sl->block = p;
    sl->off = off;
    sl->size = (uint32_t)size;
    q->head = (q->head + 1) % AY_QUARANTINE_SLOTS;
}

/* A new, empty ring (metadata memory), or NULL. */
ay_quarantine_t *ay_quarantine_new(void);
/* Take the first waiting block out of q into *out; false when q is empty. */
bool ay_quarantine_take(ay_quarantine_t *q, ay_quarantine_slot_t *out);

#endif
