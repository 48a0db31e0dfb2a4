/* SPDX-License-Identifier: MIT */
/* secure.h - the hardening every flavour has, and the switch of the secure
 * flavour (liballoy_secure.so, built with AY_SECURE=1).
 *
 * Free-list links.  Every free list of small blocks (a thread cache's lists,
 * a span's list of returned objects, a batch on its way between the two)
 * is intrusive: a free block's first word links to the next one.  The word
 * is not the pointer itself but
 *
 *     stored = (next XOR ay_link_key) - (address of the word)
 *
 * in the manner of glibc's safe-linking: a link depends on where it is
 * stored and on a per-process secret, so a write into a freed block can no
 * longer steer malloc to an address of the writer's choice, and a link read
 * out of a freed block gives away neither the secret nor a heap address.
 * (glibc XORs with the address shifted right by 12; subtracting the address
 * mixes the same randomised bits in with fewer instructions on the fast
 * paths, which need no copy of the address to shift: docs/HARDENING.md,
 * "What the release flavour checks, and how surely", counts them.)
 * Decoding anything but a link gives a value that is, with probability
 * 1 - 2^-17, not a user-space address (and never one for the words programs
 * write most: 0, small integers, small negative ones and pointers, because
 * the key's top 17 bits are drawn away from those patterns, ay_secure_init).
 *
 * A block's first word is therefore its "free" mark too: while the block is
 * on a list it holds a link, and every block handed out has that word
 * cleared (ay_link_clear: 0, which never decodes to an address).  malloc's
 * fast path decodes the link of the block it is about to hand out and tests
 * that the result is a user-space address (ay_link_plausible) before it
 * hands the block out; a block that is still on a list although it was
 * handed out already (a block freed twice: it is on two lists, or twice on
 * one) fails that test at its second hand-out, and so does a list a write
 * after free garbled: malloc's slow path then aborts with a message instead
 * of handing the block out twice, or crashing on the garbage.  The test
 * needs no list walk and no other memory than the word malloc reads anyway.
 *
 * End of a list.  Lists end with AY_LIST_END, a word in read-only memory
 * whose own link decodes to no address (its value is 0), and an empty
 * thread-cache list is AY_LIST_END, never NULL: so malloc's fast path can
 * read the first word of whatever head it finds, and an empty list fails
 * the same test as a corrupted one.  ay_link_set and ay_link_get translate
 * NULL to AY_LIST_END and back, so that the slow paths see NULL-terminated
 * lists; only the fast paths read and write the raw words.
 *
 * Offsets.  ay_offset_is_object tells whether an offset inside a span is a
 * multiple of the class size with a multiply and a shift (no division):
 * q = (d * M) >> 40 with M = floor(2^40 / S) + 1 is floor(d / S) for every
 * d < 2^40 / S, and spans are at most 256 pages (d < 2^20, S <= 2^18).
 *
 * The secure flavour adds (each `if (ay_secure)` in the code): every free
 * checked at the free (free.h: the pointer's low bits against its class's
 * free mask, the block's free mark, in its second word, which says it is
 * free already: a double free, and the block's offset in its span, where
 * that mask does not prove it); with the setting quarantine:BYTES, a quarantine of freed
 * blocks (quarantine.h); randomised
 * allocation order in a span; guard pages around page-heap chunks, direct
 * maps, metadata chunks and pagemap leaves (ay_os_map_chunk, os.h: around
 * each mapping, never around a block inside one); and checked copies
 * (checked.c: memcpy and its kin abort on a write past the destination
 * block, large blocks' included).  With the setting secure_tags:true, a tag word at
 * the end of every small block (AY_TAG_BYTES), which holds a canary while
 * the block is allocated and a different value while it is free, checked
 * on every free (an overflow by plain stores into the next block, a double
 * free, an interior pointer, in one compare).
 *
 * Initialisation: ay_secure_init runs first in ay_init_slow, before any
 * list exists; the keys never change afterwards (a fork child keeps them,
 * with its lists).  Layer: diagnostics, beside error.h; it reports
 * nothing itself: its callers turn a failed check into a message (ay_fatal).
 */
