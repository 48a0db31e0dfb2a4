/* SPDX-License-Identifier: MIT */
/* tcache.c - thread caches: creation, refill, overflow, scavenging, thread
 * exit.  What each event does is policy.h's; the lists' invariants are
 * tcache.h's.
 *
 * Invariants kept here: a thread's tc_state goes TC_NEW -> TC_SETTING_UP ->
 * TC_LIVE -> TC_GONE (back to TC_NEW when its record cannot be made); ay_tls.bins
 * points at its own record only while it is LIVE with its cache on and no
 * explicit default heap, else at ay_tcache_empty; every live record is on
 * the registry, and every record of an exited thread on `spare`, both
 * changed under registry_lock, and live_caches counts the registry; a
 * record is never unmapped (metadata memory, reused through `spare`); a
 * list given back is walked with its links checked and Brent's cycle check,
 * and each object's span, class and offset checked, by the transfer path
 * (transfer.c) as it cuts the batch. */
#include "tcache.h"

#include <pthread.h>
#include <string.h>

#include "central.h"
#include "conf.h"
#include "error.h"
#include "heap.h"
#include "meta.h"
#include "os.h"
#include "quarantine.h"
#include "topology.h"
#include "transfer.h"

__thread ay_tls_t ay_tls __attribute__((tls_model("initial-exec"))) = {ay_tcache_empty, 0, 0};
intptr_t ay_cpu_null_delta;
#if ALLOY_PERCPU
bool ay_cpu_lean;
#endif

void ay_cpu_count_mallocs(void) {
#if ALLOY_PERCPU
    AY_STORE(&ay_cpu_lean, false);
#endif
}

/* All lists empty, all limits 0.  Written only where tcache.h says: every
 * thread without a cache takes one from a room in free's fast path, and
 * puts it back with a store of 0 (ay_bin_undo_free); nothing else writes
 * it. */
ay_bin_t ay_tcache_empty[AY_EMPTY_BINS] = {[0 ... AY_EMPTY_BINS - 1] = {AY_LIST_END, 0, 0}};

enum { TC_NEW = 0, TC_SETTING_UP, TC_LIVE, TC_GONE };
static __thread uint8_t tc_state __attribute__((tls_model("initial-exec")));
/* the thread's own record, also when ay_tls points at the empty cache
 * (caches off, fills on, or an explicit heap set as the thread's default) */
static __thread ay_tcache_t *tc_self __attribute__((tls_model("initial-exec")));

#if AY_SECURE
uintptr_t ay_tcache_free_off;
#endif
uint16_t ay_bin_small[AY_LOOKUP_A_MAX + 1];
uint16_t ay_bin_mid[(AY_LOOKUP_B_MAX >> AY_LOOKUP_B_SHIFT) + 1];
uint32_t ay_bin_size[AY_NUM_BINS];
ay_bin_class_t ay_bin_class[AY_NUM_BINS];

static pthread_key_t tc_key;
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static ay_tcache_t *registry; /* live caches, doubly linked */
static ay_tcache_t *spare;    /* caches of exited threads, for reuse */
static uint32_t live_caches;  /* records on the registry (written under its lock) */
static bool use_transfer;     /* ay_tcache_test_use_transfer was called */

static void tcache_thread_exit(void *arg);

/* The bin offset of a request of n bytes (n <= 1 KiB).  malloc(0) gets the
 * 16-byte class, so that it is 16-aligned.  The secure flavour adds the tag,
 * and keeps a multiple of 16 in a class that is one; without tags, its
 * blocks are 16 bytes at least, for their free mark (secure.h). */
static uint16_t small_offset(size_t n) {
    if (ay_secure_tags)
        n += n % 16 == 0 ? 16 : AY_TAG_BYTES;
    else if (n == 0 || (ay_secure && n < 16))
        n = 16;
    return (uint16_t)((ay_policy_size_class(n) + 1) * AY_BIN_BYTES);
}

