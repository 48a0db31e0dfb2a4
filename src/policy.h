/* SPDX-License-Identifier: MIT */
/* policy.h - alloy's pure allocation policy: size classes, batch limit,
 * span geometry and batch growth.
 *
 * Everything here is a pure function of its arguments: no globals, no OS
 * calls, no locks.  The thread cache links this module and so does the
 * simulator (sim/), so what the simulator evaluates is the code that ships.
 *
 * The model (seed 002, "capacity-aware thread-cache batch growth"):
 *   - 208 size classes: 8..128 step 8, 144..1024 step 16, 1152..8192 step 128,
 *     9216..65536 step 1024, 73728..262144 step 8192.  Pages are 4 KiB.
 *   - batch limit      L(S)   = max(1, min(budget / S, cap)), budget 256 KiB,
 *                               cap 1024 objects by default.
 *   - span pages       P(S,n) = lcm(S*n, 4096) / 4096; when that exceeds 256
 *                               pages, fall back to lcm(S, 4096) / 4096
 *                               (compact, alloy's default, sizes spans
 *                               otherwise: see below).
 *   - span capacity    Q(S,n) = floor(P(S,n) * 4096 / S).
 *   - growth           n starts at 1; on each miss the candidate is
 *                      c = min(2n, L(S)), and the policy decides:
 *        clip   take c                                  (the paper's "current")
 *        guard  keep n when c < 2n and Q(S,c) < c, else take c
 *        pow2   keep n when c < 2n, else take c         (stop at last power of 2)
 *        lean   guard's rule under L(S) = max(1, min(32 KiB / S, 128))
 *                                                       (alloy's, not the paper's)
 *
 * Invariant: under guard, pow2 and lean, the terminal batch of every class
 * fits in the span fetched for it (Q >= n).  The test `policy` checks it,
 * along with the 80 classes that clip underfills.
 *
 * The thread-cache state machine of one size class is here too (the rules
 * on a miss, an overflow and a scavenge), and the transfer cache's rules
 * (insert, take, the idle rule, decay rounds), as pure functions:
 * src/tcache.c, src/transfer.c and the simulator's model call them, so they
 * cannot drift apart.
 */
#ifndef ALLOY_POLICY_H
#define ALLOY_POLICY_H

#include <stddef.h>
#include <stdint.h>

#define AY_PAGE_SHIFT 12
#define AY_PAGE_SIZE ((size_t)1 << AY_PAGE_SHIFT)
#define AY_PAGES_BYTES(n) ((size_t)(n) << AY_PAGE_SHIFT)
/* The five bands of size classes: band b runs from the end of band b-1
 * (exclusive; 0 for band 0) to AY_BANDb_END (inclusive) in steps of
 * 1 << AY_BANDb_SHIFT.  The class tables, and the thread cache's size -> bin
 * lookup, are all derived from these constants. */
enum {
    AY_BAND0_END = 128,
    AY_BAND0_SHIFT = 3, /* 8..128 step 8:            16 classes */
    AY_BAND1_END = 1024,
    AY_BAND1_SHIFT = 4, /* 144..1024 step 16:        56 classes */
    AY_BAND2_END = 8192,
    AY_BAND2_SHIFT = 7, /* 1152..8192 step 128:      56 classes */
    AY_BAND3_END = 65536,
    AY_BAND3_SHIFT = 10, /* 9216..65536 step 1024:    56 classes */
    AY_BAND4_END = 262144,
    AY_BAND4_SHIFT = 13, /* 73728..262144 step 8192:  24 classes */
    AY_BAND1_FIRST = AY_BAND0_END >> AY_BAND0_SHIFT,
    AY_BAND2_FIRST = AY_BAND1_FIRST + ((AY_BAND1_END - AY_BAND0_END) >> AY_BAND1_SHIFT),
    AY_BAND3_FIRST = AY_BAND2_FIRST + ((AY_BAND2_END - AY_BAND1_END) >> AY_BAND2_SHIFT),
    AY_BAND4_FIRST = AY_BAND3_FIRST + ((AY_BAND3_END - AY_BAND2_END) >> AY_BAND3_SHIFT),
    AY_NUM_CLASSES = AY_BAND4_FIRST + ((AY_BAND4_END - AY_BAND3_END) >> AY_BAND4_SHIFT),
};
_Static_assert(AY_NUM_CLASSES == 208, "seed 002 has 208 size classes");
#define AY_MAX_SMALL_SIZE ((size_t)AY_BAND4_END) /* largest class: 256 KiB */
#define AY_MAX_SPAN_PAGES 256                    /* pages in the largest span */
#define AY_DEFAULT_BYTE_BUDGET (256u * 1024u)
#define AY_DEFAULT_OBJECT_CAP 1024u

