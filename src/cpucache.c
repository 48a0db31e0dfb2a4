/* SPDX-License-Identifier: MIT */
/* cpucache.c - the per-CPU caches' slow paths: set-up, refill, overflow,
 * the byte limit, flush and drain (the layout and the fast paths:
 * cpucache.h).  What each event moves is policy.h's, as for a thread
 * cache: a list's capacity is ay_policy_list_limit of its batch, which
 * grows on misses; a cache above its byte limit (tcache_max_bytes, per CPU
 * in this mode) gives half of every list back.
 *
 * Invariants: a list's header is written only by the sequences below,
 * which check that the thread still has the cache's id, and the capacity
 * (end) and the stop of a drain only under the cache's lock (so a drain,
 * which stops the headers and fences, meets no other writer of them; the
 * sequences of a slow path miss on a stopped header as the fast paths do);
 * a block taken out of a list is in the caller's hands only, and goes back
 * to the central tier (transfer.h, central.h) or to a list; a cache's
 * batches, clock and reserves are written under its lock only (read
 * without it, as a hint, by the slow paths). */
#include "cpucache.h"

#include <pthread.h>
#include <string.h>

#include "central.h"
#include "conf.h"
#include "error.h"
#include "heap.h"
#include "meta.h"
#include "os.h"
#include "transfer.h"

#if ALLOY_PERCPU
bool ay_cpu_mode;
#endif
char *ay_cpu_base;
static char *null_base;  /* the null regions: every header zero, never written */
static unsigned ncaches; /* ids: every mm_cid is below this */
static const char *why_off = "not initialised";
static uint32_t slot_max[AY_NUM_BINS]; /* bin b's largest capacity, in slots */

/* The slots of a region are given out in chunks: a bin's list lives in one
 * chunk of its cache's region, given at its first capacity and exchanged
 * for a larger one as its capacity grows (move_list), so that the lists a
 * small program uses share pages of slots rather than each starting a page
 * of its own.  A chunk has 8, 16, 32, ... slots, or the bin's
 * largest capacity, whichever is less (ay_policy_cpu_chunk); one left by a list
 * that grew waits for the next list that needs its size. */
#define REGION_SLOTS ((uint32_t)1 << (AY_CPU_SHIFT - 3))

/* A cache's capacity, in bytes (the sum over its bins of capacity in
 * slots times the class's size), stays within the byte limit,
 * tcache_max_bytes: a list that would grow beyond it takes capacity from
 * bins that did not miss or overflow lately (steal).  A bin starts with
 * none (its first miss or overflow gives it some), so the cache never
 * holds more than the limit, however its frees fill it, with no slow path
 * to look. */
typedef struct cpu_state {
    pthread_mutex_t lock;
    uint32_t batch[AY_NUM_BINS]; /* current batch n, per bin */
    uint32_t cap[AY_NUM_BINS];   /* capacity now, in slots: end - begin */
    uint8_t used[AY_NUM_BINS];   /* missed or overflowed since the hand last passed */
    unsigned hand;               /* the bin steal looks at next */
    uint64_t cap_bytes;          /* the sum of cap[b] * the class's size */
    ay_tc_clock_t clock;         /* slow-path events and bytes since the last limit check */
    uint64_t used_ms;            /* the last slow path on this cache */
    uint64_t misses, overflows, scavenges, drains, moves;
    ay_run_t reserve[AY_NUM_BINS];          /* never-used objects not yet in a list, per bin */
    uint32_t first[AY_NUM_BINS];            /* bin b's chunk: slots [first, first + room) */
    uint32_t room[AY_NUM_BINS];             /* 0: none yet */
    uint32_t bump;                          /* slots from here on were never given */
    uint32_t nfree[AY_POLICY_CHUNK_ORDERS]; /* chunks given back, by order */
    uint32_t freed[AY_POLICY_CHUNK_ORDERS][AY_NUM_BINS];
    bool holds; /* a slow path put blocks in since the last drain (a free's
                 * fast push after a drain shows at the next slow path) */
} cpu_state_t;

static cpu_state_t **states; /* per id, made at its first use */
static unsigned caches_made; /* states made so far (under states_lock) */
static pthread_mutex_t states_lock = PTHREAD_MUTEX_INITIALIZER;

static ay_cpu_list_t *list_at(char *region, unsigned b) {
    return (ay_cpu_list_t *)(region + (size_t)b * AY_BIN_BYTES);
}
/* begin = ~0 and end = 0, in one store: every sequence misses on l. */
static void list_stop(ay_cpu_list_t *l) {
    __atomic_store_n((uint64_t *)l, (uint64_t)UINT32_MAX, __ATOMIC_RELEASE);
}
/* The header word of begin and end for a list from slot `first` with a
 * capacity of cap slots. */
static uint64_t list_bounds(uint64_t first, uint32_t cap) { return first | (first + cap) << 32; }
static char *region_of(unsigned c) { return ay_cpu_base + ((size_t)c << AY_CPU_SHIFT); }
static void **slots_of(char *region) { return (void **)region; }

/* ---- the slow path's sequences: each on region c, and only while the
 * calling thread has id c (else AY_MOVED, and nothing is written) ---- */

enum { AY_DONE = 0, AY_EMPTY = 1, AY_MOVED = 2 };

