/* quarantine.h - the secure flavour's quarantine: freed small blocks wait
 * here, per thread, before they go back to a free list, so that a block is
 * not handed out again right after it was freed.
 *
 * A ring of AY_QUARANTINE_SLOTS blocks and at most AY_QUARANTINE_BYTES
 * bytes per thread, first in, first out, for blocks of up to
 * AY_QUARANTINE_MAX_BLOCK bytes: holding larger ones back makes every
 * reuse a fresh block, and a page fault (as in scudo, whose quarantine
 * also stops at a chunk size).  A block that enters has its
 * first words (up to 32 bytes, never its tag) overwritten with a pattern
 * derived from its address and the tag key; when it leaves, the pattern is
 * checked, and a block that was written to after it was freed ends the
 * process with a message.  The ring lives in metadata memory, made on the
 * thread's first free, and is emptied at thread exit and by
 * alloy_thread_flush.  Only blocks of automatic heaps enter (explicit
 * heaps can be destroyed with everything in them).
 *
 * Invariants: count <= AY_QUARANTINE_SLOTS; bytes is the sum of the
 * blocks' sizes and <= AY_QUARANTINE_BYTES, except transiently in put.
 */
#ifndef ALLOY_QUARANTINE_H
#define ALLOY_QUARANTINE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AY_QUARANTINE_SLOTS 256
#define AY_QUARANTINE_BYTES ((size_t)256 << 10)
#define AY_QUARANTINE_MAX_BLOCK ((size_t)4096) /* larger blocks go back at once */

typedef struct ay_quarantine {
    uint32_t head;   /* oldest block */
    uint32_t count;  /* blocks held */
    size_t bytes;    /* their sizes */
    void *block[AY_QUARANTINE_SLOTS];
    uint32_t size[AY_QUARANTINE_SLOTS];
} ay_quarantine_t;

/* Put the free block p (`size` bytes, its class size) into the quarantine
 * at *q (a thread cache's; made on first use).  false when p is too large,
 * or there is no quarantine and none can be made (the caller frees p). */
bool ay_quarantine_put(ay_quarantine_t **q, void *p, size_t size);
/* The oldest block, when the quarantine is over its bounds (after a put),
 * or any when `all`; NULL otherwise.  Its pattern has been checked. */
void *ay_quarantine_take(ay_quarantine_t **q, bool all);

#endif
