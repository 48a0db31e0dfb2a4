/* alloc.h - the front end: what the malloc family's files share.
 *
 * The front end is split by concept, as mimalloc splits its own:
 *   alloc.c     malloc and calloc, the malloc slow path, uncached allocation,
 *               out-of-memory, malloc_usable_size
 *   free.c      free and its slow path, the checks on a pointer to free
 *   large.c     blocks above 256 KiB: page-heap spans and direct maps
 *   aligned.c   the aligned family and its size-class search
 *   realloc.c   the realloc policy
 *   heap_api.c  the explicit-heap API (include/alloy/heap.h)
 *   override.c  the libc names, as aliases of the alloy_* functions
 *
 * The fast paths are here, inline: each pops or pushes a thread-cache list
 * and has exactly one unlikely branch, which tail-calls the slow path.
 *
 * Bad input: a size that cannot be met (above PTRDIFF_MAX, or overflowing in
 * calloc/reallocarray) gives NULL with errno ENOMEM; an invalid alignment
 * gives EINVAL; freeing a pointer alloy does not own aborts with a message
 * naming the pointer.  Lower layers return NULL when the OS refuses memory;
 * ay_oom, here, turns that into errno ENOMEM (or an abort, with
 * abort_on_error:true).
 */
#ifndef ALLOY_ALLOC_H
#define ALLOY_ALLOC_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "conf.h"
#include "heap.h"
#include "pagemap.h"
#include "prof.h"
#include "tcache.h"

#define AY_MAX_REQUEST ((size_t)PTRDIFF_MAX)

void *ay_malloc_slow(size_t size);
void ay_free_slow(void *p);

/* The heap profiler's byte countdown (prof.h) is folded into the one branch:
 * the subtraction's sign selects NULL for p with a conditional move, so a
 * countdown that runs out reaches the slow path as an empty list does. */
AY_INLINE void *ay_malloc_fast(size_t size) {
    ay_bin_t *bin = &ay_tc->bins[ay_size_bin(size)];
    void *p = bin->head;
    int64_t left;
    __builtin_sub_overflow(ay_tls.prof_left, (int64_t)size, &left);
    ay_tls.prof_left = left;
    p = left < 0 ? ay_prof_null : p;
    if (AY_UNLIKELY(!p))
        return ay_malloc_slow(size);
    bin->head = *(void **)p;
    bin->len--;
    return p;
}

AY_INLINE void ay_free_fast(void *p) {
    uintptr_t a = (uintptr_t)p;
    unsigned b = AY_LOAD(&ay_pagemap_leaf(a)->bin[ay_pagemap_index(a)]);
    ay_bin_t *bin = &ay_tc->bins[b];
    if (AY_UNLIKELY(bin->len >= bin->limit))
        return ay_free_slow(p);
    *(void **)p = bin->head;
    bin->head = p;
    bin->len++;
}

/* errno = ENOMEM and NULL; aborts instead under abort_on_error:true. */
void *ay_oom(void);

/* size bytes from heap h, bypassing the thread cache (h's central cache, or
 * its pages above 256 KiB); `zero` asks for zeroed memory.  NULL when out of
 * memory (errno is the caller's to set). */
void *ay_alloc_uncached(ay_heap_t *h, size_t size, bool zero);
/* A sampled block (prof.h): whole pages of heap h, recorded with its stack.
 * NULL when out of memory (errno is the caller's to set). */
void *ay_alloc_sampled(ay_heap_t *h, size_t size, size_t align, bool zero);
/* size bytes from heap h (NULL: the calling thread's heap), through the
 * thread cache when h is the thread's own cached heap.  ENOMEM on failure. */
void *ay_alloc_in(ay_heap_t *h, size_t size);
/* size bytes aligned to align (a power of two) from heap h (NULL: the
 * thread's).  ENOMEM on failure. */
void *ay_alloc_aligned(ay_heap_t *h, size_t size, size_t align);
/* calloc and realloc in heap h (NULL: as malloc does). */
void *ay_calloc_in(ay_heap_t *h, size_t n, size_t size);
void *ay_realloc_in(ay_heap_t *h, void *p, size_t size);

AY_INLINE bool ay_is_pow2(size_t x) { return x && !(x & (x - 1)); }

/* A block above 256 KiB, or one aligned to more than a page, from heap h:
 * whole pages of its page heap, or a direct map above 256 pages.  NULL when
 * out of memory. */
void *ay_large_alloc(ay_heap_t *h, size_t size, size_t align, bool zero);
/* Free the block at p, of LARGE or DIRECT span s (p checked by the caller). */
void ay_large_free(ay_span_t *s, void *p);
/* Resize the direct map s in place or by moving it; its new address, or
 * NULL (s untouched). */
void *ay_large_resize(ay_span_t *s, size_t size);

/* The span of p, a block the caller is about to free or resize; aborts with
 * a message naming `fn` when p is not a block alloy handed out (unknown,
 * already free, or not the start of a block). */
ay_span_t *ay_block_span(const void *p, const char *fn);
/* Usable bytes of the block at p in span s. */
size_t ay_block_usable(const ay_span_t *s, const void *p);

/* ---- debugging fills (junk:true, zero:true); they turn the caches off ---- */

AY_INLINE void *ay_fill_new(void *p, size_t usable) {
    if (AY_UNLIKELY(ay_conf.junk || ay_conf.zero) && p)
        memset(p, ay_conf.zero ? 0 : 0xa5, usable);
    return p;
}

AY_INLINE void ay_fill_freed(void *p, size_t usable) {
    if (AY_UNLIKELY(ay_conf.junk))
        memset(p, 0x5a, usable);
}

#endif