#if defined(__x86_64__)
/* clang-format off */
/* Pop the newest block of list `l` of region c into *p. */
static int seq_pop(unsigned c, ay_cpu_list_t *l, void **p) {
    uintptr_t t, cur;
    void *q;
    __asm__ volatile goto(AY_RSEQ_START AY_RSEQ_SAME_ID
        "movl 8(%[l]), %k[cur]\n\t"
        "cmpl (%[l]), %k[cur]\n\t"
        "jbe %l[empty]\n\t"
        "subl $1, %k[cur]\n\t"
        "movq (%[slots],%[cur],8), %[q]\n\t"
        "movl %k[cur], 8(%[l])\n"
        AY_RSEQ_END
        : [t] "=&r"(t), [cur] "=&r"(cur), [q] "=&r"(q)
        : [rs] "r"(ay_rseq_off), [c] "r"(c), [l] "r"(l), [slots] "r"(region_of(c))
        : "memory", "cc"
        : moved, empty);
    *p = q;
    return AY_DONE;
moved:
    return AY_MOVED;
empty:
    return AY_EMPTY;
}

/* Push block p (its mark written here) onto list `l` of region c, if it
 * has room (AY_EMPTY: it has none). */
static int seq_push(unsigned c, ay_cpu_list_t *l, void *p) {
    uintptr_t t, cur, mark = ay_cpu_mark();
    __asm__ volatile goto(AY_RSEQ_START AY_RSEQ_SAME_ID
        "movl 8(%[l]), %k[cur]\n\t"
        "cmpl 4(%[l]), %k[cur]\n\t"
        "jae %l[full]\n\t"
        "movq %[m], (%[p])\n\t"
        "movq %[p], (%[slots],%[cur],8)\n\t"
        "addl $1, %k[cur]\n\t"
        "movl %k[cur], 8(%[l])\n"
        AY_RSEQ_END
        : [t] "=&r"(t), [cur] "=&r"(cur)
        : [rs] "r"(ay_rseq_off), [c] "r"(c), [l] "r"(l), [slots] "r"(region_of(c)),
          [p] "r"(p), [m] "r"(mark)
        : "memory", "cc"
        : moved, full);
    return AY_DONE;
moved:
    return AY_MOVED;
full:
    return AY_EMPTY;
}

/* Copy up to n pointers of src into list l of region c, src[0] first (so
 * src[n - 1] is popped first); *k gets how many fitted. */
static int seq_push_batch(unsigned c, ay_cpu_list_t *l, void *const *src, uint32_t n,
                          uint32_t *k) {
    uintptr_t t, cur, room, i;
    __asm__ volatile goto(AY_RSEQ_START AY_RSEQ_SAME_ID
        "movl 8(%[l]), %k[cur]\n\t"
        "movl 4(%[l]), %k[room]\n\t"
        "cmpl %k[room], %k[cur]\n\t"
        "jae %l[full]\n\t"
        "subl %k[cur], %k[room]\n\t"
        "cmpl %k[n], %k[room]\n\t"
        "cmoval %k[n], %k[room]\n\t"
        "xorl %k[i], %k[i]\n"
        ".Lay_l%=:\n\t"
        "movq (%[src],%[i],8), %[t]\n\t"
        "movq %[t], (%[slots],%[cur],8)\n\t"
        "addl $1, %k[cur]\n\t"
        "addl $1, %k[i]\n\t"
        "cmpl %k[room], %k[i]\n\t"
        "jb .Lay_l%=\n\t"
        "movl %k[cur], 8(%[l])\n"
        AY_RSEQ_END
        : [t] "=&r"(t), [cur] "=&r"(cur), [room] "=&r"(room), [i] "=&r"(i)
        : [rs] "r"(ay_rseq_off), [c] "r"(c), [l] "r"(l), [slots] "r"(region_of(c)),
          [src] "r"(src), [n] "r"(n)
        : "memory", "cc"
        : moved, full);
    *k = (uint32_t)room;
    return AY_DONE;
moved:
    return AY_MOVED;
full:
    *k = 0;
    return AY_EMPTY;
}

/* Copy up to n of list l's newest pointers of region c into dst (the
 * newest last) and take them off; *k gets how many. */
static int seq_pop_batch(unsigned c, ay_cpu_list_t *l, void **dst, uint32_t n, uint32_t *k) {
    uintptr_t t, cur, cnt, i;
    __asm__ volatile goto(AY_RSEQ_START AY_RSEQ_SAME_ID
        "movl 8(%[l]), %k[cur]\n\t"
        "movl %k[cur], %k[cnt]\n\t"
        "cmpl (%[l]), %k[cur]\n\t"
        "jbe %l[empty]\n\t"
        "subl (%[l]), %k[cnt]\n\t"
        "cmpl %k[n], %k[cnt]\n\t"
        "cmoval %k[n], %k[cnt]\n\t"
        "subl %k[cnt], %k[cur]\n\t"
        "xorl %k[i], %k[i]\n"
        ".Lay_l%=:\n\t"
        "movq (%[slots],%[cur],8), %[t]\n\t"
        "movq %[t], (%[dst],%[i],8)\n\t"
        "addl $1, %k[cur]\n\t"
        "addl $1, %k[i]\n\t"
        "cmpl %k[cnt], %k[i]\n\t"
        "jb .Lay_l%=\n\t"
        "subl %k[cnt], %k[cur]\n\t"
        "movl %k[cur], 8(%[l])\n"
        AY_RSEQ_END
        : [t] "=&r"(t), [cur] "=&r"(cur), [cnt] "=&r"(cnt), [i] "=&r"(i)
        : [rs] "r"(ay_rseq_off), [c] "r"(c), [l] "r"(l), [slots] "r"(region_of(c)),
          [dst] "r"(dst), [n] "r"(n)
        : "memory", "cc"
        : moved, empty);
    *k = (uint32_t)cnt;
    return AY_DONE;
moved:
    return AY_MOVED;
empty:
    *k = 0;
    return AY_EMPTY;
}

