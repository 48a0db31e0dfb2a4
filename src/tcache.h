/* SPDX-License-Identifier: MIT */
/* tcache.h - the thread cache: one intrusive free list per size class.
 *
 * The inline fast paths of malloc and free that pop and push these lists
 * live in the front end (alloc.h, free.h); this module owns the lists
 * themselves, the size -> bin lookup, and the slow-path services: refill on
 * a miss, give back on an overflow, scavenging, thread start and thread
 * exit.
 * How many objects a miss, an overflow and a scavenge move, and the batch
 * each leaves, is the state machine's in policy.h; where the objects come
 * from and go to (a transfer cache, the heap's central cache, the list's
 * run) is this file's and transfer.h's.
 *
 * Every reason for the fast paths to miss goes through one test, an empty
 * list for malloc and a list without room for free (free's fast path has two
 * more: an address beyond 48 bits and a pointer not aligned as its class's
 * blocks are, free.h):
 *   - a thread that has no cache yet points at ay_tcache_empty, whose
 *     lists are empty and whose limits are 0, so its first malloc and free
 *     miss;
 *   - requests above 32 KiB map to bin 0, and so, for free, do pages
 *     alloy does not own, large blocks and the small blocks of explicit
 *     heaps (pagemap.h); bin 0 is always empty with limit 0;
 *   - a list that has reached its limit misses on free.
 * No lock, no atomic read-modify-write: the cache belongs to its thread.
 * A list holds blocks of any heap: free pushes a block onto the freeing
 * thread's list whoever allocated it, so that it is handed out again where
 * its line was last written; a list that overflows gives a batch back to
 * its node's transfer cache (transfer.h), where any thread's miss takes it.
 *
 * Lazy carving: the never-used objects at the end of a fetch stay a run
 * (run[b]) that nothing has written yet; a malloc that finds the list empty
 * takes the slow path, which links a few of them into the list (carves)
 * without going to the central cache.  Their pages are touched only when the
 * program gets to them.
 *
 * Invariants: len = ay_bin_len(&bins[b]) (limit - room) is the length of
 * the list at bins[b].head (which ends with AY_LIST_END, and is AY_LIST_END
 * when empty, never NULL: secure.h) plus the objects of run[b]; the
 * run's objects are handed out after the list's, and give back before none
 * of them (the state machine sees one list of len objects); len <= limit
 * (room >= 0) except transiently inside the slow path, after a limit was
 * lowered until the next free, and in the secure flavour after a
 * quarantine splice of n blocks, by at most n (tcache.c);
 * limit = ay_policy_list_limit(batch[b], k)
 * for a live cache.
 */
#ifndef ALLOY_TCACHE_H
#define ALLOY_TCACHE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "central.h"
#include "internal.h"
#include "quarantine.h"
#include "secure.h"

struct ay_heap;

/* A list keeps the room it has left, not its length, so that free's fast
 * path counts and checks with one instruction (free.h): it decrements room
 * and takes the slow path when that goes below zero, which undoes it
 * (ay_bin_undo_free).  The length is limit - room (ay_bin_len).  Room may
 * be negative after a limit was lowered, until the next free trims the
 * list.  The word `limit` also holds, in its top byte, the low bits that
 * every block of the bin's class has clear (7, or 15 for a class whose size
 * is a multiple of 16): free's fast path tests a pointer against that byte
 * with one instruction, and sends a pointer that is not aligned as its
 * class's blocks are (p + 1, p + 8 in a 16-byte class, p + 16 in a 64-byte one) to the slow path,
 * which reports it.  (The secure flavour's fast path tests a wider mask
 * instead, from its class's entry in ay_bin_class, and this byte only with
 * tags: free.h.)  A limit is below 2^22 (batch_cap times return_threshold at
 * most: 65536 x 64). */
typedef struct ay_bin {
    void *head;     /* free objects, linked through their first word; AY_LIST_END: none */
    int32_t room;   /* objects the list takes before its limit: limit - length */
    uint32_t limit; /* the list's limit | align mask << 24 */
} ay_bin_t;

#define AY_BIN_MASK_SHIFT 24
#define AY_BIN_LIMIT_MASK (((uint32_t)1 << AY_BIN_MASK_SHIFT) - 1)
_Static_assert(AY_BIN_LIMIT_MASK == AY_QLIST_K_MASK, "a quarantine list's K where a limit is");
/* The byte of a bin that holds the align mask (limit's top byte). */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define AY_BIN_MASK_BYTE (offsetof(ay_bin_t, limit) + 3)
#else
#define AY_BIN_MASK_BYTE offsetof(ay_bin_t, limit)
#endif

