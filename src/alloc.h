/* SPDX-License-Identifier: MIT */
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
#include "error.h"
#include "pagemap.h"
#include "prof.h"
#include "quarantine.h"
#include "secure.h"
#include "tcache.h"

#define AY_MAX_REQUEST ((size_t)PTRDIFF_MAX)

void *ay_malloc_slow(size_t size);
void ay_free_slow(void *p);
/* free's fast path missed after taking one from bin's room (free.c). */
void ay_free_miss(void *p, ay_bin_t *bin);
/* The secure flavour's free, when its fast path cannot (free.c). */
void ay_free_secure(void *p);
/* A free small block goes back to a list, without checks (free.c). */
void ay_free_unchecked(void *p);

/* The fast paths.  A pair of them (64 bytes) is 42 instructions in the
 * release build, 2 of them the heap profiler's countdown; every instruction
 * below is counted (tools/fastpath-instructions.sh), and the hardening adds
 * none.  The bin is the cache plus the offset the size table or the pagemap
 * gives (no shift).  malloc's one branch tests that the head is a
 * user-space address (secure.h): an empty list (NULL), a corrupted one, and
 * the profiler's countdown running out (prof.h: the subtraction's sign
 * selects NULL for p with a conditional move) all miss.  free's first
 * branch is its count: it takes one from the list's room (tcache.h), and a
 * list without room (full, or bin 0) misses; ay_free_miss gives it back.
 * Its second sends the block freed twice in a row to the slow path, which
 * reports it. */
AY_INLINE void *ay_malloc_fast(size_t size) {
    unsigned off = ay_size_bin_offset(size);
    ay_bin_t *bin = (ay_bin_t *)((char *)ay_tc + off);
    void *p = bin->head;
    int64_t left;
    __builtin_sub_overflow(ay_tls.prof_left, (int64_t)size, &left);
    ay_tls.prof_left = left;
    p = left < 0 ? ay_prof_null : p;
    if (AY_UNLIKELY(!ay_link_plausible(p)))
        return ay_malloc_slow(size);
    bin->room++;
    uintptr_t next = *(uintptr_t *)p + (uintptr_t)p; /* ay_link_get, in two steps */
    AY_KEEP_IN_REGISTER(p);
    bin->head = (void *)(next ^ ay_link_key);
    if (ay_secure)
        *ay_tag_at(p, ay_bin_size[off / AY_BIN_BYTES]) = ay_tag_live(p);
    return p;
}

AY_INLINE void ay_free_fast(void *p) {
    uintptr_t a = (uintptr_t)p;
    unsigned off = AY_LOAD(&ay_pagemap_leaf(a)->bin[ay_pagemap_index(a)]);
    ay_bin_t *bin = (ay_bin_t *)((char *)ay_tc + off);
    AY_ROOM_TAKE(&bin->room, miss); /* no room left: the list is full, or bin 0 */
    void *h = bin->head;
    if (AY_UNLIKELY(h == p))
        goto miss;
    ay_link_set(p, h);
    bin->head = p;
    return;
miss:
    return ay_free_miss(p, bin);
}

/* The secure flavour's free fast path.  The tag word at the end of the
 * block must be the block's canary: that one compare catches an overflow
 * into the next block, a double free (the tag then says "free"), and a
 * pointer that is not the start of a block (the word it reads is then
 * someone's data), each reported by the slow path.  The block then waits in
 * the thread's quarantine (quarantine.h), and the oldest block there, its
 * words checked, goes onto its list. */
AY_INLINE void ay_free_fast_secure(void *p) {
    uintptr_t a = (uintptr_t)p;
    unsigned off = AY_LOAD(&ay_pagemap_leaf(a)->bin[ay_pagemap_index(a)]);
    ay_tcache_t *tc = ay_tc;
    ay_bin_t *bin = (ay_bin_t *)((char *)tc + off);
    if (AY_UNLIKELY(bin->room <= 0)) /* not small, no cache, a full list */
        return ay_free_secure(p);
    size_t size = ay_bin_size[off / AY_BIN_BYTES];
    if (AY_UNLIKELY(*ay_tag_at(p, size) != ay_tag_live(p) || size > AY_QUARANTINE_MAX_BLOCK))
        return ay_free_secure(p);
    ay_quarantine_mark(p, size);
    if (!ay_secure_quarantine) { /* (a build without it, to measure it) */
        ay_link_set(p, bin->head);
        bin->head = p;
        bin->room--;
        return;
    }
    ay_quarantine_slot_t out;
    ay_quarantine_swap(tc->quarantine, p, off, size, &out);
    void *e = out.block;
    if (!e)
        return;
    if (AY_UNLIKELY(!ay_quarantine_intact(e, out.size)))
        ay_fatal_in("free()", "a block was written to after it was freed", e);
    ay_bin_t *ebin = (ay_bin_t *)((char *)tc + out.off);
    if (AY_UNLIKELY(ebin->room <= 0))
        return ay_free_unchecked(e);
    ay_link_set(e, ebin->head);
    ebin->head = e;
    ebin->room--;
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
/* The request size that malloc maps to the smallest class whose objects
 * hold size bytes and are aligned to align (a power of two above 8, with
 * size <= AY_MAX_REQUEST - align), or 0 when such a block is whole pages
 * (ay_large_alloc). */
size_t ay_aligned_request(size_t size, size_t align);
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
/* The first byte of the LARGE or DIRECT block of span s (after its guard
 * page in the secure flavour). */
AY_INLINE uintptr_t ay_large_start(const ay_span_t *s) { return s->user ? s->user : s->start; }

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