/* Store v into the 64-bit word w of region c (a header's begin and end). */
static int seq_store(unsigned c, uint64_t *w, uint64_t v) {
    uintptr_t t;
    __asm__ volatile goto(AY_RSEQ_START AY_RSEQ_SAME_ID
        "movq %[v], (%[w])\n"
        AY_RSEQ_END
        : [t] "=&r"(t)
        : [rs] "r"(ay_rseq_off), [c] "r"(c), [w] "r"(w), [v] "r"(v)
        : "memory", "cc"
        : moved);
    return AY_DONE;
moved:
    return AY_MOVED;
}
/* clang-format on */
#else
static int seq_pop(unsigned c, ay_cpu_list_t *l, void **p) { return AY_MOVED; }
static int seq_push(unsigned c, ay_cpu_list_t *l, void *p) { return AY_MOVED; }
static int seq_store(unsigned c, uint64_t *w, uint64_t v) { return AY_MOVED; }
static int seq_push_batch(unsigned c, ay_cpu_list_t *l, void *const *src, uint32_t n, uint32_t *k) {
    return AY_MOVED;
}
static int seq_pop_batch(unsigned c, ay_cpu_list_t *l, void **dst, uint32_t n, uint32_t *k) {
    return AY_MOVED;
}
#endif

/* ---- set-up ---- */

bool ay_cpu_can_run(void) {
    const char *why;
    if (ay_secure || ay_debug) { /* (the secure flavour is compiled without them) */
        why_off = ay_secure
                      ? "the secure flavour keeps thread caches (its checks at the free are theirs)"
                      : "the debug flavour keeps thread caches (it walks them)";
        return false;
    }
    if (ay_conf.percpu == AY_PERCPU_OFF) {
        why_off = "the setting percpu:off";
        return false;
    }
#if !ALLOY_PERCPU
    why_off = "built without per-CPU caches (cmake -DALLOY_PERCPU=OFF)";
    return false;
#endif
    if (!ay_conf.tcache || ay_conf.junk || ay_conf.zero || ay_conf.guard_sample == 1) {
        why_off = "caches off (tcache:false, junk, zero, or guard_sample:1)";
        return false;
    }
    if (!ay_rseq_usable(&why)) {
        why_off = why;
        return false;
    }
    return true;
}

bool ay_cpu_init(void) {
    /* each bin's share of the slots: its largest list (the policy's limit
     * at its terminal batch), scaled down when they do not all fit (the
     * chunks lists leave behind as they grow, reused by others, are not
     * counted: when the region has no chunk left, a list keeps the
     * capacity its chunk has) */
    uint64_t room = REGION_SLOTS - AY_CPU_SLOT0;
    ay_policy_cpu_slots(&ay_conf.batch, ay_conf.return_k_halves, ay_bin_size, AY_NUM_BINS, room,
                        slot_max);
    ncaches = ay_rseq_possible_cpus();
    size_t bytes = (size_t)ncaches << AY_CPU_SHIFT;
    char *m = ay_os_map(2 * bytes, AY_PAGE_SIZE);
    states = ay_meta_alloc(ncaches * sizeof *states);
    if (!m || !states) {
        why_off = "no memory for the per-CPU regions";
        return false;
    }
    ay_cpu_base = m;
    null_base = m + bytes;
    /* the null regions stay zero: nothing writes them, as every sequence
     * misses on a zero header before its first store */
    ay_cpu_null_delta = null_base - ay_cpu_base;
    why_off = "";
#if ALLOY_PERCPU
    ay_cpu_mode = true;
    ay_cpu_lean = true;
#endif
    return true;
}

AY_LATE_TEXT const char *ay_cpu_mode_why(void) { return why_off; }

/* The capacity of bin b's list for batch n. */
static uint32_t capacity(unsigned b, uint32_t n) {
    return ay_policy_cpu_capacity(n, ay_conf.return_k_halves, slot_max[b]);
}

/* The state of cache c, made (and its region's headers set up) at its
 * first use; NULL when its memory could not be had. */
static cpu_state_t *state_of(unsigned c) {
    cpu_state_t *st = __atomic_load_n(&states[c], __ATOMIC_ACQUIRE);
    if (AY_LIKELY(st))
        return st;
    pthread_mutex_lock(&states_lock);
    st = states[c];
    if (!st && (st = ay_meta_alloc(sizeof *st))) {
        memset(st, 0, sizeof *st);
        st->lock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
        char *region = region_of(c);
        /* a zero header misses both ways; stopped first (one store), so
         * that it misses whatever the order in which a sequence reads the
         * rest; its bin's first event starts it (set_cap) */
        for (unsigned b = 1; b < AY_NUM_BINS; b++) {
            ay_cpu_list_t *l = list_at(region, b);
            st->batch[b] = 1; /* and capacity 0: a bin's first event gives it some */
            list_stop(l);
            AY_STORE(&l->mask, ay_bin_align_mask(ay_bin_size[b]) << AY_BIN_MASK_SHIFT);
            AY_STORE(&l->cur, 0); /* no chunk yet */
        }
        st->bump = AY_CPU_SLOT0;
        __atomic_store_n(&states[c], st, __ATOMIC_RELEASE);
        AY_STORE(&caches_made, caches_made + 1);
    }
    pthread_mutex_unlock(&states_lock);
    return st;
}

/* ---- moving blocks between a list and the central tier ---- */

/* Give the n blocks linked from head (class b - 1) back: a batch to the
 * transfer cache of heap h's node, as a thread cache's overflow does. */
static void give_back(ay_heap_t *h, unsigned b, void *head, uint32_t n) {
    if (n)
        ay_transfer_give(ay_transfer_set(h->node), h->node, b - 1, head, n);
}