void ay_tcache_global_init(void) {
    for (size_t i = 0; i <= AY_LOOKUP_A_MAX; i++)
        ay_bin_small[i] = small_offset(i);
    for (size_t i = 0; i < sizeof ay_bin_mid / sizeof ay_bin_mid[0]; i++) {
        unsigned c = ay_policy_size_class(i << AY_LOOKUP_B_SHIFT);
        ay_bin_mid[i] = ay_policy_class_size(c) > AY_MAX_BINNED_SIZE
                            ? 0 /* served by the page heap (large.h) */
                            : (uint16_t)((c + 1) * AY_BIN_BYTES);
    }
    for (unsigned b = 1; b < AY_NUM_BINS; b++) {
        ay_bin_size[b] = (uint32_t)ay_policy_class_size(b - 1);
        ay_bin_class[b].multiple = UINT64_MAX / ay_bin_size[b] + 1;
        ay_bin_class[b].size = ay_bin_size[b];
    }
#if AY_SECURE
    for (unsigned b = 0; b < AY_NUM_BINS; b++)
        ay_bin_class[b].free_mask = ay_bin_free_mask(ay_bin_size[b]);
    ay_tcache_free_off = ay_conf.quarantine ? AY_QUARANTINE_OFF : 0;
#endif
    pthread_key_create(&tc_key, tcache_thread_exit);
}

static void set_batch(ay_tcache_t *tc, unsigned b, uint32_t n) {
    tc->batch[b] = n;
    ay_bin_t *bin = &tc->bins[b];
    uint32_t len = ay_bin_len(bin), limit = ay_policy_list_limit(n, ay_conf.return_k_halves);
    ay_bin_set_limit(bin, limit);
    bin->room = (int32_t)(limit - len); /* below 0 when the list is over the new limit */
}

/* Every list of tc empty, with the batches tc has (1 for a new cache), and
 * each bin's align mask (tcache.h). */
static void lists_init(ay_tcache_t *tc) {
    for (unsigned b = 0; b < AY_NUM_BINS; b++) {
        uint32_t size = ay_bin_size[b];
        tc->bins[b].head = AY_LIST_END;
        tc->bins[b].limit = ay_bin_align_mask(size) << AY_BIN_MASK_SHIFT;
        tc->bins[b].room = 0;
    }
    for (unsigned b = 1; b < AY_NUM_BINS; b++)
        set_batch(tc, b, tc->batch[b] ? tc->batch[b] : 1);
}

static ay_tcache_t *tcache_create(void) {
    pthread_mutex_lock(&registry_lock);
    ay_tcache_t *tc = spare;
    if (tc)
        spare = tc->next;
    pthread_mutex_unlock(&registry_lock);
    /* a spare record's lists are empty: its thread flushed them */
    if (!tc && !(tc = ay_meta_alloc(sizeof *tc)))
        return NULL;
    memset(tc, 0, sizeof *tc);
#if AY_SECURE
    /* each quarantine list's limit word: K, and the align mask that free's
     * fast path tests with tags (free.h) */
    ay_quarantine_init(&tc->q, ay_conf.quarantine);
    for (unsigned b = 1; b < AY_NUM_BINS; b++)
        tc->q.fresh[b].limit |= ay_bin_align_mask(ay_bin_size[b]) << AY_BIN_MASK_SHIFT;
    tc->quarantine = ay_conf.quarantine ? &tc->q : NULL;
#endif
    lists_init(tc);
    tc->node_pending = AY_NODE_NONE;
    tc->heap = ay_heap_bind();
    tc->transfer = ay_transfer_set(tc->heap->node);
    pthread_mutex_lock(&registry_lock);
    tc->next = registry;
    if (registry)
        registry->prev = tc;
    registry = tc;
    AY_STORE(&live_caches, live_caches + 1);
    pthread_mutex_unlock(&registry_lock);
    return tc;
}

/* Point the fast paths at the thread's lists, or at the empty cache. */
static void route(ay_tcache_t *tc) {
    bool on = tc->cache_on && !tc->explicit_heap;
    ay_tls.bins = on ? tc->bins : ay_tcache_empty;
    ay_tls.cpu_delta = on ? 0 : ay_cpu_null_delta; /* per-CPU mode's lists: cpucache.h */
    if (!on)                                       /* malloc's lean path reads no cpu_delta */
        ay_cpu_count_mallocs();
}

