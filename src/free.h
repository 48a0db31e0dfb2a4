/* SPDX-License-Identifier: MIT */
/* free.h - free: its inline fast paths (release and secure), its slow path,
 * and the checks made on a pointer before it is freed or resized (free.c).
 *
 * free's fast path pushes the block onto its thread-cache list and sends
 * every other case to the slow path through its room count (tcache.h).
 * Bad input: freeing a pointer alloy does not own, a freed block, or a
 * pointer into a block aborts with a message naming the pointer, as soon as
 * it is seen (README, "Hardening", says which flavour sees what when).
 */
#ifndef ALLOY_FREE_H
#define ALLOY_FREE_H
#include <stdint.h>

#include "error.h"
#include "pagemap.h"
#include "quarantine.h"
#include "secure.h"
#include "span.h"
#include "tcache.h"

void ay_free_slow(void *p);
/* free's fast path missed after taking one from bin's room. */
void ay_free_miss(void *p, ay_bin_t *bin);
/* The secure flavour's free, when its fast path cannot. */
void ay_free_secure(void *p);
/* A free small block goes back to a list, without checks. */
void ay_free_unchecked(void *p);

/* Secure flavour: block p, of the bin at byte offset off (its tag marked),
 * waits in tc's quarantine (quarantine.h): a push, as onto a list. */
AY_INLINE void ay_free_quarantine(ay_tcache_t *tc, unsigned off, void *p) {
    ay_qlist_t *f = (ay_qlist_t *)((char *)tc->quarantine->fresh + off);
    ay_link_set_raw(p, f->head);
    f->head = p;
    if (AY_UNLIKELY(--f->room < 0))
        ay_tcache_quarantine_rotate(tc, off / AY_BIN_BYTES);
}

/* free's fast path (the pair's other half: alloc.h).  The bin is the cache
 * plus the offset the pagemap gives (no shift).  It has three branches: the
 * pagemap's range compare (an address beyond 48 bits, never one alloy
 * handed out, reads the empty leaf: pagemap.h); the list's room: it takes
 * one from it (tcache.h), and a list without room (full, or bin 0) misses,
 * and ay_free_miss gives it back; and the pointer's low bits against the
 * bin's align mask (tcache.h): a pointer that is not aligned as every block
 * of its class is (p + 1, p + 8 in a 16-byte class, p + 16 in a 64-byte one) goes to the slow path,
 * which reports it.  A block freed twice is not looked for here: malloc
 * finds it before it hands it out a second time (secure.h). */
AY_INLINE void ay_free_fast(void *p) {
    uintptr_t a = (uintptr_t)p;
    ay_pm_leaf_t *leaf = ay_pagemap_leaf(a);
    unsigned off = AY_LOAD(&leaf->list[ay_pagemap_index(a)]);
    ay_bin_t *bin = (ay_bin_t *)((char *)ay_tls.bins + off);
    AY_ROOM_TAKE(&bin->room, miss); /* no room left: the list is full, or bin 0 */
    if (AY_UNLIKELY((uint8_t)a & ((const uint8_t *)bin)[AY_BIN_MASK_BYTE]))
        goto miss;
    ay_link_set_raw(p, bin->head);
    bin->head = p;
    return;
miss:
    return ay_free_miss(p, bin);
}

/* The secure flavour's free fast path.  The tag word at the end of the
 * block must be the block's canary: that one compare catches an overflow
 * into the next block, a double free (the tag then says "free"), and a
 * pointer that is not the start of a block (the word it reads is then
 * someone's data), each reported by the slow path.  The tag then says
 * "free".  A block of up to AY_QUARANTINE_MAX_BLOCK bytes waits in the
 * thread's quarantine (quarantine.h: a push onto its class's list there);
 * a larger one goes onto its list at once. */
AY_INLINE void ay_free_fast_secure(void *p) {
    uintptr_t a = (uintptr_t)p, key = ay_tag_key; /* (a local: the stores below cannot move it) */
    unsigned off = AY_LOAD(&ay_pagemap_leaf(a)->list[ay_pagemap_index(a)]);
    ay_bin_t *bin = (ay_bin_t *)((char *)ay_tls.bins + off);
    if (AY_UNLIKELY(bin->room <= 0)) /* not small, no cache, a full list */
        return ay_free_secure(p);
    size_t size = ay_bin_size[off / AY_BIN_BYTES];
    uintptr_t *tag = ay_tag_at(p, size);
    if (AY_UNLIKELY(*tag != (a ^ key))) /* ay_tag_live */
        return ay_free_secure(p);
    *tag = ~(a ^ key); /* ay_tag_free */
    if (!ay_secure_quarantine || size > AY_QUARANTINE_MAX_BLOCK) {
        ay_link_set_raw(p, bin->head);
        bin->head = p;
        bin->room--;
        return;
    }
    ay_free_quarantine(ay_tcache_of_bins(ay_tls.bins), off, p); /* (a list with room: a cache's) */
}

/* The span of p, a block the caller is about to free or resize; aborts with
 * a message naming `fn` when p is not a block alloy handed out (unknown,
 * already free, or not the start of a block). */
ay_span_t *ay_block_span(const void *p, const char *fn);

#endif