/* An overflow's batch (or a scavenge's): while the process has used one
 * cache only (one thread, or threads that never ran at the same moment), no
 * other cache would take it from a transfer cache, so it goes straight to
 * its spans, so that they empty and their pages serve any class, as a lone
 * thread cache's does (tcache.c).  (Flushes and drains keep to the transfer
 * caches, whose walk of a batch catches a block given back twice.) */
static void give_back_overflow(ay_heap_t *h, unsigned b, void *head, uint32_t n) {
    if (n)
        ay_transfer_give(AY_LOAD(&caches_made) > 1 ? ay_transfer_set(h->node) : NULL, h->node,
                         b - 1, head, n);
}
#define BATCH_MAX AY_POLICY_CPU_TAKE_MAX /* pointers a batch sequence copies at a time */

/* Block p, taken off a list to be linked, has no mark: abort with what its
 * word says (a link: it was linked already, by the way out of another copy
 * of it: a block freed twice; 0: handed out already, freed twice too;
 * anything else: written after its free). */
AY_COLD __attribute__((noreturn)) static void bad_mark(const void *p) {
    if (*(const uintptr_t *)p != 0 && ay_link_holds(p))
        ay_fatal("free(): double free (a block is twice in the caches)", p);
    ay_fatal_bad_link(p);
}

/* Link block p, taken off a list, to next, after checking its mark: a
 * block freed twice whose other copy left already (handed out, or linked
 * on its way to its span) is caught here, before its link could join two
 * lists. */
static void link_taken(void *p, void *next) {
    if (AY_UNLIKELY(*(uintptr_t *)p != ay_cpu_mark()))
        bad_mark(p);
    ay_link_set(p, next);
}

/* Take up to n blocks off list l of region c (the calling thread has id c),
 * linked (link_taken), into *head; returns how many (fewer when the list
 * has fewer or the thread moved). */
static uint32_t take(unsigned c, ay_cpu_list_t *l, uint32_t n, void **head) {
    void *first = NULL, *buf[BATCH_MAX];
    uint32_t total = 0;
    while (total < n) {
        uint32_t want = n - total < BATCH_MAX ? n - total : BATCH_MAX, k;
        if (seq_pop_batch(c, l, buf, want, &k) != AY_DONE || k == 0)
            break;
        for (uint32_t i = 0; i < k; i++) { /* the oldest first in the list */
            link_taken(buf[i], first);
            first = buf[i];
        }
        total += k;
    }
    *head = first;
    return total;
}

static uint32_t list_len(const ay_cpu_list_t *l) {
    uint32_t begin = AY_LOAD(&l->begin), cur = AY_LOAD(&l->cur);
    return cur > begin ? cur - begin : 0;
}

/* A chunk of n slots of cache st's region (its lock held): its first slot,
 * or 0 when the region has none left. */
static uint32_t chunk_get(cpu_state_t *st, uint32_t n) {
    unsigned o = ay_policy_chunk_order(n);
    if (o < AY_POLICY_CHUNK_ORDERS && st->nfree[o])
        return st->freed[o][--st->nfree[o]];
    if (n > REGION_SLOTS - st->bump)
        return 0;
    st->bump += n;
    return st->bump - n;
}

/* Chunk `first` of n slots waits for the next list that needs its size:
 * a power of two (a list leaves only those: its largest it keeps); any
 * other (a move that found the thread moved) is not used again. */
static void chunk_put(cpu_state_t *st, uint32_t first, uint32_t n) {
    unsigned o = ay_policy_chunk_order(n);
    if (o < AY_POLICY_CHUNK_ORDERS && st->nfree[o] < AY_NUM_BINS)
        st->freed[o][st->nfree[o]++] = first;
}

/* Bin b's list of cache c (the calling thread's; its lock held) moves to a
 * chunk with room for cap slots: stopped by a sequence of c's own id (so
 * that no sequence can move a slot of it until it starts again), its
 * slots copied, its cur moved; it stays stopped for set_cap to start.
 * AY_EMPTY when the region has no such chunk (nothing changed), AY_MOVED
 * when the thread no longer has id c (nothing changed). */
static int move_list(cpu_state_t *st, unsigned c, unsigned b, uint32_t cap) {
    uint32_t n = ay_policy_cpu_chunk(cap, slot_max[b]), to = chunk_get(st, n);
    if (!to)
        return AY_EMPTY;
    char *region = region_of(c);
    ay_cpu_list_t *l = list_at(region, b);
    if (seq_store(c, (uint64_t *)l, (uint64_t)UINT32_MAX) != AY_DONE) {
        chunk_put(st, to, n);
        return AY_MOVED;
    }
    uint32_t from = st->first[b], cur = AY_LOAD(&l->cur), len = cur > from ? cur - from : 0;
    void **slots = slots_of(region);
    for (uint32_t i = 0; i < len; i++)
        slots[to + i] = slots[from + i];
    AY_STORE(&l->cur, to + len);
    if (st->room[b])
        chunk_put(st, from, st->room[b]);
    st->first[b] = to;
    st->room[b] = n;
    return AY_DONE;
}

/* Bin b's capacity is cap slots now: the cache's count follows. */
static void cap_account(cpu_state_t *st, unsigned b, uint32_t cap) {
    st->cap_bytes =
        st->cap_bytes - (uint64_t)st->cap[b] * ay_bin_size[b] + (uint64_t)cap * ay_bin_size[b];
    st->cap[b] = cap;
}

/* Bin b's capacity becomes cap slots (cache c, the calling thread's, under
 * its lock): what its list holds beyond that goes back first.  False when
 * the thread moved (then only what went back has changed). */