ay_tcache_t *ay_tcache_get(void) {
    if (AY_LIKELY(tc_state == TC_LIVE))
        return tc_self;
    if (tc_state != TC_NEW)
        return NULL;
    tc_state = TC_SETTING_UP; /* allocations made from here on are uncached */
    ay_tcache_t *tc = tcache_create();
    if (!tc) {
        tc_state = TC_NEW;
        return NULL;
    }
    /* fills (junk, zero) need every operation in the slow path */
    tc->cache_on = ay_conf.tcache && !ay_conf.junk && !ay_conf.zero;
    pthread_setspecific(tc_key, tc); /* may malloc: that call sees TC_SETTING_UP */
    tc_self = tc;
    route(tc);
    tc_state = TC_LIVE;
    return tc;
}

struct ay_heap *ay_tcache_heap(void) {
    /* per-CPU mode (ay_cpu_null_delta is set) without NUMA: heap 0 for a
     * thread without a record, which then needs none (a per-CPU cache holds
     * any thread's blocks, so binding threads to heaps would only split the
     * central caches; a record is 7.6 KiB) */
    if (ay_cpu_null_delta && !ay_numa && tc_state != TC_LIVE)
        return ay_heaps[0];
    ay_tcache_t *tc = ay_tcache_get();
    if (!tc)
        return ay_heaps[0];
    return tc->explicit_heap ? tc->explicit_heap : tc->heap;
}

void ay_tcache_set_explicit(ay_tcache_t *tc, struct ay_heap *h) {
    tc->explicit_heap = h;
    route(tc);
}

/* The events tc counted go to the heap it is leaving: stats then find them
 * there after the thread moves on or exits. */
static void retire_events(ay_tcache_t *tc) {
    __atomic_add_fetch(&tc->heap->retired_overflows, tc->overflows, __ATOMIC_RELAXED);
    __atomic_add_fetch(&tc->heap->retired_scavenges, tc->scavenges, __ATOMIC_RELAXED);
    AY_STORE(&tc->overflows, 0);
    AY_STORE(&tc->scavenges, 0);
}

void ay_tcache_rebind(ay_tcache_t *tc, struct ay_heap *h) {
    if (tc->heap == h)
        return;
    ay_tcache_flush(tc);
    retire_events(tc);
    ay_heap_unbind(tc->heap);
    ay_heap_adopt(h);
    tc->heap = h;
    tc->transfer = ay_transfer_set(h->node);
}

/* Other threads' lists are read without synchronisation, on purpose: the
 * fast paths write room and head with plain stores, and stats are a
 * snapshot. */
AY_NO_SANITIZE_THREAD size_t ay_tcache_bytes(const ay_tcache_t *tc, unsigned b) {
    const ay_bin_t *bin = &tc->bins[b];
    uint32_t n = (AY_LOAD(&bin->limit) & AY_BIN_LIMIT_MASK) - (uint32_t)AY_LOAD(&bin->room);
    return (size_t)n * ay_bin_size[b];
}

/* The object after free object p of a list, which is about to be handed
 * out (secure.h).  A p whose first word holds no link is not free: it was
 * handed out already and freed twice (its word is still the 0 it got then),
 * or the list was written to after a free.  Either ends the process here,
 * with a message, instead of a block handed out twice or a crash. */
static void *tcache_next(void *p) {
    void *next = ay_link_get(p);
    if (AY_UNLIKELY(next && !ay_link_plausible(next)))
        ay_fatal_bad_link(p);
    return next;
}

static uint32_t run_count(const ay_run_t *r, unsigned b) {
    return (uint32_t)((r->end - r->next) / ay_bin_size[b]);
}

/* The list of bin b is empty: link up to AY_CARVE_BATCH objects of its run
 * (the secure flavour links them in a random order). */
