/* SPDX-License-Identifier: MIT */
/* quarantine.h - the secure flavour's quarantine, a setting
 * (quarantine:BYTES, off by default): freed small blocks wait here, per
 * thread and per class, before they go back to a free list, so that a
 * block is not handed out again right after it was freed.
 *
 * Each class of up to AY_QUARANTINE_MAX_BLOCK bytes (holding larger ones
 * back makes every reuse a fresh block, and a page fault; scudo's quarantine
 * also stops at a chunk size) has two lists in the thread's quarantine: the
 * blocks freed since the last rotation (`fresh`, laid out as a bin, at
 * AY_QUARANTINE_OFF after the thread's bins, tcache.h: its room counts down
 * from the class's K) and the batch before (`old`).  free
 * pushes onto `fresh` as it would onto the thread's list (free.h: a link,
 * no other work); the push that finds no room takes the slow path, where a
 * rotation (ay_quarantine_rotate) hands `old` to the thread cache, which
 * splices it onto the thread's list in one step (tcache.c: its first
 * block's link, then its last's: the first block pushed, whose link must
 * still be the end of the list), `fresh` becomes `old`, and the block being
 * freed starts the new `fresh` list.  So a freed block waits for at least
 * K + 1 more frees of its class, and at most 2K + 2, and a class holds at
 * most 2(K + 1) blocks.
 *
 * The setting bounds what a thread's quarantine holds, in bytes (`bound`):
 * a class joins the quarantine at its first free (ay_quarantine_join), with
 * a K of AY_QUARANTINE_K_MIN (2), if its 2(K + 1) blocks fit within the
 * bound beside those of the classes that joined before; else it does not
 * wait at all (its K becomes 0).  A class's K doubles at each rotation, up
 * to AY_QUARANTINE_BLOCKS (16), while the doubling fits
 * (ay_quarantine_k_next).  So a class a thread frees first and often gets
 * the most K, and a thread that frees a little of many classes (a
 * short-lived one) holds no more than the bound.  `held` counts the bytes
 * the classes' Ks allow, not the bytes waiting now, and never shrinks: a
 * class's K stays until the thread's record is made again.  No system call,
 * no walk of the blocks.
 *
 * A waiting block's free mark (its second word; with secure_tags:true, its
 * tag word) says "free", so that a second free of it is caught at the free
 * (free.h), and its first word holds its link, which malloc tests when
 * it hands the block out again (secure.h): a block that was written to
 * while it waited ends the process there, with "free list corrupted", or,
 * for the batch's last block, at the rotation, with "a block was written
 * to after it was freed"; the lists the cache gives back (an overflow, a flush) are walked
 * and checked the same way (transfer.h).  The lists are emptied whenever
 * the cache is flushed: at thread exit, by alloy_thread_flush, and when the
 * thread changes heaps.  Only blocks of automatic heaps enter (explicit
 * heaps can be destroyed with everything in them).
 *
 * Invariants: fresh_tail[b] is NULL and fresh[b] empty with room 0, or
 * fresh[b] holds K + 1 - room blocks of bin b, AY_LIST_END-terminated, the
 * last being fresh_tail[b]; old[b] holds nold[b] blocks of bin b (none:
 * NULL), the last being old_tail[b]; a class holds blocks only once it has
 * joined; held is the sum of 2(K + 1) x size over the classes that joined,
 * and at most bound.
 */
#ifndef ALLOY_QUARANTINE_H
#define ALLOY_QUARANTINE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "secure.h"

#define AY_QUARANTINE_MAX_BLOCK ((size_t)4096)
#ifndef AY_QUARANTINE_BLOCKS
#define AY_QUARANTINE_BLOCKS 16u /* K of the small classes */
#endif
#define AY_QUARANTINE_K_MIN 2u /* K of a class at first */

/* A list of one class's waiting blocks, laid out as a thread-cache list
 * (ay_bin_t, tcache.h) so that free pushes onto it the same way.  Its limit
 * word holds K in its low bits and the class's align mask in its top byte,
 * as a bin's (tcache.h). */
typedef struct ay_qlist {
    void *head;     /* AY_LIST_END: none */
    int32_t room;   /* pushes before the slow path: K - length, or 0 while empty */
    uint32_t limit; /* K | align mask << 24 */
} ay_qlist_t;
_Static_assert(sizeof(ay_qlist_t) == AY_BIN_BYTES, "a bin's byte offset indexes the lists");
#define AY_QLIST_K_MASK (((uint32_t)1 << 24) - 1)

/* The quarantine of a thread cache, inside its record (tcache.h), where
 * `fresh` is at a fixed offset from the thread's lists. */
typedef struct ay_quarantine {
    ay_qlist_t fresh[AY_NUM_BINS]; /* freed since the last rotation (the fast path's push) */
    void *fresh_tail[AY_NUM_BINS]; /* its last block (the first pushed); NULL: empty */
    void *old[AY_NUM_BINS];        /* the batch before */
    void *old_tail[AY_NUM_BINS];   /* its last block */
    uint32_t nold[AY_NUM_BINS];    /* its length */
    bool joined[AY_NUM_BINS];      /* the class waits here: its 2(K + 1) blocks are in `held` */
    size_t held;                   /* bytes the joined classes may hold: 2(K + 1) x size each */
    size_t bound;                  /* the most `held` may be: the quarantine setting */
} ay_quarantine_t;