static bool set_cap(ay_heap_t *h, cpu_state_t *st, unsigned c, unsigned b, uint32_t cap) {
    ay_cpu_list_t *l = list_at(region_of(c), b);
    if (cap > st->room[b]) {
        int r = move_list(st, c, b, cap);
        if (r == AY_MOVED)
            return false;
        if (r == AY_EMPTY) /* no chunk that large: the capacity its chunk has */
            cap = st->room[b];
    }
    uint32_t len = list_len(l);
    if (len > cap) {
        void *head;
        uint32_t k = take(c, l, len - cap, &head);
        give_back_overflow(h, b, head, k);
    }
    /* begin and end in one store, from a sequence of the cache's own id:
     * this starts a stopped list again too (a drained one, whose cur the
     * drain reset: no sequence that read the old cur can run beside it) */
    if (seq_store(c, (uint64_t *)l, list_bounds(st->first[b], cap)) != AY_DONE)
        return false;
    cap_account(st, b, cap);
    return true;
}

/* Capacity for bin b, `need` bytes of it: the hand goes round the other
 * bins (once round, and once more for those it gave a second chance),
 * halving the capacity and batch of each that neither missed nor
 * overflowed since it last passed, and clearing that mark on those that
 * did (policy.h, ay_policy_cpu_victim). */
AY_LATE_TEXT __attribute__((noinline)) static void steal(ay_heap_t *h, cpu_state_t *st, unsigned c,
                                                         unsigned b, uint64_t need) {
    unsigned steps = 0;
    ay_cpu_victim_t v;
    while (need && (v = ay_policy_cpu_victim(st->cap, st->batch, st->used, AY_NUM_BINS, b,
                                             &st->hand, &steps))
                       .bin) {
        uint64_t got = (uint64_t)(st->cap[v.bin] - v.cap) * ay_bin_size[v.bin];
        if (!set_cap(h, st, c, v.bin, v.cap))
            return;
        st->batch[v.bin] = v.batch; /* its fetches, to match */
        AY_STORE(&st->moves, st->moves + 1);
        need = got < need ? need - got : 0;
    }
}

/* Set bin b's batch to n and its capacity by it, within the cache's byte
 * limit: capacity it lacks is taken from other bins, and what is still
 * lacking is not given. */
static void set_batch(ay_heap_t *h, cpu_state_t *st, unsigned c, unsigned b, uint32_t n) {
    uint32_t want = capacity(b, n), have = st->cap[b];
    uint64_t size = ay_bin_size[b], limit = ay_conf.tcache_max_bytes;
    uint64_t need = ay_policy_cpu_need(have, want, size, st->cap_bytes, limit);
    if (need)
        steal(h, st, c, b, need);
    ay_cpu_grant_t g = ay_policy_cpu_grant(n, have, want, size, st->cap_bytes, limit);
    st->batch[b] = g.batch;
    set_cap(h, st, c, b, g.cap);
}

/* The byte limit's check, when the policy says it is due. */
static void scavenge_maybe(ay_heap_t *h, cpu_state_t *st, unsigned c, uint64_t bytes_in) {
    size_t limit = ay_conf.tcache_max_bytes;
    if (!ay_policy_scavenge_due(&st->clock, bytes_in, limit))
        return;
    char *region = region_of(c);
    size_t bytes = 0;
    for (unsigned b = 1; b < AY_NUM_BINS; b++)
        bytes += (size_t)list_len(list_at(region, b)) * ay_bin_size[b];
    if (bytes <= limit)
        return;
    AY_STORE(&st->scavenges, st->scavenges + 1);
    for (unsigned b = 1; b < AY_NUM_BINS; b++) {
        ay_cpu_list_t *l = list_at(region, b);
        ay_tc_step_t step = ay_policy_on_scavenge(st->batch[b], list_len(l));
        void *head;
        uint32_t k = take(c, l, step.move, &head);
        give_back_overflow(h, b, head, k);
        set_batch(h, st, c, b, step.batch);
    }
}

/* Push the n blocks linked from head onto list l of region c; what does
 * not fit (or is left when the thread moved) goes back to the central
 * tier. */
AY_LATE_TEXT static void fill(ay_heap_t *h, unsigned c, unsigned b, ay_cpu_list_t *l, void *head,
                              uint32_t n) {
    void *buf[BATCH_MAX];
    while (n) {
        /* up to BATCH_MAX blocks, the list's first last (popped first),
         * each link read and checked, then its mark written over it */
        uint32_t k = n < BATCH_MAX ? n : BATCH_MAX, pushed;
        for (uint32_t i = 0; i < k; i++) {
            void *next = ay_link_get(head);
            if (next ? !ay_link_plausible(next) : i + 1 < n)
                ay_fatal_bad_link(head);
            buf[k - 1 - i] = head;
            *(uintptr_t *)head = ay_cpu_mark();
            head = next;
        }
        if (seq_push_batch(c, l, buf, k, &pushed) != AY_DONE)
            pushed = 0;
        n -= pushed;
        if (pushed < k) { /* full, or moved: the rest goes back, linked again */
            for (uint32_t i = pushed; i < k; i++) {
                ay_link_set(buf[i], head);
                head = buf[i];
            }
            break;
        }
    }
    give_back(h, b, head, n);
}

/* Push never-used objects of run r (bin b's class), each with its mark,
 * onto list l of region c, from the run's start (a carve: as many as
 * ay_policy_cpu_carve says, a page's worth of small ones, which the
 * program is about to touch); only they are written, and the rest of the
 * run stays untouched.  What the list has no room for (or is left when the
 * thread moved) stays in r, whose start moves past what was pushed. */
static void carve(unsigned c, unsigned b, ay_cpu_list_t *l, ay_run_t *r) {
    void *buf[AY_POLICY_CPU_CARVE_MAX];
    uint32_t size = ay_bin_size[b], k = 0, pushed, n = ay_policy_cpu_carve(size);
    for (uintptr_t o = r->next; k < n && o < r->end; o += size, k++) {
        *(uintptr_t *)o = ay_cpu_mark();
        buf[k] = (void *)o;
    }
    if (k && seq_push_batch(c, l, buf, k, &pushed) == AY_DONE)
        r->next += (uintptr_t)pushed * size;
}