AY_INLINE uint32_t ay_bin_limit(const ay_bin_t *bin) { return bin->limit & AY_BIN_LIMIT_MASK; }
AY_INLINE uint32_t ay_bin_len(const ay_bin_t *bin) {
    return ay_bin_limit(bin) - (uint32_t)bin->room;
}
/* Set the limit, keeping the align mask. */
AY_INLINE void ay_bin_set_limit(ay_bin_t *bin, uint32_t limit) {
    bin->limit = (bin->limit & ~AY_BIN_LIMIT_MASK) | limit;
}
/* The low address bits every block of bin b's class of `size` bytes has
 * clear (0 for bin 0, which holds no blocks): a span starts on a page and
 * its blocks follow at multiples of the size, so each is aligned to the
 * largest power of two that divides the size (capped at 256, the byte's
 * reach): p + 16 in a 64-byte class is caught as p + 1 is, and p + 8 in a
 * 24-byte class is not. */
AY_INLINE uint32_t ay_bin_align_mask(size_t size) {
    size_t pow2 = size & -size;
    return size == 0 ? 0 : (uint32_t)(pow2 < 256 ? pow2 : 256) - 1;
}
/* The secure flavour's free fast path (free.h) takes a pointer p of a class
 * of `size` bytes with the free mark alone when p & ay_bin_free_mask(size)
 * is 0, and checks everything else on its longer path.  A power of two up
 * to a page: size - 1, since a span starts on a page (s->start, 4 KiB
 * aligned), its first block at its start, and every block at a multiple of
 * the size from there (random order changes the order blocks are handed
 * out in, not where they are; guard pages are whole pages around a
 * mapping), so a pointer with those bits clear is the start of a block,
 * and, a page being a multiple of the size, of one that ends inside the
 * span.  Any other class (48 bytes; 8 KiB, whose blocks are aligned to a
 * page only), every class with tags (secure_tags:true: the tag is
 * checked), and bin 0: all bits set, so that no pointer passes (it is
 * never 0). */
AY_INLINE uint64_t ay_bin_free_mask(size_t size) {
    bool proved = size && ay_is_pow2(size) && size <= AY_PAGE_SIZE && !ay_secure_tags;
    return proved ? (uint64_t)size - 1 : UINT64_MAX;
}
/* The list's first block, NULL when it is empty (the slow paths' view). */
AY_INLINE void *ay_bin_head(const ay_bin_t *bin) {
    return bin->head == AY_LIST_END ? NULL : bin->head;
}
/* Make p (NULL: none) the list's first block. */
AY_INLINE void ay_bin_set_head(ay_bin_t *bin, void *p) { bin->head = p ? p : AY_LIST_END; }

typedef struct ay_tcache {
    ay_bin_t bins[AY_NUM_BINS]; /* the lists (first: ay_tls.bins points here) */
#if AY_SECURE
    ay_quarantine_t q; /* the secure flavour's quarantine: its lists AY_QUARANTINE_OFF from bins */
#endif
    uint32_t batch[AY_NUM_BINS];   /* current batch n, per bin */
    ay_run_t run[AY_NUM_BINS];     /* never-used objects not carved yet, per bin */
    ay_tc_clock_t clock;           /* slow-path events and bytes since the last byte-limit check */
    bool cache_on;                 /* lists in use (caches on, no fills) */
    struct ay_heap *heap;          /* the automatic heap misses go to */
    struct ay_heap *explicit_heap; /* an explicit heap set as the thread's default, or NULL */
    struct ay_transfer_set *transfer; /* its heap's node's transfer caches (transfer.h), or NULL */
    uint64_t overflows;               /* lists that reached their limit (events) */
    uint64_t scavenges;               /* byte-limit checks that found the cache too big */
    uint8_t node_clock;               /* NUMA: slow-path events since the last node check */
    uint8_t node_pending;             /* NUMA: another node seen at the last check (heap.h) */
    bool heap_chosen;                 /* the thread chose its automatic heap: no NUMA moves */
    struct ay_tcache *prev, *next;    /* registry of live caches */
    struct ay_quarantine *quarantine; /* secure flavour: &q with the quarantine on, else NULL */
} ay_tcache_t;
#if AY_SECURE
/* The quarantine's list of a bin is this far after the bin (free.h). */
#define AY_QUARANTINE_OFF (AY_NUM_BINS * AY_BIN_BYTES)
/* How far from its bin free's fast path pushes a block: AY_QUARANTINE_OFF
 * with the quarantine on (the setting quarantine:BYTES), else 0 (the bin
 * itself).  Written once, by ay_tcache_global_init. */
