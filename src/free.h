/* SPDX-License-Identifier: MIT */
/* free.h - free: its inline fast paths (release and secure), its slow path,
 * and the checks made on a pointer before it is freed or resized (free.c).
 *
 * free's fast path pushes the block onto its thread-cache list and sends
 * every other case to the slow path through its room count (tcache.h).
 * Bad input: freeing a pointer alloy does not own, a freed block, or a
 * pointer into a block aborts with a message naming the pointer, as soon as
 * it is seen (README, "What happens on bad input", says which flavour sees
 * what when).
 */
#ifndef ALLOY_FREE_H
#define ALLOY_FREE_H
#include <stdint.h>

#include "cpucache.h"
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
/* The secure flavour's fast path missed after taking one from the room of
 * list q (a bin, or, with the quarantine on, its quarantine list). */
void ay_free_secure_miss(void *p, ay_bin_t *q);
/* A free small block goes back to a list, without checks. */
void ay_free_unchecked(void *p);

/* Secure flavour: block p, of the bin at byte offset off (checked, its tag
 * marked), waits in tc's quarantine (quarantine.h): a push, as onto a
 * list, or, when the list has no room, the rotation, after which p is the
 * first block of the new list. */
AY_INLINE void ay_free_quarantine(ay_tcache_t *tc, unsigned off, void *p) {
    ay_qlist_t *f = (ay_qlist_t *)((char *)tc->quarantine->fresh + off);
    if (AY_UNLIKELY(f->room <= 0))
        return ay_tcache_quarantine_rotate(tc, off / AY_BIN_BYTES, p);
    ay_link_set_raw(p, f->head);
    f->head = p;
    f->room--;
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
/* free's fast path in per-CPU mode (cpucache.h): the pagemap gives the
 * bin's offset, and one sequence pushes the block onto the CPU's list of
 * its class, writing its mark; bin 0 (a zero header), a full list and a
 * pointer not aligned as its class's blocks are miss, before any store. */
AY_INLINE void ay_free_fast_cpu(void *p) {
    uintptr_t a = (uintptr_t)p;
    ay_pm_leaf_t *leaf = ay_pagemap_leaf(a);
    unsigned off = AY_LOAD(&leaf->list[ay_pagemap_index(a)]);
    AY_CPU_PUSH(p, ay_cpu_mark(), off, miss);
    return;
miss:
    return ay_free_slow(p);
}

AY_INLINE void ay_free_fast(void *p) {
    if (AY_LIKELY(ay_cpu_mode)) /* only in a build with per-CPU caches (cpucache.h) */
        return ay_free_fast_cpu(p);
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

/* AY_FREE_MASK_GOTO(a, off, label): goto label when address a has a bit of
 * the free mask of the class at bin offset off set (ay_bin_class_at(off)
 * ->free_mask, tcache.h): one test of memory, its address the table's,
 * plus twice off, plus the field's offset, and one jump.  An asm, so that
 * the compiler neither makes the test a copy and an and nor keeps the
 * entry's address in a register first (an instruction each). */
#if defined(__x86_64__)
#define AY_FREE_MASK_GOTO(a, off, label)                                                           \
    __asm__ goto("test %0, %c3(%1,%2,2)\n\tjne %l[" #label "]"                                     \
                 :                                                                                 \
                 : "r"(a), "r"(ay_bin_class), "r"((uintptr_t)(off)),                               \
                   "i"(offsetof(ay_bin_class_t, free_mask)), "m"(ay_bin_class)                     \
                 : "cc"                                                                            \
                 : label)
#else
#define AY_FREE_MASK_GOTO(a, off, label)                                                           \
    do {                                                                                           \
        if ((a)&ay_bin_class_at(off)->free_mask)                                                   \
            goto label;                                                                            \
    } while (0)
#endif

/* The secure flavour's free fast path: free's, with the checks that make a
 * bad free exact at the free before the push.  The block goes onto its
 * bin, as in free's, or, with the quarantine on (quarantine:BYTES), onto
 * its class's list in the thread's quarantine (quarantine.h; the list is
 * AY_QUARANTINE_OFF after the bin, ay_tcache_free_off, so that it costs no
 * more than the push onto the bin would).  The list's room count sends
 * every other case to ay_free_secure_miss: bin 0, a thread without a cache
 * (the empty cache's lists have no room), a full list (a bin's overflow;
 * a quarantine list's rotation), and, in the quarantine, a class that does
 * not wait (K 0: above AY_QUARANTINE_MAX_BLOCK, or no room within the
 * bound; the miss pushes it onto its bin).  The checks:
 *  - the pointer against its class's free mask (ay_bin_free_mask, tcache.h;
 *    one test, the mask read from ay_bin_class): a power of two up to a
 *    page has its size - 1 there, so that a pointer with those bits clear
 *    is the start of a block, and p + 1, p + 8, p + 16 in a 64-byte block
 *    and p + 256 in a 512-byte one have one set;
 *  - its free mark (its second word, secure.h) must not be set: a block
 *    that has it is free already, wherever it is (a double free; the slow
 *    path names it).  Not its first word's link: a program that stores a
 *    byte or an int at p just before free(p) would make that 8-byte load
 *    wait for the store (no store forwarding: docs/ARCHITECTURE.md, "One
 *    free(p)", has the measurement).
 * Those two are all for a pointer that passes the first.  Every other
 * pointer (any pointer of a class whose mask is all bits: 48 bytes, 8 KiB)
 * has its offset in its span checked before its mark: a multiply and a
 * compare (ay_bin_offset_is_object, tcache.h), and a compare with the end
 * of the span's last block; p + 16 in a 48-byte block fails it, and so
 * does a pointer that failed the first test.  With secure_tags:true, every
 * class's mask is all bits, and the pointer's low bits against the list's
 * align mask (as free's) and the tag word at the end of the block, which
 * must be its canary, take the place of the offset and the mark (one
 * compare: an overflow into the tag, a double free, an interior pointer);
 * the tag then says "free". */
/* With tags, block p of the list q of the bin at offset off: the pointer's
 * low bits against the list's align mask, then its tag, which must be its
 * canary, and then says "free" (freed, ay_tag_free(p)). */
AY_INLINE bool ay_free_secure_tag_ok(void *p, const ay_bin_t *q, unsigned off, uintptr_t freed) {
    if (AY_UNLIKELY((uint8_t)(uintptr_t)p & ((const uint8_t *)q)[AY_BIN_MASK_BYTE]))
        return false;
    uintptr_t *tag = ay_tag_at(p, ay_bin_class_at(off)->size);
    if (AY_UNLIKELY(*tag != ay_tag_live(p)))
        return false;
    *tag = freed;
    return true;
}

/* The checks above, on block p, whose pagemap entry (off) is entry i of
 * leaf, and its list q (with room).  True: p may go onto q (its free mark,
 * or its tag, says "free" now); false: the slow path decides. */
AY_INLINE bool ay_free_secure_ok(void *p, const ay_bin_t *q, const ay_pm_leaf_t *leaf, uintptr_t i,
                                 unsigned off) {
    uintptr_t a = (uintptr_t)p, freed = a ^ ay_tag_free_key; /* ay_tag_free */
    uintptr_t *mark = ay_mark_at(p);
    AY_FREE_MASK_GOTO(a, off, check); /* the start of a block? */
    if (AY_UNLIKELY(*mark == freed))  /* it is free already */
        return false;
    *mark = freed;
    return true;
check:
    if (ay_secure_tags)
        return ay_free_secure_tag_ok(p, q, off, freed);
    /* the offset in the span (its end included), then the mark: a pointer
     * that is not a block's start reads no mark, which could lie past the
     * span's end */
    const ay_span_t *s = AY_LOAD(&leaf->span[i]);
    if (AY_UNLIKELY(!ay_bin_offset_is_object(off, a - s->start) | (a >= s->limit)))
        return false;
    if (AY_UNLIKELY(*mark == freed))
        return false;
    *mark = freed;
    return true;
}

AY_INLINE void ay_free_fast_secure(void *p) {
    uintptr_t a = (uintptr_t)p;
    ay_pm_leaf_t *leaf = ay_pagemap_leaf(a);
    uintptr_t i = ay_pagemap_index(a);
    unsigned off = AY_LOAD(&leaf->list[i]);
    ay_bin_t *q = (ay_bin_t *)((char *)ay_tls.bins + off + ay_tcache_free_off);
    AY_ROOM_TAKE(&q->room, miss);
    if (AY_UNLIKELY(!ay_free_secure_ok(p, q, leaf, i, off)))
        goto miss;
    ay_link_set_raw(p, q->head);
    q->head = p;
    return;
miss:
    return ay_free_secure_miss(p, q);
}

/* The span of p, a block the caller is about to free or resize; aborts with
 * a message naming `fn` when p is not a block alloy handed out (unknown,
 * already free, or not the start of a block). */
ay_span_t *ay_block_span(const void *p, const char *fn);

#endif