/* The rest of a fetch's run (bin b's class) becomes cache st's reserve for
 * the bin, which the next misses carve from without going to the central
 * tier, as a thread cache keeps its run; when the reserve is taken (or the
 * cache's lock is), the rest goes back to its span. */
static void keep_run(cpu_state_t *st, unsigned b, ay_run_t *r) {
    if (r->next < r->end && pthread_mutex_trylock(&st->lock) == 0) {
        if (st->reserve[b].next == st->reserve[b].end) {
            st->reserve[b] = *r;
            r->next = r->end;
        }
        pthread_mutex_unlock(&st->lock);
    }
    ay_central_release_run(b - 1, r);
}

/* Bin b's reserve goes back to its span (the cache's lock is held). */
AY_LATE_TEXT static void release_reserve(cpu_state_t *st, unsigned b) {
    ay_central_release_run(b - 1, &st->reserve[b]);
}

/* A miss on bin b of cache c (the calling thread's) served from the bin's
 * reserve, under the cache's lock (tried only): its first object, handed
 * out, and a carve of the next onto list l.  NULL when the reserve is
 * empty, the list has no capacity (stopped, or none yet: a miss gives it
 * some) or the lock is taken. */
static void *from_reserve(cpu_state_t *st, unsigned c, unsigned b, ay_cpu_list_t *l) {
    if (AY_LOAD(&st->reserve[b].next) == AY_LOAD(&st->reserve[b].end) ||
        AY_LOAD(&l->end) <= AY_LOAD(&l->begin) || /* no capacity, or stopped: a miss gives it */
        pthread_mutex_trylock(&st->lock) != 0)
        return NULL;
    ay_run_t *r = &st->reserve[b];
    void *p = NULL;
    if (r->next < r->end) {
        p = (void *)r->next;
        r->next += ay_bin_size[b];
        carve(c, b, l, r);
        if (r->next == r->end)
            r->next = r->end = 0;
    }
    pthread_mutex_unlock(&st->lock);
    return p;
}

static bool drain_idle(uint64_t idle_ms, uint64_t now);
static bool drain_other(ay_heap_t *h, cpu_state_t *st, unsigned c);
static uint64_t last_drain_ms; /* when drain_tick last looked */

/* A miss's look (or the background thread's), once per decay round at
 * most, for caches that no slow path used for decay_ms (none under
 * decay_ms:-1): they are drained. */
static void drain_tick(uint64_t now) {
    if (ay_conf.decay_ms < 0)
        return;
    uint64_t last = AY_LOAD(&last_drain_ms);
    if (last == 0) { /* the first miss starts the clock */
        AY_STORE(&last_drain_ms, now);
        return;
    }
    if (now - last < AY_DECAY_ROUND_MS ||
        !__atomic_compare_exchange_n(&last_drain_ms, &last, now, false, __ATOMIC_RELAXED,
                                     __ATOMIC_RELAXED))
        return;
    /* every cache that holds blocks was idle: the process went quiet, and
     * what the drain gave back goes on to the spans and the OS now (the
     * transfer caches' batches and every free page), as the decay round
     * after a quiet spell does for the thread caches (heap.h) */
    if (drain_idle((uint64_t)ay_conf.decay_ms, now))
        ay_heaps_purge(true);
}

/* After a miss or an overflow of bin b, whose step is `step`: the batch
 * and the list's capacity it gives, the counters, the byte limit's check.
 * Under the cache's lock, tried only: a thread that finds it taken (by a
 * drain, or another miss) leaves the step to the next event. */
static void after_event(ay_heap_t *h, cpu_state_t *st, unsigned c, unsigned b, ay_tc_step_t step,
                        uint64_t bytes_in, uint64_t *counter, uint64_t now) {
    AY_STORE(&st->holds, true);
    AY_STORE(&st->used_ms, now);
    if (pthread_mutex_trylock(&st->lock) != 0)
        return;
    st->used[b] = 1;
    set_batch(h, st, c, b, step.batch);
    AY_STORE(counter, *counter + 1);
    scavenge_maybe(h, st, c, bytes_in);
    pthread_mutex_unlock(&st->lock);
}

/* The slow paths take no lock around their work on a list: the sequences
 * make each step atomic on the cache, and check that the thread still has
 * its id; the central tier's locks are taken with none of the cache's
 * held, so a thread preempted in a slow path blocks no other thread of its
 * CPU (each goes to the central tier on its own), and a signal handler's
 * malloc on the thread that was in one finds nothing taken. */
