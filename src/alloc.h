/* SPDX-License-Identifier: MIT */
/* alloc.h - malloc: its inline fast path, its slow path, allocation that
 * bypasses the thread cache, calloc, and out-of-memory (alloc.c).
 *
 * The front end is split by concept, as mimalloc splits its own, one module
 * each, in this order (each uses only those before it):
 *   large       blocks of whole pages (above 32 KiB, aligned to more than
 *               a page, heap-profiler samples): page-heap spans and direct
 *               maps
 *   alloc       malloc and calloc, the malloc slow path, uncached and
 *               sampled allocation, out-of-memory, malloc_usable_size,
 *               alloy_thread_flush and alloy_purge
 *   free        free and its slow path, the checks on a pointer to free
 *   aligned     the aligned family and its size-class search
 *   realloc     the realloc policy
 *   heap_api    the explicit-heap API (include/alloy/heap.h)
 *   override    the libc names (malloc, free, ...), defined to forward to
 *               the alloy_* functions
 *
 * malloc's fast path is here, inline: it pops a thread-cache list and has
 * exactly one unlikely branch, which tail-calls the slow path.
 *
 * Bad input: a size that cannot be met (above PTRDIFF_MAX, or overflowing in
 * calloc/reallocarray) gives NULL with errno ENOMEM.  Lower layers return
 * NULL when the OS refuses memory; ay_oom, here, turns that into errno
 * ENOMEM (or an abort, with abort_on_error:true).
 */
#ifndef ALLOY_ALLOC_H
#define ALLOY_ALLOC_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpucache.h"
#include "heap.h"
#include "prof.h"
#include "secure.h"
#include "tcache.h"

void *ay_malloc_slow(size_t size);
/* malloc's fast path in per-CPU mode popped block p, which had no mark:
 * report it (never returns). */
void *ay_malloc_bad(void *p);

/* malloc's fast path with thread caches.  Every instruction below is
 * counted, with free's (free.h), by tools/fastpath-instructions.sh
 * (docs/ARCHITECTURE.md, "One malloc(64)", gives the figure).  The bin
 * is the cache plus the offset the size table gives (no shift).  The head
 * is never NULL (an empty list is AY_LIST_END: secure.h), so its first word
 * can be read at once.  The one branch tests that the link in it decodes to
 * a user-space address (secure.h): an empty list (AY_LIST_END's word is 0),
 * a head handed out already (freed twice: its word was cleared when it was
 * handed out), a corrupted list, and the profiler's countdown running out
 * (prof.h: the subtraction's sign selects AY_LIST_END for p with a
 * conditional move) all miss.  The block's word is then cleared: it is
 * handed out. */
/* malloc's fast path in per-CPU mode while ay_cpu_lean (cpucache.h): one
 * sequence pops the block off the CPU's list of its class; the block's
 * mark must be there (a block freed twice, or written after its free, has
 * none), and is cleared.  No countdown and no thread-local word: the
 * counted path (ay_malloc_cpu_counted, alloc.c) has them. */
AY_INLINE void *ay_malloc_fast_cpu(size_t size) {
    unsigned off = ay_size_bin_offset(size);
    void *p;
    AY_CPU_POP_CLAIM(p, off, 0, miss, bad);
    return p;
miss:
    return ay_malloc_slow(size);
bad:
    return ay_malloc_bad(p);
}
/* malloc in per-CPU mode when not ay_cpu_lean: the profiler's countdown as
 * in the thread caches' path below, then the pop, from the null regions for
 * a thread whose mallocs must miss (its cpu_delta). */
void *ay_malloc_cpu_counted(size_t size);

AY_INLINE void *ay_malloc_fast(size_t size) {
    /* only in a build with per-CPU caches (cpucache.h); a plain read (a
     * compare with memory): only the thread that clears it needs to see
     * that at once, and it does */
    if (AY_LIKELY(ay_cpu_lean))
        return ay_malloc_fast_cpu(size);
    if (ay_cpu_mode)
        return ay_malloc_cpu_counted(size);
    unsigned off = ay_size_bin_offset(size);
    ay_bin_t *bin = (ay_bin_t *)((char *)ay_tls.bins + off);
    void *p = bin->head;
    int64_t left;
    __builtin_sub_overflow(ay_tls.prof_left, (int64_t)size, &left);
    ay_tls.prof_left = left;
    p = left < 0 ? ay_prof_null : p;
    uintptr_t next = *(uintptr_t *)p + (uintptr_t)p; /* ay_link_get_raw, in two steps */
    next ^= ay_link_key;
    if (AY_UNLIKELY(!ay_link_plausible((void *)next)))
        return ay_malloc_slow(size);
    AY_KEEP_IN_REGISTER(p);
    ay_link_clear(p);
    bin->room++;
    bin->head = (void *)next;
    if (ay_secure) {
        if (ay_secure_tags)
            *ay_tag_at(p, ay_bin_size[off / AY_BIN_BYTES]) = ay_tag_live(p);
        else
            *ay_mark_at(p) = 0;
    }
    return p;
}

/* errno = ENOMEM and NULL; aborts instead under abort_on_error:true. */
void *ay_oom(void);

/* size bytes from heap h, bypassing the thread cache (h's central cache, or
 * its pages above 32 KiB); `zero` asks for zeroed memory.  NULL when out of
 * memory (errno is the caller's to set). */
void *ay_alloc_uncached(ay_heap_t *h, size_t size, bool zero);
/* A sampled block (prof.h): whole pages of heap h, recorded with its stack.
 * NULL when out of memory (errno is the caller's to set). */
void *ay_alloc_sampled(ay_heap_t *h, size_t size, size_t align, bool zero);
/* size bytes from heap h (NULL: the calling thread's heap), through the
 * thread cache when h is the thread's own cached heap.  ENOMEM on failure. */
void *ay_alloc_in(ay_heap_t *h, size_t size);
/* calloc in heap h (NULL: as malloc does). */
void *ay_calloc_in(ay_heap_t *h, size_t n, size_t size);
/* Usable bytes of the block at p in span s (SMALL, LARGE or DIRECT). */
size_t ay_block_usable(const ay_span_t *s, const void *p);

#endif