typedef enum ay_batch_policy {
    AY_BATCH_CLIP = 0,
    AY_BATCH_GUARD = 1,
    AY_BATCH_POW2 = 2,
    AY_BATCH_LEAN = 3,    /* alloy's addition, not the paper's: see below */
    AY_BATCH_COMPACT = 4, /* alloy's default, not the paper's: see below */
} ay_batch_policy_t;
#define AY_NUM_POLICIES 5

/* lean: guard's growth rule under a smaller limit, L(S) = max(1, min(32 KiB
 * / S, 128)), at most an eighth of the paper's in bytes, whatever the budget
 * and cap say (they can only lower it further).  Batches, and so the spans
 * P(S,n) fetched for them and what thread caches hold, stay small: fewer
 * bytes cached, more slow-path calls.  The paper's geometry sizes spans for
 * batches of up to 256 KiB, and a few live objects pin such a span; lean is
 * the alternative for programs that care about memory more than about
 * central-cache round trips.  It is not the default.  See
 * docs/PAPER-REPRODUCTION.md. */
#define AY_LEAN_BYTE_BUDGET (32u * 1024u)
#define AY_LEAN_OBJECT_CAP 128u

/* compact: alloy's default (not the paper's).  Small objects keep the
 * paper's limit, L(S) = min(budget / S, cap), so that the loops that
 * allocate and free them most go to the central cache as rarely; objects
 * above AY_COMPACT_SMALL_MAX (1 KiB) get a sixteenth of the budget (16 KiB
 * by default), which the program's own writes to them dwarf.  And a span is
 * the fewest pages that hold the batch with at most an eighth of them left
 * over (ay_policy_span_pages_for), where P(S,n)'s lcm wants none: 2 pages
 * for one 1152-byte object, where P(1152, 1) is 9.  So a span holds about
 * what the batch asked for, and a few live objects pin a few pages, not
 * 256 KiB (bench_frag's reuse90, bench_realloc; docs/PAPER-REPRODUCTION.md
 * has the measured effect).  Growth is guard's rule, which such spans never
 * refuse: a span always holds the batch. */
#define AY_COMPACT_SMALL_MAX 1024u
#define AY_COMPACT_LARGE_SHARE 16u

/* The knobs of the batch policy.  Plain data: the caller owns it. */
typedef struct ay_batch_params {
    ay_batch_policy_t policy;
    uint32_t byte_budget; /* bytes a single batch may move; 256 KiB default */
    uint32_t object_cap;  /* objects a single batch may move; 1024 default */
} ay_batch_params_t;

/* Returns the paper's parameters (guard, 256 KiB, 1024): the simulator's
 * default.  The allocator's default policy is compact (conf.c). */
ay_batch_params_t ay_policy_default_params(void);

/* Size of class cls (0 <= cls < AY_NUM_CLASSES), in bytes. */
size_t ay_policy_class_size(unsigned cls);

/* Smallest class whose size is >= size.  size 0 maps to class 0.
 * Returns AY_NUM_CLASSES when size > AY_MAX_SMALL_SIZE. */
unsigned ay_policy_size_class(size_t size);

/* L(S): the largest batch for objects of size S, at least 1. */
uint32_t ay_policy_batch_limit(const ay_batch_params_t *bp, size_t S);

/* P(S,n): pages of the span fetched for a batch of n objects of size S
 * (the paper's geometry). */
uint32_t ay_policy_span_pages(size_t S, uint32_t n);
/* Pages of the span fetched for a batch of n objects of size S under bp's
 * policy: P(S,n), or under compact the fewest pages p >= S*n / 4096 whose
 * tail (p * 4096 mod S) is at most an eighth of them. */
uint32_t ay_policy_span_pages_for(const ay_batch_params_t *bp, size_t S, uint32_t n);

