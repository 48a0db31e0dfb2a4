/* SPDX-License-Identifier: MIT */
/* tcache.h - the thread cache: one intrusive free list per size class.
 *
 * The inline fast paths of malloc and free that pop and push these lists
 * live in the front end (alloc.h, free.h); this module owns the lists
 * themselves, the size -> bin lookup, and the slow-path services: refill on
 * a miss, give back on an overflow, scavenging, thread start and thread
 * exit.
 * What happens on each event is decided by the state machine in policy.h;
 * this file only moves the objects.
 *
 * Every reason for the fast paths to miss is folded into their one branch:
 *   - a thread that has no cache yet points at ay_tcache_empty, whose lists
 *     are empty and whose limits are 0, so its first malloc and free miss;
 *   - requests above 256 KiB map to bin 0, and so, for free, do pages
 *     alloy does not own, large blocks and the small blocks of explicit
 *     heaps (pagemap.h); bin 0 is always empty with limit 0;
 *   - a list that has reached its limit misses on free.
 * No lock, no atomic read-modify-write: the cache belongs to its thread.
 *
 * Lazy carving: the never-used objects at the end of a fetch stay a run
 * (run[b]) that nothing has written yet; a malloc that finds the list empty
 * takes the slow path, which links a few of them into the list (carves)
 * without going to the central cache.  Their pages are touched only when the
 * program gets to them.
 *
 * Invariants: len = ay_bin_len(&bins[b]) (limit - room) is the length of
 * the NULL-terminated list at bins[b].head plus the objects of run[b]; the
 * run's objects are handed out after the list's, and give back before none
 * of them (the state machine sees one list of len objects); len <= limit
 * (room >= 0) except transiently inside the slow path, or after a limit was
 * lowered until the next free; limit = ay_policy_list_limit(batch[b], k)
 * for a live cache.
 */
#ifndef ALLOY_TCACHE_H
#define ALLOY_TCACHE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "central.h"
#include "internal.h"
#include "secure.h"

struct ay_heap;

/* A list keeps the room it has left, not its length, so that free's fast
 * path counts and checks with one instruction (free.h): it decrements room
 * and takes the slow path when that goes below zero, which undoes it
 * (ay_bin_undo_free).  The length is limit - room (ay_bin_len).  Room may
 * be negative after a limit was lowered, until the next free trims the
 * list. */
typedef struct ay_bin {
    void *head;     /* free objects, linked through their first word */
    int32_t room;   /* objects the list takes before its limit: limit - length */
    uint32_t limit; /* the list's limit (the policy's, for its batch) */
} ay_bin_t;

AY_INLINE uint32_t ay_bin_len(const ay_bin_t *bin) { return bin->limit - (uint32_t)bin->room; }

typedef struct ay_tcache {
    ay_bin_t bins[AY_NUM_BINS]; /* hot: all the fast paths touch */
    /* cold: slow paths only */
    uint32_t batch[AY_NUM_BINS];   /* current batch n, per bin */
    ay_run_t run[AY_NUM_BINS];     /* never-used objects not carved yet, per bin */
    ay_tc_clock_t clock;           /* slow-path events and bytes since the last byte-limit check */
    bool cache_on;                 /* lists in use (caches on, no fills) */
    struct ay_heap *heap;          /* the automatic heap misses go to */
    struct ay_heap *explicit_heap; /* an explicit heap set as the thread's default, or NULL */
    uint64_t overflows;            /* lists that reached their limit (events) */
    uint64_t scavenges;            /* byte-limit checks that found the cache too big */
    uint8_t node_clock;            /* NUMA: slow-path events since the last node check */
    uint8_t node_pending;          /* NUMA: another node seen at the last check (heap.h) */
    bool heap_chosen;              /* the thread chose its automatic heap: no NUMA moves */
    struct ay_tcache *prev, *next; /* registry of live caches */
    struct ay_quarantine *quarantine; /* secure flavour: freed blocks waiting (quarantine.h) */
} ay_tcache_t;

/* The thread's hot TLS, in one struct so that the fast path reaches both
 * words through one GOT load: its cache (ay_tc) and the heap profiler's byte
 * countdown (prof.h), which malloc's fast path decrements by the size; a
 * negative countdown takes the slow path through the fast path's one branch
 * (alloc.h).  prof_left starts at 0, so a thread's first malloc also arms it. */
typedef struct ay_tls {
    ay_tcache_t *tc;   /* the lists the fast paths use (ay_tcache_empty until set up) */
    int64_t prof_left; /* bytes until the next heap-profile sample (prof.h) */
} ay_tls_t;
extern __thread ay_tls_t ay_tls __attribute__((tls_model("initial-exec")));
#define ay_tc (ay_tls.tc)
extern AY_HIDDEN ay_tcache_t ay_tcache_empty;

