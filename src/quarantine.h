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
 * A slot is one word: the block's address, with its bin's byte offset
 * (tcache.h, under 2^16) in the top 16 bits, which no user-space address
 * uses (secure.h); 0 is an empty slot.  The block's size is its bin's.
 *
 * Invariants: slot[i] is 0 or holds a free block and its bin's offset;
 * `head` is the slot the next block goes into, which holds the oldest one.
 */
#ifndef ALLOY_QUARANTINE_H
#define ALLOY_QUARANTINE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "secure.h"

#define AY_QUARANTINE_SLOTS 128u /* a power of two */
#define AY_QUARANTINE_MAX_BLOCK ((size_t)4096)
#define AY_QUARANTINE_OFF_SHIFT 48

_Static_assert(AY_USER_ADDR_BITS <= AY_QUARANTINE_OFF_SHIFT,
               "a block's address fits below the offset");

typedef struct ay_quarantine {
    uint32_t head; /* the next slot: the oldest block */
    uintptr_t slot[AY_QUARANTINE_SLOTS];
} ay_quarantine_t;

/* A slot's word for block p of the bin at byte offset off, and back. */
AY_INLINE uintptr_t ay_quarantine_slot(const void *p, unsigned off) {
    return (uintptr_t)p | (uintptr_t)off << AY_QUARANTINE_OFF_SHIFT;
}
AY_INLINE void *ay_quarantine_block(uintptr_t slot) {
    return (void *)(slot & (((uintptr_t)1 << AY_QUARANTINE_OFF_SHIFT) - 1));
}
AY_INLINE unsigned ay_quarantine_off(uintptr_t slot) {
    return (unsigned)(slot >> AY_QUARANTINE_OFF_SHIFT);
}

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

/* Block p of the bin at byte offset off takes the oldest block's slot,
 * whose word it returns (0 while the ring fills). */
AY_INLINE uintptr_t ay_quarantine_swap(ay_quarantine_t *q, void *p, unsigned off) {
    uint32_t h = q->head;
    uintptr_t out = q->slot[h];
    q->slot[h] = ay_quarantine_slot(p, off);
    q->head = (h + 1) % AY_QUARANTINE_SLOTS;
    return out;
}

/* A new, empty ring (metadata memory), or NULL. */
ay_quarantine_t *ay_quarantine_new(void);
/* Take the first waiting block out of q: its slot's word, 0 when q is empty. */
uintptr_t ay_quarantine_take(ay_quarantine_t *q);

#endif