extern AY_HIDDEN uintptr_t ay_tcache_free_off;
_Static_assert(offsetof(ay_tcache_t, q) == AY_QUARANTINE_OFF, "the quarantine follows the lists");
#define AY_EMPTY_BINS (2 * AY_NUM_BINS) /* the bins, and the quarantine's lists */
#else
#define AY_QUARANTINE_OFF 0
#define ay_tcache_free_off ((uintptr_t)0)
#define AY_EMPTY_BINS AY_NUM_BINS
#endif

/* The thread's hot TLS, in one struct so that the fast paths reach their
 * words through one GOT load: its lists, which malloc pops (at its size's
 * offset) and free pushes onto (at its block's pagemap entry), whichever
 * heap the block came from; and the heap profiler's byte countdown
 * (prof.h), which malloc's fast path decrements by the size; a negative
 * countdown takes the slow path through the fast path's one branch
 * (alloc.h).  prof_left starts at 0, so a thread's first malloc also arms
 * it.  Until the thread has a cache (and whenever its lists are off), bins
 * points at the empty cache. */
typedef struct ay_tls {
    ay_bin_t *bins;     /* the thread's lists: its record's bins, or ay_tcache_empty */
    int64_t prof_left;  /* bytes until the next heap-profile sample (prof.h) */
    intptr_t cpu_delta; /* per-CPU mode: 0, or ay_cpu_null_delta while its mallocs miss */
} ay_tls_t;
extern __thread ay_tls_t ay_tls __attribute__((tls_model("initial-exec")));
/* All lists empty (AY_LIST_END), all limits 0: the lists of every thread
 * without a cache.  malloc's fast path reads a head and its first word and
 * writes nothing on a miss; free's takes one from a room and misses. */
extern AY_HIDDEN ay_bin_t ay_tcache_empty[AY_EMPTY_BINS];
/* Per-CPU mode (cpucache.h): the distance from the per-CPU regions to the
 * null regions, whose lists are all empty; a thread whose mallocs must miss
 * (caches off, an explicit default heap) has it as its ay_tls.cpu_delta.
 * Set once by cpucache.c. */
extern AY_HIDDEN intptr_t ay_cpu_null_delta;
/* Per-CPU mode, and no malloc needs more than a pop from its CPU's list:
 * the heap profiler is off (its byte countdown is not kept) and no thread's
 * mallocs must miss.  malloc's fast path tests this alone (alloc.h); when
 * it is false in per-CPU mode, malloc takes the counted path, out of line
 * (ay_malloc_cpu_counted).  Set by cpucache.c as it turns per-CPU mode on,
 * and cleared for good by ay_cpu_count_mallocs. */
#if ALLOY_PERCPU
extern AY_HIDDEN bool ay_cpu_lean;
#else
#define ay_cpu_lean false
#endif
/* From now on every malloc in per-CPU mode keeps the profiler's countdown
 * and reads its thread's cpu_delta: the heap profiler is on, or a thread's
 * mallocs must miss.  Nothing in thread mode. */
void ay_cpu_count_mallocs(void);

/* The record whose lists are at bins (they come first in it). */
AY_INLINE ay_tcache_t *ay_tcache_of_bins(ay_bin_t *bins) { return (ay_tcache_t *)bins; }

/* free's fast path took one from bin's room and missed: give it back.  The
 * empty cache is every new thread's, and its threads write its rooms without
 * synchronisation (from an asm, AY_ROOM_TAKE, which no sanitizer sees), so
 * there a room goes back to 0 with a store: an increment racing with another
 * thread's could leave it at 1, and the next free would push onto a list that
 * no thread owns.  With stores of 0 and decrements, it never goes above 0. */
AY_INLINE void ay_bin_undo_free(ay_bin_t *bin) {
    if ((uintptr_t)bin - (uintptr_t)ay_tcache_empty < sizeof ay_tcache_empty)
        AY_STORE(&bin->room, 0);
    else
        bin->room++;
}