/* The most K of a class of `size` bytes (0: it does not wait). */
AY_INLINE uint32_t ay_quarantine_k_max(size_t size) {
    return size == 0 || size > AY_QUARANTINE_MAX_BLOCK ? 0 : AY_QUARANTINE_BLOCKS;
}

/* K of a class of `size` bytes for its next fresh list, at a rotation:
 * k, its K until now, doubled (up to AY_QUARANTINE_BLOCKS) while the
 * doubling keeps the thread's classes within q->bound (a class of K holds
 * at most 2(K + 1) blocks, so doubling K adds 2K).  A K never shrinks: a
 * class's blocks stay in its lists until the cache is flushed. */
AY_INLINE uint32_t ay_quarantine_k_next(ay_quarantine_t *q, uint32_t k, size_t size) {
    if (2 * k > AY_QUARANTINE_BLOCKS || q->held + 2 * k * size > q->bound)
        return k;
    q->held += 2 * k * size;
    return 2 * k;
}

/* The first free of bin b's class (of `size` bytes) since the record was
 * made: the class joins the quarantine if its least share, 2(K_MIN + 1)
 * blocks, fits within the bound; else its K becomes 0 and it never waits.
 * True when the class waits (it joined, now or before). */
AY_INLINE bool ay_quarantine_join(ay_quarantine_t *q, unsigned b, size_t size) {
    if (AY_LIKELY(q->joined[b]))
        return true;
    size_t share = 2 * (AY_QUARANTINE_K_MIN + 1) * size;
    if (q->held + share > q->bound) {
        q->fresh[b].limit &= ~AY_QLIST_K_MASK;
        return false;
    }
    q->held += share;
    q->joined[b] = true;
    return true;
}

/* Block p (of `size` bytes) enters: its tag word (or its free mark) says
 * "free" (secure.h). */
AY_INLINE void ay_quarantine_mark(void *p, size_t size) {
    *(ay_secure_tags ? ay_tag_at(p, size) : ay_mark_at(p)) = ay_tag_free(p);
}

/* Make q (zeroed) an empty quarantine that holds at most `bound` bytes
 * (0: no block waits in it: every list's K is 0). */
void ay_quarantine_init(ay_quarantine_t *q, size_t bound);

/* What leaves the quarantine is a list of n blocks of one bin, from *head
 * to *tail, whose link must still be the end of a list, for the caller to
 * check and put onto its own list in one step (tail's link, then the list's
 * head: tcache.c).  The functions below only move blocks between q's lists
 * and hand them out; they read no block and push onto no other list. */

/* The old batch of bin b leaves q (its length: 0, none). */
AY_INLINE uint32_t ay_quarantine_old_out(ay_quarantine_t *q, unsigned b, void **head, void **tail) {
    uint32_t n = q->nold[b];
    *head = q->old[b];
    *tail = q->old_tail[b];
    q->old[b] = q->old_tail[b] = NULL;
    q->nold[b] = 0;
    return n;
}

/* The fresh list of bin b (not empty) becomes its old batch (none now). */
AY_INLINE void ay_quarantine_fresh_to_old(ay_quarantine_t *q, unsigned b) {
    ay_qlist_t *fresh = &q->fresh[b];
    q->old[b] = fresh->head;
    q->old_tail[b] = q->fresh_tail[b];
    q->nold[b] = (fresh->limit & AY_QLIST_K_MASK) + 1 - (uint32_t)fresh->room;
    fresh->head = AY_LIST_END;
    fresh->room = 0;
    q->fresh_tail[b] = NULL;
}

/* The fresh list of bin b (its class joined: ay_quarantine_join) has no
 * room for block p (free.h's push): if it
 * holds blocks (K + 1), the old batch leaves (as ay_quarantine_old_out)
 * and the fresh list becomes the old batch; then p alone is the fresh
 * list, with room for K more.
 * Inline: the secure flavour's free calls it once in K + 1 frees. */
AY_INLINE uint32_t ay_quarantine_rotate(ay_quarantine_t *q, unsigned b, size_t size, void *p,
                                        void **head, void **tail) {
    ay_qlist_t *fresh = &q->fresh[b];
    uint32_t n = 0;
    if (q->fresh_tail[b]) {
        n = ay_quarantine_old_out(q, b, head, tail);
        ay_quarantine_fresh_to_old(q, b);
        uint32_t k = fresh->limit & AY_QLIST_K_MASK;
        fresh->limit += ay_quarantine_k_next(q, k, size) - k;
    }
    ay_link_set_raw(p, AY_LIST_END);
    fresh->head = p;
    q->fresh_tail[b] = p;
    fresh->room = (int32_t)(fresh->limit & AY_QLIST_K_MASK);
    return n;
}

/* The next batch of bin b to leave when q is emptied (a flush): the old
 * batch, then the fresh list; 0 when bin b holds no block. */
uint32_t ay_quarantine_take(ay_quarantine_t *q, unsigned b, void **head, void **tail);

#endif