/* Q: objects of size S that a span of `pages` pages holds. */
uint32_t ay_policy_span_objects(size_t S, uint32_t pages);

/* The batch after a miss with current batch n (n >= 1). */
uint32_t ay_policy_next_batch(const ay_batch_params_t *bp, size_t S, uint32_t n);

/* The fixed point of ay_policy_next_batch starting from 1. */
uint32_t ay_policy_terminal_batch(const ay_batch_params_t *bp, size_t S);

/* The return threshold: a thread-cache list holding this many objects gives
 * n of them back.  k_halves is the factor k in k*n, in halves (4 means 2n,
 * 3 means 1.5n, 6 means 3n).  Always at least n + 1, so a list never returns
 * its whole content on a single free. */
uint32_t ay_policy_return_threshold(uint32_t n, uint32_t k_halves);

/* ---- the thread-cache state machine of one size class ----
 *
 * A thread-cache list has a batch n (1 at first) and a length.  Its limit is
 * return_threshold(n, k) - 1: a free that finds the list at its limit takes
 * the slow path.  The three events, and what each one does:
 *   miss      (malloc finds the list empty): fetch n objects from the
 *             central cache; the batch grows to next_batch(n).
 *   overflow  (free pushes the list past its limit): give back
 *             min(n, length) objects, the most recently freed; the batch
 *             grows to next_batch(n), as on a miss, but only while a batch
 *             is below AY_OVERFLOW_GROWTH_BYTES (alloy's rule: without it a
 *             thread that only frees keeps n = 1 and goes to the central
 *             cache every second free; past the bound, such a thread would
 *             hold up to 2 L(S) objects of another thread's per class).
 *   scavenge  (when a check of the byte limit is due, see
 *             ay_policy_scavenge_due, and the thread's cache holds more
 *             than its byte limit): every list gives back half of its
 *             objects, rounded up, and halves its batch.
 * Each function returns how many objects move and the batch afterwards. */
typedef struct ay_tc_step {
    uint32_t move;  /* objects fetched (miss) or given back (overflow, scavenge) */
    uint32_t batch; /* the batch n afterwards */
} ay_tc_step_t;

#define AY_SCAVENGE_PERIOD 64u         /* slow-path events between two byte-limit checks */
#define AY_OVERFLOW_GROWTH_BYTES 8192u /* an overflow grows a batch only below this */

ay_tc_step_t ay_policy_on_miss(const ay_batch_params_t *bp, size_t S, uint32_t n);
ay_tc_step_t ay_policy_on_overflow(const ay_batch_params_t *bp, size_t S, uint32_t n, uint32_t len);
ay_tc_step_t ay_policy_on_scavenge(uint32_t n, uint32_t len);
/* ---- spans by fullness ----
 * A central cache refills a thread cache from the fullest of its partial
 * spans first, so that the sparse ones drain and their pages go back
 * (TCMalloc's span prioritisation): of the first AY_SPAN_SCAN spans on its
 * list of spans with free objects, the one with the most objects in use
 * for its capacity (ay_policy_span_fuller; the first of equals).  The list
 * itself keeps its order (a span that gets a free object back goes to its
 * front), and the simulator's model makes the same choice over the same
 * list. */
#define AY_SPAN_SCAN 8u
/* Is a span with used_a of cap_a objects in use fuller than one with used_b
 * of cap_b? */
static inline int ay_policy_span_fuller(uint32_t used_a, uint32_t cap_a, uint32_t used_b,
                                        uint32_t cap_b) {
    return (uint64_t)used_a * cap_b > (uint64_t)used_b * cap_a;
}

/* The list limit for batch n: a free that finds this many objects on the
 * list overflows. */
uint32_t ay_policy_list_limit(uint32_t n, uint32_t k_halves);
/* When a thread cache checks its byte limit: the slow-path events, and the
 * bytes misses brought in, since the last check. */
typedef struct ay_tc_clock {
    uint32_t events;
    uint64_t bytes_in;
} ay_tc_clock_t;
/* Count one slow-path event that brought bytes_in bytes into the cache (a
 * miss: what it fetched; an overflow: 0).  True when the byte limit is due
 * to be checked: every AY_SCAVENGE_PERIOD events, or as soon as misses have
 * brought in a quarter of the limit since the last check (one batch can
 * bring 256 KiB, so counting events alone let a cache overshoot its limit by
 * megabytes).  A check due resets the clock. */