/* ---- size -> bin ----
 * The fast paths work with a bin's byte offset in the cache (AY_BIN_BYTES
 * times its index), so that the bin is tc + offset, with no shift.  Three
 * tiers, derived from policy.h's bands: sizes up to 1 KiB (bands 0-1) index
 * a table directly, one entry per byte (no rounding arithmetic on the fast
 * path); bands 2-3 go through a table in steps of band 2's step, whose
 * entries above AY_MAX_BINNED_SIZE are bin 0, as is every size above band 3
 * (band 4 is served by the page heap).  Each band's step is a multiple of
 * its tier's step, and each tier starts on a multiple of it, so a table
 * entry never straddles two classes.  The tables are filled at
 * initialisation (all zero before: bin 0, and no thread has a cache of its
 * own yet, so every request misses).  The secure flavour maps a size to the
 * class that also holds the block's tag (secure.h), and keeps sizes that
 * are multiples of 16 in classes that are too. */
/* The largest request the size classes serve: 32 KiB.  The classes above
 * it (33 KiB to 256 KiB, whose spans hold one object or a few) stay in the
 * policy, and the simulator models them, but no request maps to them: it
 * gets pages from the page heap (large.h), whose free runs any size can
 * reuse, where a class's freed objects served only requests of that class
 * (docs/ARCHITECTURE.md, "Touched pages serve any size"). */
#define AY_MAX_BINNED_SIZE ((size_t)32768)
#define AY_LOOKUP_A_MAX ((size_t)AY_BAND1_END)
#define AY_LOOKUP_B_MAX ((size_t)AY_BAND3_END)
#define AY_LOOKUP_B_SHIFT AY_BAND2_SHIFT
_Static_assert(AY_MAX_BINNED_SIZE + 8 <= AY_LOOKUP_B_MAX,
               "the binned sizes, with a tag (secure.h), end inside the mid table");
_Static_assert(AY_BAND3_SHIFT >= AY_BAND2_SHIFT && AY_BAND1_END % (1 << AY_BAND2_SHIFT) == 0,
               "a lookup tier's step divides its bands' steps");
_Static_assert(sizeof(ay_bin_t) == AY_BIN_BYTES && AY_NUM_BINS * AY_BIN_BYTES <= 65535,
               "bin offsets fit the uint16_t tables and pagemap entries");

extern AY_HIDDEN uint16_t ay_bin_small[AY_LOOKUP_A_MAX + 1]; /* bin offsets by size */
extern AY_HIDDEN uint16_t ay_bin_mid[(AY_LOOKUP_B_MAX >> AY_LOOKUP_B_SHIFT) + 1];
extern AY_HIDDEN uint32_t ay_bin_size[AY_NUM_BINS]; /* object size of a bin; 0 for bin 0 */
/* What the secure flavour's free fast path reads of a bin's class (free.h),
 * one entry per bin, 2 x AY_BIN_BYTES each, so that twice the bin's byte
 * offset finds it with no shift (an address's scale).  `free_mask` is
 * ay_bin_free_mask of the size: a pointer with none of its bits set takes
 * the fast path's short way.  `multiple` tells whether an offset d is a
 * multiple of the size with a multiply and a compare, no division: with
 * M = floor((2^64 - 1) / size) + 1, d is a multiple of size exactly when
 * d x M mod 2^64 < M, for every d below 2^32 (Lemire, Kaser and Kurz,
 * "Faster remainder by direct computation", 2019; snmalloc's
 * is_start_of_object tests a free the same way); offsets in a span are
 * below 2^20.  Filled with the size tables; bin 0's is all zero but for its
 * free_mask (all bits set, in the secure flavour). */
typedef struct ay_bin_class {
    uint64_t multiple;  /* M, above */
    uint64_t size;      /* the class size (ay_bin_size) */
    uint64_t free_mask; /* ay_bin_free_mask(size); secure flavour only (else 0) */
    uint64_t unused;    /* (an entry is 32 bytes: indexed by twice a bin's offset) */
} ay_bin_class_t;
_Static_assert(sizeof(ay_bin_class_t) == 2 * AY_BIN_BYTES, "indexed by twice a bin's byte offset");
extern AY_HIDDEN ay_bin_class_t ay_bin_class[AY_NUM_BINS];
/* The class entry of the bin at byte offset off. */
AY_INLINE const ay_bin_class_t *ay_bin_class_at(unsigned off) {
    return (const ay_bin_class_t *)((const char *)ay_bin_class + 2 * (uintptr_t)off);
}
/* Is offset d (below 2^32) a multiple of the size of the class at bin
 * offset off? */
AY_INLINE bool ay_bin_offset_is_object(unsigned off, uintptr_t d) {
    const ay_bin_class_t *c = ay_bin_class_at(off);
    return (uint64_t)d * c->multiple < c->multiple;
}

