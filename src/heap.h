/* heap.h - heaps: independent partitions, each with one central cache per
 * size class and one page heap (jemalloc's arenas, mimalloc's heaps).
 *
 * Automatic heaps (ids 0 .. n-1, n from the `heaps` setting, one per CPU by
 * default) serve thread caches: a thread is bound to the least-loaded one
 * when it first allocates.  Explicit heaps (alloy_heap_create) are uncached:
 * their pages are registered with bin 0, so every free of their memory takes
 * the slow path and goes straight back to the heap; nothing of theirs ever
 * sits in a thread cache, which is what lets alloy_heap_destroy release
 * everything at once.
 *
 * Spans record their heap, so a free always goes back to the heap that owns
 * the memory, whichever thread frees it.
 * Lock order: heaps_lock (create/destroy/bind) is taken alone, never while a
 * central or page-heap lock is held.
 */
#ifndef ALLOY_HEAP_H
#define ALLOY_HEAP_H
#include <stdbool.h>

#include "central.h"
#include "pageheap.h"

#define AY_MAX_HEAPS 256

typedef struct ay_heap {
    ay_central_t central[AY_NUM_CLASSES];
    ay_pageheap_t pages;
    unsigned id;              /* index in ay_heaps */
    bool cached;              /* automatic heap: thread caches fill from it */
    uint32_t nthreads;        /* threads bound to it (automatic heaps) */
} ay_heap_t;

/* Every live heap by id; NULL for unused ids.  Written under heaps_lock. */
extern AY_HIDDEN ay_heap_t *ay_heaps[AY_MAX_HEAPS];
extern AY_HIDDEN unsigned ay_heaps_auto;   /* number of automatic heaps */
extern AY_HIDDEN unsigned ay_heaps_limit;  /* 1 + highest id ever used */

/* Create the automatic heaps (from ay_init).  Heap 0 is static, so the
 * allocator works even if metadata cannot be mapped. */
void ay_heaps_init(unsigned count);
/* An explicit heap, or NULL when out of memory or ids. */
ay_heap_t *ay_heap_create(void);
/* Release everything of an explicit heap.  0, or EINVAL (automatic heap). */
int ay_heap_destroy(ay_heap_t *h);
/* Bind the calling thread: the least-loaded automatic heap. */
ay_heap_t *ay_heap_bind(void);
/* A thread leaves heap h / joins heap h (thread counts for binding). */
void ay_heap_unbind(ay_heap_t *h);
void ay_heap_adopt(ay_heap_t *h);
/* The heap with this id, or NULL. */
ay_heap_t *ay_heap_get(unsigned id);

/* Fork support: every heap's locks, in the global order. */
void ay_heaps_lock_all(void);
void ay_heaps_unlock_all(void);
void ay_heaps_reset_locks(void);

/* The optional background purging thread. */
int ay_background_start(void);
void ay_background_stop(void);
bool ay_background_running(void);

#endif