int ay_policy_scavenge_due(ay_tc_clock_t *c, uint64_t bytes_in, uint64_t limit);

/* ---- the transfer cache's rules ----
 *
 * A transfer cache (src/transfer.h) is one class's ring buffer of whole batches,
 * oldest first: `count` batches holding `objects` objects, at most
 * AY_TRANSFER_SLOTS batches and `bound` objects (transfer_bytes / the class
 * size).  What it does, as pure functions of its state and of the time
 * (in ms, passed in: src/transfer.c reads the clock, the simulator's model
 * derives it from the op count), so that src/transfer.c and sim/model.c
 * follow the same rules:
 *   insert  a batch of n goes in as the newest; before it, the oldest
 *           batches go back to their spans while ay_policy_transfer_evicts
 *           says so: it would exceed its slots or its bound (a batch
 *           larger than the bound still goes into an empty one);
 *   idle    a transfer cache that no take reached for AY_TRANSFER_IDLE_MS holds
 *           AY_TRANSFER_IDLE_BATCHES batches at most (its slots, on an
 *           insert), unless decay_ms is -1, which gives nothing back on the
 *           clock;
 *   take    a miss takes the newest batch (position count - 1 from the
 *           oldest) and records the time;
 *   decay   a round, due every AY_DECAY_ROUND_MS (never under decay_ms:
 *           -1), gives back the `low` oldest batches (every batch when
 *           `all`): `low`, its low-water mark, is the fewest batches
 *           it held since the round before, and every round resets it to the
 *           batches left.  Batches below the mark were not reached by any
 *           take for a whole round. */
#define AY_TRANSFER_SLOTS 16
#define AY_TRANSFER_IDLE_MS 10
#define AY_TRANSFER_IDLE_BATCHES 2
#define AY_DECAY_ROUND_MS 100

/* (Inline: transfer.c calls them under a transfer cache's lock.  Pure all the same.) */
/* The batches a transfer cache may hold at now_ms when a take last reached it at
 * take_ms: AY_TRANSFER_IDLE_BATCHES when idle, else AY_TRANSFER_SLOTS. */
static inline uint32_t ay_policy_transfer_slots(uint64_t now_ms, uint64_t take_ms,
                                                int64_t decay_ms) {
    return decay_ms >= 0 && now_ms - take_ms >= AY_TRANSFER_IDLE_MS ? AY_TRANSFER_IDLE_BATCHES
                                                                    : AY_TRANSFER_SLOTS;
}
/* Must the oldest of `count` batches (`objects` objects) go before a batch
 * of n goes in, with `bound` objects at most? */
static inline int ay_policy_transfer_evicts(uint32_t count, uint64_t objects, uint32_t n,
                                            uint64_t bound, uint64_t now_ms, uint64_t take_ms,
                                            int64_t decay_ms) {
    return count > 0 &&
           (count >= ay_policy_transfer_slots(now_ms, take_ms, decay_ms) || objects + n > bound);
}
/* The position, from the oldest, of the batch a take gets from `count`
 * (at least 1) batches. */
static inline uint32_t ay_policy_transfer_take(uint32_t count) { return count - 1; }
/* The low-water mark `low` once the transfer cache holds `count` batches. */
static inline uint32_t ay_policy_transfer_low(uint32_t low, uint32_t count) {
    return low < count ? low : count;
}
/* A decay round on a transfer cache of `count` batches with low-water mark
 * `low`: the oldest `release` batches go back to their spans (every batch
 * when all), and the mark is then the batches left, `low`. */
typedef struct {
    uint32_t release; /* oldest batches to give back */
    uint32_t low;     /* the low-water mark after the round */
} ay_transfer_round_t;
static inline ay_transfer_round_t ay_policy_transfer_decay(uint32_t count, uint32_t low, int all) {
    uint32_t release = all ? count : low < count ? low : count;
    return (ay_transfer_round_t){release, count - release};
}
/* Is a decay round (not `all`) due at now_ms, the last one at last_ms? */
static inline int ay_policy_decay_round_due(uint64_t now_ms, uint64_t last_ms, int64_t decay_ms) {
    return decay_ms >= 0 && now_ms - last_ms >= AY_DECAY_ROUND_MS;
}