static void carve(ay_tcache_t *tc, unsigned b) {
    ay_run_t *r = &tc->run[b];
    uintptr_t size = ay_bin_size[b], o = r->next;
    uint32_t k = run_count(r, b);
    if (k > AY_CARVE_BATCH)
        k = AY_CARVE_BATCH;
    if (ay_secure_random && k >= 2) { /* in a random order (secure.h) */
        void *last, *first = ay_link_shuffled(o, k, (uint32_t)size, ay_random(), &last);
        ay_link_set(last, NULL);
        ay_bin_set_head(&tc->bins[b], first);
        r->next += k * size;
        return;
    }
    for (uint32_t i = 1; i < k; i++, o += size)
        ay_link_set((void *)o, (void *)(o + size));
    ay_link_set((void *)o, NULL);
    ay_bin_set_head(&tc->bins[b], (void *)r->next);
    r->next += k * size;
}

/* Give n objects of bin b back to the central tier: the list's first, as
 * one batch, to its node's transfer cache (transfer.h, which walks and
 * checks them as it cuts them off), then, when the list has fewer, some of
 * the run, to its span.  Of the run, the last
 * objects go (they come from one span, as the first would): while nothing
 * else was taken from that span's bump region since, it takes them back
 * without a write to them. */
static void bin_release(ay_tcache_t *tc, unsigned b, uint32_t n) {
    ay_bin_t *bin = &tc->bins[b];
    ay_run_t *run = &tc->run[b];
    if (n == 0)
        return;
    uint32_t in_run = run_count(run, b), on_list = ay_bin_len(bin) - in_run;
    uint32_t from_list = n < on_list ? n : on_list;
    bin->room += (int32_t)n;
    /* with one live thread cache there is no other thread to hand a batch
     * to: it goes straight to its spans, so that they empty and their pages
     * serve any class, rather than wait in a transfer cache for this
     * thread's next miss (its list already is that cache) */
    ay_transfer_set_t *set =
        AY_LOAD(&live_caches) > 1 || AY_LOAD(&use_transfer) ? tc->transfer : NULL;
    if (from_list)
        ay_bin_set_head(bin,
                        ay_transfer_give(set, tc->heap->node, b - 1, ay_bin_head(bin), from_list));
    if (n > from_list) {
        ay_run_t part = {run->end - (uintptr_t)(n - from_list) * ay_bin_size[b], run->end};
        run->end = part.next;
        ay_central_release_run(b - 1, &part);
    }
}

/* A thread's byte limit: tcache_max_bytes, and with many threads a share
 * of tcache_total_bytes, but never below 256 KiB (or tcache_max_bytes when
 * that is lower), so that a hundred threads do not each keep megabytes.
 * With one thread it is tcache_max_bytes (as long as the total is at least
 * that), which is what the simulator's model assumes. */
void ay_tcache_test_use_transfer(void) { __atomic_store_n(&use_transfer, true, __ATOMIC_RELAXED); }

size_t ay_tcache_limit(void) {
    size_t max = ay_conf.tcache_max_bytes, floor = (size_t)256 << 10;
    uint32_t n = AY_LOAD(&live_caches);
    size_t share = ay_conf.tcache_total_bytes / (n ? n : 1);
    if (floor > max)
        floor = max;
    return share < floor ? floor : share > max ? max : share;
}

/* One slow-path event, which brought bytes_in bytes in: when the policy
 * says a check is due, check the byte limit, and scavenge every list when
 * the cache is above it. */
static void scavenge_maybe(ay_tcache_t *tc, uint64_t bytes_in) {
    size_t limit = ay_tcache_limit();
    if (!ay_policy_scavenge_due(&tc->clock, bytes_in, limit))
        return;
    size_t bytes = 0;
    for (unsigned b = 1; b < AY_NUM_BINS; b++)
        bytes += (size_t)ay_bin_len(&tc->bins[b]) * ay_bin_size[b];
    if (bytes <= limit)
        return;
    AY_STORE(&tc->scavenges, tc->scavenges + 1);
    for (unsigned b = 1; b < AY_NUM_BINS; b++) {
        ay_tc_step_t step = ay_policy_on_scavenge(tc->batch[b], ay_bin_len(&tc->bins[b]));
        bin_release(tc, b, step.move);
        set_batch(tc, b, step.batch);
    }
}

