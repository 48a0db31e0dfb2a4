/* SPDX-License-Identifier: MIT */
/* alloy/heap.h - heaps: independent partitions of alloy's malloc, each with
 * its own central caches and page heap (jemalloc calls them arenas; in alloy
 * "arena" is the bump allocator of alloy/arena.h).
 *
 * Automatic heaps: alloy starts one per CPU (ALLOY_CONF=heaps:N sets the
 * count) and binds each thread, at its first allocation, to the one with the
 * fewest threads.  Their memory goes through the thread caches.  On a
 * machine with more than one NUMA node they are grouped by node: a thread
 * binds to the least-loaded heap of the node it runs on, moves to its new
 * node's heaps when the scheduler moves it, and each heap's pages are placed
 * on its node (docs/NUMA.md).
 *
 * Explicit heaps (alloy_heap_create) are for isolation and bulk release:
 * alloy_heap_destroy frees everything allocated in one at once.  They are
 * uncached: every call takes the heap's per-class lock, so they are not the
 * tool for a hot path (use alloy/arena.h or alloy/pool.h there).
 *
 * Any block, of any heap, may be freed with free() or alloy_free() from any
 * thread; it always goes back to the heap that owns it.
 */
#ifndef ALLOY_HEAP_H_PUBLIC
#define ALLOY_HEAP_H_PUBLIC

#include <stddef.h>

#include "../alloy.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct alloy_heap alloy_heap_t; /* opaque */

/* A new explicit heap, or NULL (errno ENOMEM) when out of memory or when
 * 256 heaps exist. */
ALLOY_API alloy_heap_t *alloy_heap_create(void);
/* Free every block of an explicit heap and the heap itself.  Returns 0, or
 * EINVAL for NULL, an automatic heap, or the calling thread's default heap.
 * Undefined if another thread still uses a block of it or has it as default. */
ALLOY_API int alloy_heap_destroy(alloy_heap_t *h);

/* The malloc family in heap h.  errno and NULL as for malloc. */
ALLOY_API void *alloy_heap_malloc(alloy_heap_t *h, size_t size);
ALLOY_API void *alloy_heap_calloc(alloy_heap_t *h, size_t n, size_t size);
ALLOY_API void *alloy_heap_realloc(alloy_heap_t *h, void *p, size_t size);
ALLOY_API void *alloy_heap_aligned_alloc(alloy_heap_t *h, size_t align, size_t size);
/* Same as free(p); the debug build checks that p belongs to h. */
ALLOY_API void alloy_heap_free(alloy_heap_t *h, void *p);

/* The heap the calling thread's malloc uses. */
ALLOY_API alloy_heap_t *alloy_heap_get_default(void);
/* Make h the calling thread's default heap: malloc, calloc, realloc, ... of
 * this thread then allocate in h.  NULL returns to the automatic heap the
 * thread is bound to.  A thread that chose an automatic heap this way stays
 * on it (no NUMA moves).  Returns 0, or EAGAIN while the thread is exiting. */
ALLOY_API int alloy_heap_set_default(alloy_heap_t *h);

/* A heap's index (0 .. 255): automatic heaps first. */
ALLOY_API unsigned alloy_heap_id(const alloy_heap_t *h);
/* The heap with index id, or NULL. */
ALLOY_API alloy_heap_t *alloy_heap_from_id(unsigned id);

#ifdef __cplusplus
}
#endif
#endif