/* ---- the per-CPU caches' capacity rule ----
 *
 * A per-CPU cache (src/cpucache.c) gives each bin b a list of cap[b]
 * slots, within the cache's byte limit (tcache_max_bytes): the sum over the
 * bins of cap[b] times the class's size, cap_bytes, stays within it.  The
 * arrays are the caller's, indexed by bin (bin b holds class b - 1; bin 0,
 * of capacity 0, is never used), nbins of them.  The rules:
 *   slots     each bin's most slots, slot_max[b]: its list limit at its
 *             terminal batch, scaled down so that they all fit `room` slots
 *             (at least 2 each) (ay_policy_cpu_slots);
 *   capacity  a bin of batch n wants min(list_limit(n), slot_max[b]) slots
 *             (ay_policy_cpu_capacity), at every miss, overflow and
 *             scavenge; a bin starts with capacity 0 and batch 1;
 *   steal     growth beyond the byte limit takes the bytes it lacks from
 *             other bins: a clock hand goes round them (at most twice round),
 *             halving the capacity and the batch of each that neither
 *             missed nor overflowed (used[v]) since it last passed, and
 *             clearing the mark of those that did (ay_policy_cpu_need,
 *             ay_policy_cpu_victim);
 *   grant     what the steal could not free is not given: the capacity is
 *             what fits the limit, and the batch is cut in proportion
 *             (ay_policy_cpu_grant). */

/* Sets slot_max[b] for bins 1 .. nbins - 1 of sizes size[b] (0: no class):
 * the list limit at the terminal batch, scaled to fit `room` slots (at least
 * 2 for a bin with a class).  Returns the slots they take. */
/* (Inline, as the victim below: cpucache.c's start-up and its late text
 * have them where they are called, not in the policy module's text.) */
static inline uint64_t ay_policy_cpu_slots(const ay_batch_params_t *bp, uint32_t k_halves,
                                           const uint32_t *size, unsigned nbins, uint64_t room,
                                           uint32_t *slot_max) {
    uint64_t want = 0, total = 0;
    for (unsigned b = 1; b < nbins; b++) {
        uint32_t n = size[b] ? ay_policy_terminal_batch(bp, size[b]) : 0;
        slot_max[b] = size[b] ? ay_policy_list_limit(n, k_halves) : 0;
        want += slot_max[b];
    }
    for (unsigned b = 1; b < nbins; b++) {
        if (want > room)
            slot_max[b] = (uint32_t)((uint64_t)slot_max[b] * room / want);
        if (size[b] && slot_max[b] < 2)
            slot_max[b] = 2;
        total += slot_max[b];
    }
    return total;
}
/* The capacity, in slots, of a bin of batch n and slot_max slots at most. */
static inline uint32_t ay_policy_cpu_capacity(uint32_t n, uint32_t k_halves, uint32_t slot_max) {
    uint32_t limit = ay_policy_list_limit(n, k_halves);
    return limit < slot_max ? limit : slot_max;
}
/* The bytes a bin of `size` that has `have` slots and wants `want` must
 * steal from other bins, the cache's capacity being cap_bytes of at most
 * `limit`; 0: none. */
static inline uint64_t ay_policy_cpu_need(uint32_t have, uint32_t want, uint64_t size,
                                          uint64_t cap_bytes, uint64_t limit) {
    if (want <= have)
        return 0;
    uint64_t need = (uint64_t)(want - have) * size;
    return cap_bytes + need > limit ? cap_bytes + need - limit : 0;
}
/* One victim of the clock hand for bin b: the hand (*hand, advanced) passes
 * bins, *steps counting them (at most 2 * nbins in one steal), clearing the
 * used mark of those that have it, until it reaches one with capacity, not
 * b, unmarked: that bin's capacity becomes cap / 2 and its batch half (at
 * least 1).  The bin 0 when the hand went its whole way. */