/* The byte offset of size's bin in a thread cache (0: not cacheable). */
AY_INLINE unsigned ay_size_bin_offset(size_t size) {
    if (AY_LIKELY(size <= AY_LOOKUP_A_MAX))
        return ay_bin_small[size];
    if (ay_secure) {
        if (size > AY_MAX_BINNED_SIZE)
            return 0;
        size += AY_TAG_BYTES;
    }
    if (size <= AY_LOOKUP_B_MAX)
        return ay_bin_mid[(size + (1u << AY_LOOKUP_B_SHIFT) - 1) >> AY_LOOKUP_B_SHIFT];
    return 0;
}

/* The bin (class + 1) of a request of `size` bytes, 0 when not cacheable. */
AY_INLINE unsigned ay_size_bin(size_t size) { return ay_size_bin_offset(size) / AY_BIN_BYTES; }

/* ---- slow-path services ---- */

/* The calling thread's record, created on first use (which binds the thread
 * to a heap); NULL while it is being set up or after the thread's exit
 * handler ran.  Its lists are in use only when tc->cache_on. */
ay_tcache_t *ay_tcache_get(void);
/* The heap the calling thread allocates from: its explicit default heap,
 * else the automatic heap it is bound to (heap 0 before it has a record).
 * In per-CPU mode without NUMA, a thread without a record gets heap 0 and
 * no record is made (cpucache.h). */
struct ay_heap *ay_tcache_heap(void);
/* Make h (NULL: none) the thread's explicit default heap: while one is set,
 * the fast paths miss and every call goes to that heap, uncached. */
void ay_tcache_set_explicit(ay_tcache_t *tc, struct ay_heap *h);
/* Bind tc to automatic heap h: flush, and move the thread count. */
void ay_tcache_rebind(ay_tcache_t *tc, struct ay_heap *h);
/* The miss of bin b: refill the list from the central tier (a batch of its
 * node's transfer cache, else a fetch from its heap's central cache) and pop
 * one object; NULL when the central cache could not get memory. */
void *ay_tcache_refill(ay_tcache_t *tc, unsigned b);
/* free's slow path for a small block p of bin b, checked by the caller,
 * of whichever heap: push it onto the list, and when that takes the list
 * past its limit (an overflow), give a batch back to the transfer cache and
 * grow the batch while it is below AY_OVERFLOW_GROWTH_BYTES (policy.h); then
 * the byte limit's, the transfer caches' and NUMA's periodic checks. */
void ay_tcache_push(ay_tcache_t *tc, unsigned b, void *p);
/* Secure flavour: the list of bin b in tc's quarantine (quarantine.h) has
 * no room for block p.  A class that cannot join the quarantine within its
 * bound (ay_quarantine_join) does not wait: p goes onto tc's list of bin b,
 * as ay_tcache_push.  Else the quarantine rotates (ay_quarantine_rotate:
 * the fresh batch, if any, becomes old, and p starts the fresh list), and
 * the old batch that leaves it goes onto tc's list of bin b (which may
 * overflow).  Aborts with a message when the old batch's last link was
 * written to. */
void ay_tcache_quarantine_rotate(ay_tcache_t *tc, unsigned b, void *p);
/* Return every cached object to the central tier: each list's objects, as
 * one batch, to its node's transfer cache (the objects of its run, never
 * handed out, to their span). */
void ay_tcache_flush(ay_tcache_t *tc);
/* The byte limit of each thread's cache now (see tcache_total_bytes). */
size_t ay_tcache_limit(void);
/* Test hook, never called by liballoy itself: from now on a list's overflow
 * goes to its transfer cache even while only one thread cache is live (as
 * in a threaded program), so that the simulator's single-threaded harness
 * (sim/real.c) replays the transfer caches the model has. */
void ay_tcache_test_use_transfer(void);
/* Bytes cached in tc's bin b (a racy read when tc is another thread's). */
size_t ay_tcache_bytes(const ay_tcache_t *tc, unsigned b);
/* Is p in the calling thread's cache for bin b, on its list or in its run
 * of never-used objects?  (debug double-free check) */
bool ay_tcache_contains(unsigned b, const void *p);

/* The registry of live caches: for stats and fork. */
void ay_tcache_registry_lock(void);
void ay_tcache_registry_unlock(void);
ay_tcache_t *ay_tcache_registry_first(void);
/* In a fork child: forget every cache but the caller's. */
void ay_tcache_registry_after_fork_child(void);
/* Set up the size tables and the thread-exit key (once, at initialisation). */
void ay_tcache_global_init(void);

#endif