void *ay_cpu_refill(ay_heap_t *h, unsigned b) {
    uint64_t now = ay_os_now_ms();
    drain_tick(now); /* before the refill, which would make the caller's cache not idle */
    void *p;
    for (;;) {
        unsigned c = ay_rseq_cid();
        cpu_state_t *st = state_of(c);
        if (!st)
            return NULL; /* the caller allocates uncached */
        ay_cpu_list_t *l = list_at(region_of(c), b);
        int r = seq_pop(c, l, &p);
        if (r == AY_MOVED)
            continue;
        if (r == AY_DONE) { /* another thread refilled it meanwhile */
            AY_CPU_CLAIM(p, bad);
            return p;
        }
        /* empty: a batch that some cache gave back, from the transfer
         * cache (blocks used before are reused before new ones are
         * touched); else a carve of the bin's reserve (not a miss, as a
         * thread cache's carve of its run is not); else a fetch from the
         * heap's central cache: its linked objects on the list, its run
         * carved and the rest of the run kept */
        ay_tc_step_t step =
            ay_policy_on_miss(&ay_conf.batch, ay_bin_size[b], AY_LOAD(&st->batch[b]));
        void *head;
        ay_run_t run = {0, 0};
        uint32_t got = ay_transfer_take(ay_transfer_set(h->node), b - 1, &head);
        if (!got && (p = from_reserve(st, c, b, l)))
            return p;
        if (!got)
            got = ay_central_fetch(ay_heap_central(h, b - 1), step.move, &head, &run);
        if (!got)
            return NULL;
        /* the step first: the list's capacity for the batch (a bin's first
         * miss gives it some) */
        after_event(h, st, c, b, step, (uint64_t)got * ay_bin_size[b], &st->misses, now);
        uint32_t linked = got - (uint32_t)((run.end - run.next) / ay_bin_size[b]);
        if (!linked) { /* never-used objects only: the first is handed out */
            p = (void *)run.next;
            run.next += ay_bin_size[b];
            carve(c, b, l, &run);
        } else {
            p = head;
            /* every link checked, the last one's too: a block whose word was
             * cleared when it was handed out is in a batch twice (freed
             * twice) */
            void *rest = ay_link_get(p);
            if (rest ? !ay_link_plausible(rest) : linked > 1)
                ay_fatal_bad_link(p);
            ay_link_clear(p); /* handed out */
            /* the used blocks first, so that a list without room for all
             * gives back never-used objects, whose span takes them back
             * untouched */
            if (linked > 1)
                fill(h, c, b, l, rest, linked - 1);
            carve(c, b, l, &run);
        }
        keep_run(st, b, &run);
        ay_heaps_decay_tick_at(now);
        return p;
    }
bad:
    ay_cpu_bad_block(p);
}

void ay_cpu_push(ay_heap_t *h, unsigned b, void *p) {
    uint64_t now = ay_os_now_ms(); /* one read of the clock for the event */
    for (;;) {
        unsigned c = ay_rseq_cid();
        cpu_state_t *st = state_of(c);
        if (!st) { /* no memory for the cache's state: to the transfer cache */
            ay_link_set(p, NULL);
            give_back(h, b, p, 1);
            return;
        }
        ay_cpu_list_t *l = list_at(region_of(c), b);
        int r = seq_push(c, l, p);
        if (r == AY_MOVED)
            continue;
        if (r == AY_EMPTY) { /* full: an overflow gives a batch back first */
            ay_tc_step_t step = ay_policy_on_overflow(&ay_conf.batch, ay_bin_size[b],
                                                      AY_LOAD(&st->batch[b]), list_len(l));
            void *head;
            uint32_t k = take(c, l, step.move ? step.move : 1, &head);
            give_back_overflow(h, b, head, k);
            /* the step before the push: a bin's first overflow (a list
             * with no capacity yet) gives it some */
            after_event(h, st, c, b, step, 0, &st->overflows, now);
            if (seq_push(c, l, p) != AY_DONE) { /* moved, or still full (stopped) */
                ay_link_set(p, NULL);
                give_back(h, b, p, 1);
            }
        }
        ay_heaps_decay_tick_at(now);
        return;
    }
}

AY_COLD void ay_cpu_bad_block(void *p) {
    *(uintptr_t *)p ^= ay_cpu_mark(); /* the word as it was before AY_CPU_CLAIM */
    ay_fatal_bad_link(p);
}

bool ay_cpu_is_newest(unsigned b, const void *p) {
    unsigned c = ay_rseq_cid();
    cpu_state_t *st = __atomic_load_n(&states[c], __ATOMIC_ACQUIRE);
    char *region = region_of(c);
    ay_cpu_list_t *l = list_at(region, b);
    uint32_t begin = AY_LOAD(&l->begin), cur = AY_LOAD(&l->cur);
    if (!st || cur <= begin || cur > REGION_SLOTS)
        return false;
    return AY_LOAD(&slots_of(region)[cur - 1]) == p;
}

/* Give every list of region c back (the thread has id c and
 * holds its lock); reset the batches. */
AY_LATE_TEXT static void flush_own(ay_heap_t *h, cpu_state_t *st, unsigned c) {
    char *region = region_of(c);
    for (unsigned b = 1; b < AY_NUM_BINS; b++) {
        ay_cpu_list_t *l = list_at(region, b);
        void *head;
        uint32_t k = take(c, l, UINT32_MAX, &head);
        give_back(h, b, head, k);
        release_reserve(st, b);
        st->batch[b] = 1;
        set_cap(h, st, c, b, 0);
    }
}

/* Drain cache c (any: the caller's own too) by drain_other, or, the
 * caller's own, through its sequences where the fence cannot be had; with
 * `idle_ms`, only when a slow path put blocks in since the last drain and
 * none used it for that long before `now`, and only when its lock is free
 * (a drain never waits). */
AY_LATE_TEXT static bool drain(ay_heap_t *h, unsigned c, unsigned me, const uint64_t *idle_ms,
                               uint64_t now) {
    cpu_state_t *st = __atomic_load_n(&states[c], __ATOMIC_ACQUIRE);
    if (!st || (idle_ms && !AY_LOAD(&st->holds)))
        return false;
    if (idle_ms && now - AY_LOAD(&st->used_ms) < *idle_ms)
        return false;
    if (idle_ms ? pthread_mutex_trylock(&st->lock) != 0 : pthread_mutex_lock(&st->lock) != 0)
        return false;
    bool done = false;
    if (!idle_ms || st->holds) { /* a flush drains what fast frees put in, too */
        /* the caller's own cache, if the fence cannot be had (the id read
         * before may be stale: then flush_own's sequences stop short) */
        if (!drain_other(h, st, c) && c == me)
            flush_own(h, st, c);
        st->holds = false;
        AY_STORE(&st->drains, st->drains + 1);
        done = true;
    }
    pthread_mutex_unlock(&st->lock);
    return done;
}