/* free's fast path took one from bin's room and missed: give it back.  The
 * empty cache is every new thread's, and its threads write its rooms without
 * synchronisation (from an asm, AY_ROOM_TAKE, which no sanitizer sees), so
 * there a room goes back to 0 with a store: an increment racing with another
 * thread's could leave it at 1, and the next free would push onto a list that
 * no thread owns.  With stores of 0 and decrements, it never goes above 0. */
AY_INLINE void ay_bin_undo_free(ay_bin_t *bin) {
    if ((uintptr_t)bin - (uintptr_t)&ay_tcache_empty < sizeof ay_tcache_empty.bins)
        AY_STORE(&bin->room, 0);
    else
        bin->room++;
}

/* ---- size -> bin ----
 * The fast paths work with a bin's byte offset in the cache (AY_BIN_BYTES
 * times its index), so that the bin is tc + offset, with no shift.  Three
 * tiers, derived from policy.h's bands: sizes up to 1 KiB (bands 0-1) index
 * a table directly, one entry per byte (no rounding arithmetic on the fast
 * path); bands 2-3 go through a table in steps of band 2's step; band 4 by
 * arithmetic.  Each band's step is a multiple of its tier's step, and each
 * tier starts on a multiple of it, so a table entry never straddles two
 * classes.  The tables are filled at initialisation (all zero before: bin
 * 0, and no thread has a cache of its own yet, so every request misses).
 * The secure flavour maps a
 * size to the class that also holds the block's tag (secure.h), and keeps
 * sizes that are multiples of 16 in classes that are too. */
#define AY_LOOKUP_A_MAX ((size_t)AY_BAND1_END)
#define AY_LOOKUP_B_MAX ((size_t)AY_BAND3_END)
#define AY_LOOKUP_B_SHIFT AY_BAND2_SHIFT
_Static_assert(AY_BAND3_SHIFT >= AY_BAND2_SHIFT && AY_BAND1_END % (1 << AY_BAND2_SHIFT) == 0,
               "a lookup tier's step divides its bands' steps");
_Static_assert(sizeof(ay_bin_t) == AY_BIN_BYTES && AY_NUM_BINS * AY_BIN_BYTES <= 65535,
               "bin offsets fit the uint16_t tables and pagemap entries");

extern AY_HIDDEN uint16_t ay_bin_small[AY_LOOKUP_A_MAX + 1]; /* bin offsets by size */
extern AY_HIDDEN uint16_t ay_bin_mid[(AY_LOOKUP_B_MAX >> AY_LOOKUP_B_SHIFT) + 1];
extern AY_HIDDEN uint32_t ay_bin_size[AY_NUM_BINS]; /* object size of a bin; 0 for bin 0 */

/* The byte offset of size's bin in a thread cache (0: not cacheable). */
AY_INLINE unsigned ay_size_bin_offset(size_t size) {
    if (AY_LIKELY(size <= AY_LOOKUP_A_MAX))
        return ay_bin_small[size];
    if (ay_secure) {
        if (size > AY_MAX_SMALL_SIZE)
            return 0;
        size += AY_TAG_BYTES;
    }
    if (size <= AY_LOOKUP_B_MAX)
        return ay_bin_mid[(size + (1u << AY_LOOKUP_B_SHIFT) - 1) >> AY_LOOKUP_B_SHIFT];
    if (size <= AY_MAX_SMALL_SIZE)
        return AY_BIN_BYTES *
               (AY_BAND4_FIRST +
                (unsigned)((size - AY_BAND3_END + (1u << AY_BAND4_SHIFT) - 1) >> AY_BAND4_SHIFT));
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
 * else the automatic heap it is bound to (heap 0 before it has a record). */
struct ay_heap *ay_tcache_heap(void);
/* Make h (NULL: none) the thread's explicit default heap: while one is set,
 * the fast paths miss and every call goes to that heap, uncached. */
void ay_tcache_set_explicit(ay_tcache_t *tc, struct ay_heap *h);
/* Bind tc to automatic heap h: flush, and move the thread count. */
void ay_tcache_rebind(ay_tcache_t *tc, struct ay_heap *h);
/* The miss of bin b: refill the list from the central cache and pop one
 * object; NULL when the central cache could not get memory. */
void *ay_tcache_refill(ay_tcache_t *tc, unsigned b);
/* free's slow path for a small block p of bin b, checked by the caller:
 * push it onto the list, and when that takes the list past its limit (an
 * overflow), give objects back to the central caches and grow the batch
 * while it is below AY_OVERFLOW_GROWTH_BYTES (policy.h); then the byte
 * limit's and NUMA's periodic checks. */
void ay_tcache_push(ay_tcache_t *tc, unsigned b, void *p);
/* Return every cached object to the central caches. */
void ay_tcache_flush(ay_tcache_t *tc);
/* The byte limit of each thread's cache now (see tcache_total_bytes). */
size_t ay_tcache_limit(void);
/* Bytes cached in tc's bin b (racy read when tc is another thread's). */
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