#ifndef ALLOY_SECURE_H
#define ALLOY_SECURE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal.h"
#include "os.h"

static const bool ay_secure = AY_SECURE; /* (AY_SECURE: internal.h) */
/* The secure flavour's parts, each on with it; a build can turn one off
 * (-DAY_SECURE_RANDOM=0, -DAY_SECURE_GUARDS=0) to measure what it costs
 * (docs/HARDENING.md, "What it costs").  The checks on every free are the
 * flavour; the tags and the quarantine are settings (secure_tags, read by
 * ay_secure_conf; quarantine:BYTES, read by the thread caches: tcache.h,
 * quarantine.h). */
#ifndef AY_SECURE_RANDOM
#define AY_SECURE_RANDOM AY_SECURE
#endif
static const bool ay_secure_random = AY_SECURE && AY_SECURE_RANDOM;
static const bool ay_secure_guards = AY_SECURE && AY_SECURE_GUARDS;
/* The tags are a setting (secure_tags:true), off by default: ay_tags_on
 * is written once, at initialisation, before any size table is filled and
 * any block handed out (ay_secure_conf). */
extern AY_HIDDEN bool ay_tags_on;
#define ay_secure_tags (AY_SECURE && ay_tags_on)

/* Bytes at the end of every small block that hold its tag (secure flavour
 * with secure_tags:true only). */
#define AY_TAG_BYTES ((size_t)(ay_secure_tags ? 8 : 0))

/* User-space addresses are below 2^47 on x86-64 (alloy never asks mmap for
 * higher ones); elsewhere below 2^48, the pagemap's reach. */
#if defined(__x86_64__)
#define AY_USER_ADDR_BITS 47
#else
#define AY_USER_ADDR_BITS 48
#endif

extern AY_HIDDEN uintptr_t ay_link_key;                   /* secret of the free-list links */
extern AY_HIDDEN const uintptr_t ay_list_end;             /* the end of every list: 0 */
extern AY_HIDDEN uintptr_t ay_tag_key;                    /* secret of the tags (secure flavour) */
extern AY_HIDDEN uintptr_t ay_tag_free_key;               /* ~ay_tag_key: one XOR makes a mark */
extern AY_HIDDEN uint64_t ay_class_magic[AY_NUM_CLASSES]; /* floor(2^40 / S) + 1 */

/* Draw the keys (getrandom, else the kernel's AT_RANDOM bytes mixed with
 * the time) and fill the magic table.  Once, at initialisation. */
void ay_secure_init(void);
/* The secure flavour's settings, once, after the settings are read and
 * before the size tables are filled: secure_tags. */
void ay_secure_conf(bool tags);
/* A random 64-bit number, for slow paths (shuffles, sampling): a splitmix64
 * sequence seeded from a third random word, drawn with the keys.
 * Thread-safe. */
uint64_t ay_random(void);

/* Random allocation order (secure flavour): a run of never-used objects
 * is handed out from a pool of the next AY_SHUFFLE_POOL objects in address
 * order: each step takes one of the pool's objects at random and puts the
 * run's next object in its place.  Every step but the run's last few
 * (when the pool drains) picks one of AY_SHUFFLE_POOL objects afresh, so no
 * step tells the next, and no object comes more than AY_SHUFFLE_POOL - 1
 * places before its turn in address order, so the objects handed out stay
 * near the run's front.  The work is a random index, a load and a store
 * per object, on top of the link that address order writes too.  (A build
 * may set AY_SHUFFLE_POOL_BITS, from 1, to measure other pools.) */
#ifndef AY_SHUFFLE_POOL_BITS
#define AY_SHUFFLE_POOL_BITS 3
#endif
#define AY_SHUFFLE_POOL (1u << AY_SHUFFLE_POOL_BITS)
/* Link the n objects (n >= 1) of `size` bytes at start in a random order
 * drawn from seed, each to the next; returns the first, and the last in
 * *last, whose link it leaves as it is. */
void *ay_link_shuffled(uintptr_t start, uint32_t n, uint32_t size, uint64_t seed, void **last);

/* The end of every list, and an empty thread-cache list (see above). */
#define AY_LIST_END ((void *)&ay_list_end)

