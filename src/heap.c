/* SPDX-License-Identifier: MIT */
/* heap.c - creating, binding and destroying heaps (see heap.h).
 *
 * Invariants: ay_heaps[id] changes only under heaps_lock, with release
 * stores, so ay_heap_get reads it without the lock; the automatic heaps are
 * ids 0 .. ay_heaps_auto - 1, never destroyed: heap 0 is static and set up
 * at initialisation; the others' records are reserved then, as metadata
 * that nothing writes, and each is set up on its first use (auto_setup,
 * under heaps_lock), after the first heap of its node, and only then put in
 * ay_heaps; an explicit heap's memory is never given
 * back, only reused for a later explicit heap (spare_heaps), so a pointer
 * from ay_heap_get stays readable; a heap is not released while a walker
 * has it pinned (pins); nthreads changes only under heaps_lock;
 * node_first[] and node_heaps[] are written once, at initialisation.
 * heaps_lock is never held while a central, page-heap or direct-map lock is
 * taken, except in ay_heaps_lock_all (fork). */
#include "heap.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <string.h>

#include "conf.h"
#include "meta.h"
#include "os.h"
#include "topology.h"
#include "transfer.h"

ay_heap_t *ay_heaps[AY_MAX_HEAPS];
unsigned ay_heaps_auto;
unsigned ay_heaps_limit;
static ay_heap_t heap0;
/* Automatic heaps 1 .. ay_heaps_auto - 1: auto_rest[id - 1], zero until
 * the heap is set up.  Written once, at initialisation. */
static ay_heap_t *auto_rest;
static ay_heap_t *spare_heaps; /* destroyed explicit heaps, by next_spare */
static pthread_mutex_t heaps_lock = PTHREAD_MUTEX_INITIALIZER;
/* NUMA: node index i's automatic heaps are ids node_first[i] ..
 * node_first[i] + node_heaps[i] - 1.  Written once, at initialisation. */
static unsigned node_first[AY_MAX_NODES], node_heaps[AY_MAX_NODES];

bool ay_heap_first_of_node(const ay_heap_t *h) {
    return h->cached && node_heaps[h->node] && h->id == node_first[h->node];
}
static uint64_t numa_moves; /* see ay_heap_numa_moves (relaxed atomic) */

/* h is zero (fresh: static or new metadata memory) or a destroyed heap's
 * record (cleared here).  The central caches are set up on their first use
 * (ay_heap_central), so that a fresh heap's pages stay untouched. */
static void heap_init(ay_heap_t *h, unsigned id, bool cached, unsigned node, bool fresh) {
    if (!fresh)
        memset(h, 0, sizeof *h);
    h->id = id;
    h->cached = cached;
    h->node = node;
    ay_pageheap_init(&h->pages, &h->usage);
    ay_direct_init(&h->direct, &h->usage);
    if (ay_numa)
        h->pages.node = h->direct.node = (int)node;
}