/* NUMA (heap.h): every AY_NUMA_CHECK_EVENTS slow-path events, move to a
 * heap of the node the thread now runs on, if the heap module says so.
 * Inline, the count costs a slow path a few instructions; on one node, a
 * load and a branch. */
static AY_NOINLINE void node_check(ay_tcache_t *tc) {
    tc->node_clock = 0;
    if (tc->heap_chosen)
        return;
    ay_heap_t *h = ay_heap_numa_check(tc->heap, &tc->node_pending);
    if (h)
        ay_tcache_rebind(tc, h);
}

AY_INLINE void node_check_maybe(ay_tcache_t *tc) {
    if (AY_UNLIKELY(ay_numa) && AY_UNLIKELY(++tc->node_clock >= AY_NUMA_CHECK_EVENTS))
        node_check(tc);
}

void *ay_tcache_refill(ay_tcache_t *tc, unsigned b) {
    ay_bin_t *bin = &tc->bins[b];
    ay_run_t *run = &tc->run[b];
    bool miss = !ay_bin_head(bin) && run->next == run->end;
    if (miss) {
        ay_tc_step_t step = ay_policy_on_miss(&ay_conf.batch, ay_bin_size[b], tc->batch[b]);
        void *head;
        /* a batch some thread gave back, from the transfer cache, before a
         * fetch from the heap's central cache: the list takes all of it,
         * without reading it (it was checked as it was formed), even beyond
         * its limit (the thread allocates from it, and a free that finds it
         * over its limit gives some back) */
        uint32_t got = ay_transfer_take(tc->transfer, b - 1, &head);
        if (!got)
            got = ay_central_fetch(ay_heap_central(tc->heap, b - 1), step.move, &head, run);
        if (!got)
            return NULL;
        set_batch(tc, b, step.batch);
        ay_bin_set_head(bin, head);
        bin->room = (int32_t)(ay_bin_limit(bin) - got);
    }
    if (!ay_bin_head(bin))
        carve(tc, b); /* not a miss: the objects are the cache's already */
    void *p = ay_bin_head(bin);
    ay_bin_set_head(bin, tcache_next(p));
    ay_link_clear(p); /* handed out (secure.h) */
    bin->room++;
    if (miss) {
        scavenge_maybe(tc, (uint64_t)(ay_bin_len(bin) + 1) * ay_bin_size[b]);
        ay_heaps_decay_tick();
        node_check_maybe(tc);
    }
    return p;
}

/* Bin b's list is over its limit: the policy's step gives back at least
 * `at_least` objects and sets the next batch. */
static void bin_overflow(ay_tcache_t *tc, unsigned b, uint32_t at_least) {
    ay_tc_step_t step = ay_policy_on_overflow(&ay_conf.batch, ay_bin_size[b], tc->batch[b],
                                              ay_bin_len(&tc->bins[b]));
    AY_STORE(&tc->overflows, tc->overflows + 1);
    bin_release(tc, b, step.move > at_least ? step.move : at_least);
    set_batch(tc, b, step.batch);
}

void ay_tcache_push(ay_tcache_t *tc, unsigned b, void *p) {
    ay_bin_t *bin = &tc->bins[b];
    ay_link_set(p, bin->head);
    bin->head = p;
    if (--bin->room < 0)
        bin_overflow(tc, b, 0);
    scavenge_maybe(tc, 0);
    ay_heaps_decay_tick();
    node_check_maybe(tc);
}

/* The n blocks from head to tail (a list of bin b that left tc's
 * quarantine) go onto tc's list in one step: tail's link, which must still
 * be the end of a list, now points at the list's head.  The list may go
 * over its limit by the n blocks it takes (room down to -n): they are the
 * ones its mallocs took since the last rotation, which they will take again
 * before the next, so a class whose K is more than its list's limit does
 * not overflow and miss again at every rotation; beyond that it overflows,
 * as on a push. */
