/* SPDX-License-Identifier: MIT */
/* heap.h - heaps: independent partitions, each with one central cache per
 * size class, one page heap and one set of direct maps (jemalloc's arenas,
 * mimalloc's heaps).
 *
 * Automatic heaps (ids 0 .. n-1, n from the `heaps` setting, one per CPU by
 * default, at least one per NUMA node and at most AY_MAX_HEAPS / 2) serve
 * thread caches: a thread is bound to the least-loaded one when its thread
 * cache is made, on its first slow path.  Heap 0 is set up at
 * initialisation; every other automatic heap only when it is first used: a
 * thread binds to it, or a caller names it for use (ay_heap_use), so that a
 * program with few threads pays nothing for the heaps of the other CPUs.
 * Until then it is not in ay_heaps, and the code that visits every heap
 * (stats, purging, fork) does not see it; it holds nothing.
 *
 * NUMA (topology.h, docs/NUMA.md): when NUMA awareness is in effect, the
 * automatic heaps are grouped by node, in node order (at least one per
 * node, the rest in proportion to each node's CPUs), and each heap's page
 * heap places its blocks on the heap's node.  A thread binds to the
 * least-loaded heap of the node its CPU is on.  Every AY_NUMA_CHECK_EVENTS
 * slow-path events (refills and overflows) its thread cache asks
 * ay_heap_numa_check where it runs; when two checks in a row find it on
 * the same other node, it moves to that node's least-loaded heap (which
 * flushes its cache).  A thread that chose its automatic heap
 * (alloy_heap_set_default) stays on it.  Explicit heaps take the node of
 * the thread that creates them.  Without NUMA every heap is on node 0.
 *
 * Explicit heaps (alloy_heap_create) are uncached: their central caches
 * register their pages with bin 0, so every free of their memory takes the
 * slow path and goes straight back to the heap; nothing of theirs ever sits
 * in a thread cache, which is what lets alloy_heap_destroy release
 * everything at once.
 *
 * Spans record their owner (a central cache, the page heap or the direct
 * maps), so a free always goes back to the heap that owns the memory,
 * whichever thread frees it; ay_span_heap names that heap.
 * Destroying an explicit heap waits until no walker has it pinned.
 * Lock order: heaps_lock (create, destroy, bind, pin) is never taken while a
 * central, page-heap or direct-map lock is held, and none of those is taken
 * while heaps_lock is held, except by fork's prepare handler, which takes
 * them all in the global order (see docs/ARCHITECTURE.md).
 */
#ifndef ALLOY_HEAP_H
#define ALLOY_HEAP_H
#include <stdbool.h>

#include "central.h"
#include "direct.h"
#include "pageheap.h"
#include "usage.h"

#define AY_MAX_HEAPS 256 /* automatic (at most AY_MAX_AUTO_HEAPS) and explicit */
_Static_assert(AY_MAX_AUTO_HEAPS <= AY_MAX_HEAPS / 2, "room for explicit heaps");
#define AY_NUMA_CHECK_EVENTS 16 /* slow-path events between two checks of a thread's node */

typedef struct ay_heap {
    ay_central_t central[AY_NUM_CLASSES];
    ay_pageheap_t pages;
    ay_direct_t direct;
    ay_usage_t usage; /* active bytes of pages and direct maps, and their peak */
    uint64_t central_ready[(AY_NUM_CLASSES + 63) / 64]; /* bit c: central[c] is set up */
    unsigned id;                                        /* index in ay_heaps */
    unsigned node;              /* NUMA node index (topology.h); 0 without NUMA */
    bool cached;                /* automatic heap: thread caches fill from it */
    uint32_t nthreads;          /* threads bound to it (automatic heaps) */
    uint32_t pins;              /* walkers using it without heaps_lock (ay_heap_pin) */
    uint64_t retired_overflows; /* thread-cache events of threads that left it */
    uint64_t retired_scavenges;
    struct ay_heap *next_spare; /* destroyed explicit heaps, for reuse */
} ay_heap_t;

/* Every live heap by id; NULL for unused ids and for automatic heaps not
 * set up yet.  Written under heaps_lock. */
extern AY_HIDDEN ay_heap_t *ay_heaps[AY_MAX_HEAPS];
extern AY_HIDDEN unsigned ay_heaps_auto;  /* number of automatic heaps */
extern AY_HIDDEN unsigned ay_heaps_limit; /* 1 + highest id ever used */

/* Make room for `count` automatic heaps (at initialisation) and set up
 * heap 0, which is static, so the allocator works even if metadata cannot
 * be mapped (there is then only heap 0). */
void ay_heaps_init(unsigned count);
/* An explicit heap, or NULL when out of memory or ids. */
ay_heap_t *ay_heap_create(void);
/* Release everything of an explicit heap.  0, or EINVAL (automatic heap). */
int ay_heap_destroy(ay_heap_t *h);
/* Bind the calling thread: the least-loaded automatic heap (of the node it
 * runs on, with NUMA), set up if it was not (one not set up has no threads). */