typedef struct ay_cpu_victim {
    unsigned bin; /* 0: none */
    uint32_t cap; /* its capacity after */
    uint32_t batch;
} ay_cpu_victim_t;
static inline ay_cpu_victim_t ay_policy_cpu_victim(const uint32_t *cap, const uint32_t *batch,
                                                   uint8_t *used, unsigned nbins, unsigned b,
                                                   unsigned *hand, unsigned *steps) {
    while (*steps < 2 * nbins) {
        unsigned v = *hand;
        *hand = v + 1 < nbins ? v + 1 : 1;
        ++*steps;
        if (v == b || !cap[v])
            continue;
        if (used[v]) {
            used[v] = 0;
            continue;
        }
        return (ay_cpu_victim_t){v, cap[v] / 2, batch[v] > 1 ? batch[v] / 2 : 1};
    }
    return (ay_cpu_victim_t){0, 0, 0};
}
/* What a bin of `size` with `have` slots that wants `want` at batch n
 * gets, once the cache's capacity is cap_bytes of at most `limit`
 * (after the steal): `want` when it fits, else the slots that fit, and the
 * batch cut to n * got / want (at least 1). */
typedef struct ay_cpu_grant {
    uint32_t cap;
    uint32_t batch;
} ay_cpu_grant_t;
static inline ay_cpu_grant_t ay_policy_cpu_grant(uint32_t n, uint32_t have, uint32_t want,
                                                 uint64_t size, uint64_t cap_bytes,
                                                 uint64_t limit) {
    if (want > have) {
        uint64_t room = cap_bytes < limit ? (limit - cap_bytes) / size : 0;
        if (want - have > room) { /* the batch too, to what the capacity holds */
            uint32_t got = have + (uint32_t)room;
            n = (uint32_t)((uint64_t)n * got / want);
            n = n ? n : 1;
            want = got;
        }
    }
    return (ay_cpu_grant_t){want, n};
}

/* How a first tier's cache takes never-used objects into its list (a
 * carve): a thread cache AY_CARVE_BATCH at a time (tcache.c); a per-CPU
 * cache AY_CARVE_BATCH, or a page's worth of small objects, at most
 * AY_POLICY_CPU_CARVE_MAX (cpucache.c).  Only the carved objects are
 * written; the rest of the run stays untouched. */
#define AY_CARVE_BATCH 32
#define AY_POLICY_CPU_CARVE_MAX 256
static inline uint32_t ay_policy_cpu_carve(uint32_t size) {
    uint32_t n = (uint32_t)(AY_PAGE_SIZE / size);
    n = n > AY_CARVE_BATCH ? n : AY_CARVE_BATCH;
    return n < AY_POLICY_CPU_CARVE_MAX ? n : AY_POLICY_CPU_CARVE_MAX;
}

/* A per-CPU cache moves blocks between its lists and the central tier at
 * most this many pointers per sequence (its overflows and flushes give a
 * longer take back in pieces of this many, the oldest first). */
#define AY_POLICY_CPU_TAKE_MAX 256

/* A per-CPU list's slots are a chunk of its CPU's region: for a capacity of
 * cap slots, a power of two from 2^AY_POLICY_CHUNK_ORDER0, or the bin's
 * largest capacity (slot_max) when that is less.  A chunk a list leaves
 * waits for the next list of its size when its order (ay_policy_chunk_order)
 * is below AY_POLICY_CHUNK_ORDERS. */
#define AY_POLICY_CHUNK_ORDER0 3
#define AY_POLICY_CHUNK_ORDERS 10
static inline uint32_t ay_policy_cpu_chunk(uint32_t cap, uint32_t slot_max) {
    uint32_t n = 1u << AY_POLICY_CHUNK_ORDER0;
    while (n < cap)
        n <<= 1;
    return n < slot_max ? n : slot_max;
}
/* The order of a chunk of n slots, or AY_POLICY_CHUNK_ORDERS when chunks of
 * n are not kept for reuse. */
static inline unsigned ay_policy_chunk_order(uint32_t n) {
    unsigned o = (unsigned)__builtin_ctz(n) - AY_POLICY_CHUNK_ORDER0;
    return (n & (n - 1)) == 0 && o < AY_POLICY_CHUNK_ORDERS ? o : AY_POLICY_CHUNK_ORDERS;
}

/* Parses "clip", "guard", "pow2", "lean" or "compact".  Returns 0 on success, -1 otherwise. */
int ay_policy_parse(const char *s, size_t len, ay_batch_policy_t *out);

/* "clip", "guard", "pow2", "lean" or "compact". */
const char *ay_policy_name(ay_batch_policy_t p);

#endif