static void quarantine_splice(ay_tcache_t *tc, unsigned b, void *head, void *tail, uint32_t n) {
    ay_bin_t *bin = &tc->bins[b];
    if (AY_UNLIKELY(ay_link_get_raw(tail) != AY_LIST_END))
        ay_fatal("free(): a block was written to after it was freed", tail);
    ay_link_set(tail, ay_bin_head(bin));
    ay_bin_set_head(bin, head);
    bin->room -= (int32_t)n;
    if (bin->room < -(int32_t)n) /* over its limit by more than n: by all that is more */
        bin_overflow(tc, b, (uint32_t)(-bin->room - (int32_t)n));
}

AY_LATE_TEXT void ay_tcache_quarantine_rotate(ay_tcache_t *tc, unsigned b, void *p) {
    if (AY_UNLIKELY(!ay_quarantine_join(tc->quarantine, b, ay_bin_size[b])))
        return ay_tcache_push(tc, b, p); /* no room within the bound: the class does not wait */
    void *head, *tail;
    uint32_t n = ay_quarantine_rotate(tc->quarantine, b, ay_bin_size[b], p, &head, &tail);
    if (n)
        quarantine_splice(tc, b, head, tail, n);
}

/* Every block of tc's quarantine goes onto tc's lists (a flush). */
static void quarantine_drain(ay_tcache_t *tc) {
    for (unsigned b = 1; b < AY_NUM_BINS; b++) {
        void *head, *tail;
        uint32_t n;
        while ((n = ay_quarantine_take(tc->quarantine, b, &head, &tail)))
            quarantine_splice(tc, b, head, tail, n);
    }
}

void ay_tcache_flush(ay_tcache_t *tc) {
    if (ay_secure && tc->quarantine)
        quarantine_drain(tc); /* the secure flavour's quarantine first, onto its lists */
    for (unsigned b = 1; b < AY_NUM_BINS; b++)
        bin_release(tc, b, ay_bin_len(&tc->bins[b]));
}

AY_LATE_TEXT bool ay_tcache_contains(unsigned b, const void *p) {
    if (tc_state != TC_LIVE)
        return false;
    const ay_run_t *r = &tc_self->run[b];
    if ((uintptr_t)p >= r->next && (uintptr_t)p < r->end)
        return true; /* never handed out yet */
    const ay_bin_t *bin = &tc_self->bins[b];
    void *q = ay_bin_head(bin);
    for (uint32_t i = 0, n = ay_bin_len(bin); i < n && ay_link_plausible(q);
         i++, q = ay_link_get(q))
        if (q == p)
            return true;
    return false;
}

static void tcache_thread_exit(void *arg) {
    ay_tcache_t *tc = arg;
    tc_state = TC_GONE; /* frees from later destructors go straight to central */
    ay_tls.bins = ay_tcache_empty;
    tc_self = NULL;
    ay_tcache_flush(tc);
    ay_heaps_decay_tick(); /* a slow-path event too: a thread's exit */
    retire_events(tc);
    ay_heap_unbind(tc->heap);
    pthread_mutex_lock(&registry_lock);
    if (tc->prev)
        tc->prev->next = tc->next;
    else
        registry = tc->next;
    if (tc->next)
        tc->next->prev = tc->prev;
    tc->prev = NULL;
    tc->next = spare;
    spare = tc;
    AY_STORE(&live_caches, live_caches - 1);
    pthread_mutex_unlock(&registry_lock);
}

void ay_tcache_registry_lock(void) { pthread_mutex_lock(&registry_lock); }
void ay_tcache_registry_unlock(void) { pthread_mutex_unlock(&registry_lock); }
ay_tcache_t *ay_tcache_registry_first(void) { return registry; }

void ay_tcache_registry_after_fork_child(void) {
    pthread_mutex_init(&registry_lock, NULL);
    /* the other threads are gone; their cached objects are lost to the
     * child (they may have been mid-update), as in every thread-caching
     * allocator.  Keep only this thread's cache on the registry. */
    ay_tcache_t *mine = tc_state == TC_LIVE ? tc_self : NULL;
    registry = mine;
    live_caches = mine ? 1 : 0;
    if (mine)
        mine->prev = mine->next = NULL;
}