/* p is a user-space address, and not NULL. */
AY_INLINE bool ay_link_plausible(const void *p) {
    return (((uintptr_t)p - 1) >> AY_USER_ADDR_BITS) == 0;
}

AY_INLINE uintptr_t ay_link_encode(const void *at, const void *next) {
    return ((uintptr_t)next ^ ay_link_key) - (uintptr_t)at;
}

AY_INLINE void *ay_link_decode(const void *at, uintptr_t stored) {
    return (void *)((stored + (uintptr_t)at) ^ ay_link_key);
}

/* The link stored in the free block at `at`, decoded: AY_LIST_END as it
 * is (the fast paths' view). */
AY_INLINE void *ay_link_get_raw(const void *at) {
    return ay_link_decode(at, *(const uintptr_t *)at);
}

/* The link stored in the free block at `at`, decoded; NULL at the end of
 * the list. */
AY_INLINE void *ay_link_get(const void *at) {
    void *next = ay_link_get_raw(at);
    return next == AY_LIST_END ? NULL : next;
}

/* Make the free block at `at` link to `next`, a block or AY_LIST_END (the
 * fast paths' form). */
AY_INLINE void ay_link_set_raw(void *at, const void *next) {
    *(uintptr_t *)at = ay_link_encode(at, next);
}

/* Make the free block at `at` link to `next` (NULL or AY_LIST_END: the end
 * of a list). */
AY_INLINE void ay_link_set(void *at, const void *next) {
    *(uintptr_t *)at = ay_link_encode(at, next ? next : AY_LIST_END);
}

/* Block p is handed out: its first word no longer holds a link, so that a
 * list on which it still is (it was freed twice) fails malloc's test when
 * it comes to p again, instead of handing p out a second time. */
AY_INLINE void ay_link_clear(void *p) { *(uintptr_t *)p = 0; }

/* Does the first word of block p hold a link (is p, as far as that word
 * tells, on a list)?  Its decoded value is a user-space address: the next
 * block, or AY_LIST_END. */
AY_INLINE bool ay_link_holds(const void *p) { return ay_link_plausible(ay_link_get_raw(p)); }

/* Is offset d (from a span's start) the start of an object of `size`
 * bytes, whose magic (ay_class_magic of its class) is given? */
AY_INLINE bool ay_offset_is_object_m(uintptr_t d, uint64_t magic, uint32_t size) {
    return (((uint64_t)d * magic) >> 40) * size == d;
}

/* Is offset d (from a span's start) the start of an object of class cls? */
AY_INLINE bool ay_offset_is_object(uintptr_t d, unsigned cls, uint32_t size) {
    return ay_offset_is_object_m(d, ay_class_magic[cls], size);
}

/* ---- tags (secure flavour) ----
 * The last word of a small block of `size` bytes at p: its canary,
 * ay_tag_live(p), while the block is allocated, and ay_tag_free(p) while it
 * is free.  Any other value means something wrote past the block's end. */
AY_INLINE uintptr_t *ay_tag_at(void *p, size_t size) {
    return (uintptr_t *)((char *)p + size - sizeof(uintptr_t));
}
AY_INLINE uintptr_t ay_tag_live(const void *p) { return (uintptr_t)p ^ ay_tag_key; }
AY_INLINE uintptr_t ay_tag_free(const void *p) { return (uintptr_t)p ^ ay_tag_free_key; }
/* Without tags (the secure flavour's default): the second word of a small
 * block (every block has 16 bytes at least) is its free mark, ay_tag_free(p),
 * while the block is free (from its free until malloc hands it out again:
 * in the quarantine, a thread's list, a central cache or a transfer cache),
 * and 0 when malloc hands it out; the program may write anything there
 * after that, and what it writes is the mark only if it knows the secret. */
AY_INLINE uintptr_t *ay_mark_at(void *p) { return (uintptr_t *)p + 1; }
/* Block p of `size` bytes is handed out: its tag says so (secure flavour). */
AY_INLINE void ay_tag_handed_out(void *p, size_t size) {
    if (ay_secure_tags)
        *ay_tag_at(p, size) = ay_tag_live(p);
    else
        *ay_mark_at(p) = 0;
}

#endif