AY_LATE_TEXT void ay_cpu_decay_tick(void) {
    if (ay_cpu_mode)
        drain_tick(ay_os_now_ms());
}

AY_LATE_TEXT void ay_cpu_flush(void) {
    if (!ay_cpu_mode)
        return;
    ay_heap_t *h = ay_tcache_heap();
    unsigned me = ay_rseq_cid();
    for (unsigned c = 0; c < ncaches; c++)
        drain(h, c, me, NULL, 0);
}

/* Drain cache c, which another thread may have, to heap h's node: stop
 * every header (so that every sequence misses), fence, then take the
 * blocks with plain reads and writes, and leave the headers stopped, empty,
 * at batch 1 and no capacity, for the cache's next slow path to start
 * (set_cap).  Starting them here would race: a sequence of c's that read
 * cur before the reset and begin after the start would pop a slot the
 * drain emptied.  False when the fence cannot be had (then nothing was
 * taken, and the headers are as they were). */
AY_LATE_TEXT static bool drain_other(ay_heap_t *h, cpu_state_t *st, unsigned c) {
    char *region = region_of(c);
    for (unsigned b = 1; b < AY_NUM_BINS; b++)
        list_stop(list_at(region, b));
    if (!ay_rseq_fence()) { /* cur unchanged: begin and end back as they were */
        for (unsigned b = 1; b < AY_NUM_BINS; b++)
            __atomic_store_n((uint64_t *)list_at(region, b), list_bounds(st->first[b], st->cap[b]),
                             __ATOMIC_RELEASE);
        return false;
    }
    void **slots = slots_of(region);
    for (unsigned b = 1; b < AY_NUM_BINS; b++) {
        ay_cpu_list_t *l = list_at(region, b);
        uint32_t cur = AY_LOAD(&l->cur), first = st->first[b];
        void *head = NULL;
        for (uint32_t i = first; i < cur; i++) {
            link_taken(slots[i], head);
            head = slots[i];
        }
        give_back(h, b, head, cur > first ? cur - first : 0);
        release_reserve(st, b);
        st->batch[b] = 1;
        cap_account(st, b, 0);
        AY_STORE(&l->cur, first);
    }
    return true;
}

/* Give back every cache that no slow path used for `idle_ms` (now: the
 * clock); true when that drained some and left none holding blocks (the
 * process is quiet). */
AY_LATE_TEXT static bool drain_idle(uint64_t idle_ms, uint64_t now) {
    ay_heap_t *h = ay_tcache_heap();
    unsigned me = ay_rseq_cid();
    bool drained = false, busy = false;
    for (unsigned c = 0; c < ncaches; c++) {
        if (drain(h, c, me, &idle_ms, now))
            drained = true;
        else if (states[c] && AY_LOAD(&states[c]->holds))
            busy = true;
    }
    return drained && !busy;
}

bool ay_cpu_holds(void) {
    for (unsigned c = 0; ay_cpu_mode && c < ncaches; c++) {
        cpu_state_t *st = __atomic_load_n(&states[c], __ATOMIC_ACQUIRE);
        if (st && AY_LOAD(&st->holds))
            return true;
    }
    return false;
}

AY_LATE_TEXT AY_NO_SANITIZE_THREAD size_t ay_cpu_bytes(unsigned b) {
    if (!ay_cpu_mode)
        return 0;
    size_t n = 0;
    for (unsigned c = 0; c < ncaches; c++) {
        cpu_state_t *st = __atomic_load_n(&states[c], __ATOMIC_ACQUIRE);
        if (!st)
            continue;
        n += list_len(list_at(region_of(c), b));
        uintptr_t next = AY_LOAD(&st->reserve[b].next), end = AY_LOAD(&st->reserve[b].end);
        n += end > next ? (end - next) / ay_bin_size[b] : 0; /* racy: either may be older */
    }
    return n * ay_bin_size[b];
}

AY_LATE_TEXT void ay_cpu_counts(ay_cpu_counts_t *out) {
    memset(out, 0, sizeof *out);
    if (!ay_cpu_mode)
        return;
    for (unsigned c = 0; c < ncaches; c++) {
        cpu_state_t *st = __atomic_load_n(&states[c], __ATOMIC_ACQUIRE);
        if (!st)
            continue;
        out->caches++;
        out->misses += AY_LOAD(&st->misses);
        out->overflows += AY_LOAD(&st->overflows);
        out->scavenges += AY_LOAD(&st->scavenges);
        out->drains += AY_LOAD(&st->drains);
        out->moves += AY_LOAD(&st->moves);
    }
}

AY_LATE_TEXT void ay_cpu_lock_all(void) {
    if (!ay_cpu_mode)
        return;
    pthread_mutex_lock(&states_lock);
    for (unsigned c = 0; c < ncaches; c++)
        if (states[c])
            pthread_mutex_lock(&states[c]->lock);
}

AY_LATE_TEXT void ay_cpu_unlock_all(void) {
    if (!ay_cpu_mode)
        return;
    for (unsigned c = 0; c < ncaches; c++)
        if (states[c])
            pthread_mutex_unlock(&states[c]->lock);
    pthread_mutex_unlock(&states_lock);
}

AY_LATE_TEXT void ay_cpu_after_fork_child(void) {
    if (!ay_cpu_mode)
        return;
    pthread_mutex_init(&states_lock, NULL);
    for (unsigned c = 0; c < ncaches; c++)
        if (states[c])
            pthread_mutex_init(&states[c]->lock, NULL);
}