void ay_heap_central_setup(ay_heap_t *h, unsigned cls) {
    ay_central_t *c = &h->central[cls];
    pthread_mutex_lock(&heaps_lock); /* fork's prepare handler waits for it (lock_all) */
    if (!c->size) {
        ay_central_init(c, &h->pages, cls, h->cached);
        __atomic_or_fetch(&h->central_ready[cls / 64], (uint64_t)1 << (cls % 64), __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&heaps_lock);
}

/* The node index of automatic heap id. */
static unsigned auto_node(unsigned id) {
    unsigned node = 0;
    while (node + 1 < ay_topo.nnodes && id >= node_first[node] + node_heaps[node])
        node++;
    return node;
}

/* Under heaps_lock: automatic heap id, set up now if it was not.  The first
 * heap of its node is set up before it, so that the node's transfer-cache
 * traffic always has a heap to be counted in (ay_heap_first_of_node). */
static ay_heap_t *auto_setup(unsigned id) {
    ay_heap_t *h = ay_heaps[id];
    if (h)
        return h;
    unsigned node = auto_node(id);
    if (id != node_first[node])
        auto_setup(node_first[node]);
    h = id == 0 ? &heap0 : &auto_rest[id - 1];
    heap_init(h, id, true, node, true);
    __atomic_store_n(&ay_heaps[id], h, __ATOMIC_RELEASE);
    return h;
}

void ay_heaps_init(unsigned count) {
    if (count < ay_topo.nnodes)
        count = ay_topo.nnodes; /* a heap on every node (nnodes <= 64) */
    if (count > AY_MAX_AUTO_HEAPS)
        count = AY_MAX_AUTO_HEAPS;
    /* address space only: a record's pages are written when its heap is set up */
    if (count > 1 && !(auto_rest = ay_meta_alloc((count - 1) * sizeof *auto_rest)))
        count = 1; /* heap 0 alone; still correct */
    unsigned per[AY_MAX_NODES] = {0};
    if (count > 1)
        ay_topology_split(count, per); /* one node without NUMA: per[0] = count */
    else
        per[0] = 1;
    unsigned n = 0;
    for (unsigned node = 0; node < ay_topo.nnodes; node++) {
        node_first[node] = n;
        node_heaps[node] = per[node];
        n += per[node];
    }
    ay_heaps_auto = n;
    ay_heaps_limit = n;
    pthread_mutex_lock(&heaps_lock);
    auto_setup(0); /* heap 0 at once: it serves allocations made without a thread cache */
    pthread_mutex_unlock(&heaps_lock);
}

ay_heap_t *ay_heap_get(unsigned id) {
    return id < AY_MAX_HEAPS ? __atomic_load_n(&ay_heaps[id], __ATOMIC_ACQUIRE) : NULL;
}

ay_heap_t *ay_heap_use(unsigned id) {
    ay_heap_t *h = ay_heap_get(id);
    if (h || id >= ay_heaps_auto)
        return h;
    pthread_mutex_lock(&heaps_lock);
    h = auto_setup(id);
    pthread_mutex_unlock(&heaps_lock);
    return h;
}

bool ay_heap_exists(unsigned id) { return id < ay_heaps_auto || ay_heap_get(id); }

unsigned ay_heaps_set_up(void) {
    unsigned n = 0;
    for (unsigned i = 0; i < ay_heaps_auto; i++)
        n += ay_heap_get(i) != NULL;
    return n;
}

ay_heap_t *ay_heap_pin(unsigned id) {
    if (id >= AY_MAX_HEAPS)
        return NULL;
    pthread_mutex_lock(&heaps_lock);
    ay_heap_t *h = ay_heaps[id];
    if (h)
        __atomic_add_fetch(&h->pins, 1, __ATOMIC_ACQUIRE);
    pthread_mutex_unlock(&heaps_lock);
    return h;
}

void ay_heap_unpin(ay_heap_t *h) { __atomic_sub_fetch(&h->pins, 1, __ATOMIC_RELEASE); }

ay_heap_t *ay_span_heap(const ay_span_t *s) {
    switch (s->state) {
    case AY_SPAN_SMALL: {
        const ay_central_t *c = s->owner.central;
        return (ay_heap_t *)((char *)(c - c->cls) - offsetof(ay_heap_t, central));
    }
    case AY_SPAN_DIRECT:
        return (ay_heap_t *)((char *)s->owner.direct - offsetof(ay_heap_t, direct));
    default: return (ay_heap_t *)((char *)s->owner.pages - offsetof(ay_heap_t, pages));
    }
}

/* Under heaps_lock: automatic heap id's thread count (0 if not set up). */
static uint32_t auto_threads(unsigned id) { return ay_heaps[id] ? ay_heaps[id]->nthreads : 0; }

/* Under heaps_lock: the automatic heap with the fewest threads (the first
 * of them), among those of node index `node` (any heap when node < 0 or it
 * has none), set up if it was not. */
static ay_heap_t *least_loaded(int node) {
    unsigned lo = 0, hi = ay_heaps_auto;
    if (node >= 0 && node_heaps[node]) {
        lo = node_first[node];
        hi = lo + node_heaps[node];
    }
    unsigned best = lo;
    for (unsigned i = lo + 1; i < hi; i++)
        if (auto_threads(i) < auto_threads(best))
            best = i;
    return auto_setup(best);
}

ay_heap_t *ay_heap_bind(void) {
    int node = ay_topology_here(); /* -1 without NUMA */
    pthread_mutex_lock(&heaps_lock);
    ay_heap_t *best = least_loaded(node);
    best->nthreads++;
    pthread_mutex_unlock(&heaps_lock);
    return best;
}

ay_heap_t *ay_heap_numa_check(const ay_heap_t *cur, uint8_t *pending) {
    int node = ay_topology_here();
    if (node < 0 || (unsigned)node == cur->node || !node_heaps[node]) {
        *pending = AY_NODE_NONE;
        return NULL;
    }
    if (*pending != (unsigned)node) { /* seen once: wait for the next check */
        *pending = (uint8_t)node;
        return NULL;
    }
    *pending = AY_NODE_NONE;
    pthread_mutex_lock(&heaps_lock);
    ay_heap_t *best = least_loaded(node);
    pthread_mutex_unlock(&heaps_lock);
    __atomic_add_fetch(&numa_moves, 1, __ATOMIC_RELAXED);
    return best;
}

uint64_t ay_heap_numa_moves(void) { return AY_LOAD(&numa_moves); }

unsigned ay_heap_node_id(const ay_heap_t *h) { return ay_topo.id[h->node]; }

unsigned ay_heap_auto_node_id(unsigned id) { return ay_topo.id[auto_node(id)]; }

void ay_heap_adopt(ay_heap_t *h) {
    pthread_mutex_lock(&heaps_lock);
    h->nthreads++;
    pthread_mutex_unlock(&heaps_lock);
}

void ay_heap_unbind(ay_heap_t *h) {
    pthread_mutex_lock(&heaps_lock);
    h->nthreads--;
    pthread_mutex_unlock(&heaps_lock);
}

ay_heap_t *ay_heap_create(void) {
    pthread_mutex_lock(&heaps_lock);
    unsigned id = ay_heaps_auto;
    while (id < AY_MAX_HEAPS && ay_heaps[id])
        id++;
    ay_heap_t *h = NULL;
    if (id < AY_MAX_HEAPS) {
        h = spare_heaps;
        if (h)
            spare_heaps = h->next_spare;
    }
    pthread_mutex_unlock(&heaps_lock);
    bool fresh = !h;
    if (id < AY_MAX_HEAPS && !h)
        h = ay_meta_alloc(sizeof *h); /* may map: not under heaps_lock */
    if (!h)
        return NULL;
    int node = ay_topology_here(); /* the creating thread's node */
    heap_init(h, id, false, node < 0 ? 0 : (unsigned)node, fresh);
    pthread_mutex_lock(&heaps_lock);
    if (ay_heaps[id]) { /* taken meanwhile: find another id */
        while (id < AY_MAX_HEAPS && ay_heaps[id])
            id++;
        if (id == AY_MAX_HEAPS) {
            h->next_spare = spare_heaps;
            spare_heaps = h;
            pthread_mutex_unlock(&heaps_lock);
            return NULL;
        }
        h->id = id;
    }
    __atomic_store_n(&ay_heaps[id], h, __ATOMIC_RELEASE);
    if (id + 1 > ay_heaps_limit)
        AY_STORE(&ay_heaps_limit, id + 1); /* read without heaps_lock by purges */
    pthread_mutex_unlock(&heaps_lock);
    return h;
}

int ay_heap_destroy(ay_heap_t *h) {
    if (!h || h->cached)
        return EINVAL;
    pthread_mutex_lock(&heaps_lock);
    __atomic_store_n(&ay_heaps[h->id], NULL, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&heaps_lock);
    /* no new pin can be taken now; wait for the walkers that have one */
    while (__atomic_load_n(&h->pins, __ATOMIC_ACQUIRE))
        sched_yield();
    ay_direct_release_all(&h->direct);
    ay_pageheap_release_all(&h->pages);
    pthread_mutex_lock(&heaps_lock);
    h->next_spare = spare_heaps;
    spare_heaps = h;
    pthread_mutex_unlock(&heaps_lock);
    return 0;
}

static uint64_t last_round_ms; /* when ay_heaps_decay_tick last ran a round */
void (*ay_heaps_tick_hook)(void);

bool ay_heaps_hold_free(void) {
    bool held = ay_transfer_hold_any();
    for (unsigned i = 0; i < AY_LOAD(&ay_heaps_limit) && !held; i++) {
        ay_heap_t *h = ay_heap_pin(i);
        if (h) {
            held = AY_LOAD(&h->pages.free_dirty_pages) + AY_LOAD(&h->pages.purging_pages) > 0;
            ay_heap_unpin(h);
        }
    }
    return held;
}

/* The transfer caches' batches go to their spans first (every batch when
 * `all`, else the round's), so that the spans they empty can go too; then
 * each page heap purges what is due, or every free page when `all` or its
 * entry in `idle` (NULL: none) says so. */
static void heaps_purge(bool all, const bool *idle) {
    ay_transfer_decay(all || idle);
    for (unsigned i = 0; i < AY_LOAD(&ay_heaps_limit); i++) {
        ay_heap_t *h = ay_heap_pin(i);
        if (h) {
            ay_pageheap_purge(&h->pages, all || (idle && idle[i]));
            ay_heap_unpin(h);
        }
    }
}

void ay_heaps_purge(bool all) { heaps_purge(all, NULL); }

/* A round after a quiet spell: which page heaps were idle (ay_pageheap_idle)
 * is read before the transfer caches empty into them. */
static void heaps_purge_quiet(uint64_t now) {
    bool idle[AY_MAX_HEAPS] = {false};
    for (unsigned i = 0; i < AY_LOAD(&ay_heaps_limit); i++) {
        ay_heap_t *h = ay_heap_pin(i);
        if (h) {
            idle[i] = ay_pageheap_idle(&h->pages, now);
            ay_heap_unpin(h);
        }
    }
    heaps_purge(false, idle);
}

void ay_heaps_decay_tick(void) {
    if (ay_conf.decay_ms >= 0)
        ay_heaps_decay_tick_at(ay_os_now_ms());
}

void ay_heaps_decay_tick_at(uint64_t now) {
    void (*hook)(void) = AY_LOAD(&ay_heaps_tick_hook);
    if (hook)
        hook();
    if (ay_conf.decay_ms < 0)
        return;
    uint64_t last = AY_LOAD(&last_round_ms);
    if (AY_LIKELY(!ay_policy_decay_round_due(now, last, ay_conf.decay_ms)) ||
        !__atomic_compare_exchange_n(&last_round_ms, &last, now, false, __ATOMIC_RELAXED,
                                     __ATOMIC_RELAXED))
        return; /* not due, or another thread runs this round */
    /* A thread cache's miss, overflow and exit, the events that move
     * batches in and out of the transfer caches, each come here after, and
     * run a round when one is due: no round for decay_ms + a round means
     * none of them for decay_ms, so every batch the transfer caches hold
     * has sat unused that long, and goes back to its spans; and a page heap
     * that nothing used for decay_ms purges every free page, those the
     * batches just emptied included.  So a process that went quiet gets its
     * memory back at its next slow-path event.  (The background thread
     * comes here on its own schedule too, and its rounds purge on time.) */
    if (last != 0 && now - last >= (uint64_t)ay_conf.decay_ms + AY_DECAY_ROUND_MS)
        heaps_purge_quiet(now);
    else
        heaps_purge(false, NULL);
}

void ay_heaps_lock_all(void) {
    pthread_mutex_lock(&heaps_lock);
    for (unsigned i = 0; i < ay_heaps_limit; i++) {
        ay_heap_t *h = ay_heaps[i];
        if (!h)
            continue;
        for (unsigned c = 0; c < AY_NUM_CLASSES; c++)
            if (ay_heap_central_ready(h, c)) /* none is set up meanwhile: heaps_lock is held */
                ay_central_lock(&h->central[c]);
        ay_pageheap_lock(&h->pages);
        ay_direct_lock(&h->direct);
    }
    ay_transfer_lock_all(); /* leaves: nothing is taken under them */
}

void ay_heaps_unlock_all(void) {
    ay_transfer_unlock_all();
    for (unsigned i = 0; i < ay_heaps_limit; i++) {
        ay_heap_t *h = ay_heaps[i];
        if (!h)
            continue;
        ay_direct_unlock(&h->direct);
        ay_pageheap_unlock(&h->pages);
        for (unsigned c = 0; c < AY_NUM_CLASSES; c++)
            if (ay_heap_central_ready(h, c))
                ay_central_unlock(&h->central[c]);
    }
    pthread_mutex_unlock(&heaps_lock);
}

void ay_heaps_after_fork_child(void) {
    pthread_mutex_init(&heaps_lock, NULL);
    ay_transfer_after_fork_child();
    for (unsigned i = 0; i < ay_heaps_limit; i++) {
        ay_heap_t *h = ay_heaps[i];
        if (!h)
            continue;
        for (unsigned c = 0; c < AY_NUM_CLASSES; c++)
            if (ay_heap_central_ready(h, c)) /* (one never set up is zero: unlocked) */
                ay_central_reset_lock(&h->central[c]);
        ay_direct_reset_lock(&h->direct);
        ay_pageheap_after_fork_child(&h->pages);
    }
}