ay_heap_t *ay_heap_bind(void);
/* NUMA: called every AY_NUMA_CHECK_EVENTS slow-path events by a thread
 * bound to automatic heap cur, with *pending (AY_NODE_NONE at first) kept
 * between calls.  The heap the thread should move to, or NULL to stay. */
ay_heap_t *ay_heap_numa_check(const ay_heap_t *cur, uint8_t *pending);
/* Threads moved to another node's heap by ay_heap_numa_check, so far. */
uint64_t ay_heap_numa_moves(void);
/* The kernel's id of heap h's node (0 without NUMA). */
unsigned ay_heap_node_id(const ay_heap_t *h);
/* The same for automatic heap id (< ay_heaps_auto), set up or not. */
unsigned ay_heap_auto_node_id(unsigned id);
/* A thread leaves heap h / joins heap h (thread counts for binding). */
void ay_heap_unbind(ay_heap_t *h);
void ay_heap_adopt(ay_heap_t *h);
/* The heap with this id, or NULL (an automatic heap not set up yet, too).
 * Only for reading counters: an explicit heap may be destroyed, and its
 * memory reused for a new one, meanwhile. */
ay_heap_t *ay_heap_get(unsigned id);
/* The same for a caller that will use the heap (alloy_heap_from_id,
 * MALLOCX_ARENA): an automatic heap is set up first if it was not. */
ay_heap_t *ay_heap_use(unsigned id);
/* Is there a heap with this id: a live one, or an automatic one, set up or
 * not?  (One not set up reads as zeros: it holds nothing.) */
bool ay_heap_exists(unsigned id);
/* Automatic heaps set up so far (heaps.set_up). */
unsigned ay_heaps_set_up(void);
/* The heap with this id, pinned: it is not destroyed (nor its memory reused)
 * until ay_heap_unpin.  NULL when there is none.  For code that works on a
 * heap it is not bound to, such as purging. */
ay_heap_t *ay_heap_pin(unsigned id);
void ay_heap_unpin(ay_heap_t *h);
/* Class cls's central cache of heap h, set up on its first use: a heap's
 * 208 central caches (80 KiB) start as zeros that nothing writes, so that
 * only the pages of the classes a program uses become resident.  Every
 * fetch goes through here; a central cache reached through a span (a
 * release) was set up when the span was made. */
void ay_heap_central_setup(ay_heap_t *h, unsigned cls);
AY_INLINE ay_central_t *ay_heap_central(ay_heap_t *h, unsigned cls) {
    ay_central_t *c = &h->central[cls];
    if (AY_UNLIKELY(!__atomic_load_n(&c->size, __ATOMIC_ACQUIRE)))
        ay_heap_central_setup(h, cls);
    return c;
}
/* Was class cls's central cache of h set up?  Code that visits every class
 * of a heap (purging, stats, fork) asks this first and skips the others,
 * which hold nothing: even a read of one would make its page resident on a
 * kernel that maps no shared zero page on a read fault (relaxed). */
AY_INLINE bool ay_heap_central_ready(const ay_heap_t *h, unsigned cls) {
    return AY_LOAD(&h->central_ready[cls / 64]) >> (cls % 64) & 1;
}
/* Is h the first automatic heap of its node?  (The stats count the node's
 * transfer caches, which its heaps share, there.) */
bool ay_heap_first_of_node(const ay_heap_t *h);
/* The heap that owns span s (SMALL, LARGE or DIRECT). */
ay_heap_t *ay_span_heap(const ay_span_t *s);
/* Purge every heap's free pages: those due (all = false) or all of them;
 * before that, a decay round of the transfer caches (every batch to its
 * spans, when all: transfer.h). */
void ay_heaps_purge(bool all);
/* One slow-path event of any thread (a thread cache's miss, overflow or
 * exit), or the background thread's turn: when a decay round is due
 * (policy.h, ay_policy_decay_round_due: AY_DECAY_ROUND_MS since the last),
 * run one: the transfer caches' round (transfer.h), then what is due in
 * each page heap.  After a quiet spell (no round for decay_ms + a round),
 * the transfer caches give back every batch, and each page heap that was
 * idle that long (ay_pageheap_idle) purges every free page.  So what
 * decay_ms says is due goes back even in a process that went quiet without
 * a background thread.  Costs a slow path a read of the coarse clock;
 * nothing under decay_ms:-1. */
void ay_heaps_decay_tick(void);
/* The same, for a slow path that read the clock already (now, from
 * ay_os_now_ms). */
void ay_heaps_decay_tick_at(uint64_t now);
/* Do the heaps hold memory that a later round could give back: free pages
 * not purged yet, or batches in the transfer caches?  (A racy read.) */
bool ay_heaps_hold_free(void);
/* Called at each slow-path event's ay_heaps_decay_tick_at, round or not;
 * NULL (the default): nothing.  Set once, at start-up, by the background
 * module (background_thread:auto), a layer above, which starts or wakes
 * its thread from it. */
extern void (*ay_heaps_tick_hook)(void);

/* Fork support: every heap's locks, in the global order. */
void ay_heaps_lock_all(void);
void ay_heaps_unlock_all(void);
void ay_heaps_after_fork_child(void);

#endif
