/* SPDX-License-Identifier: MIT */
/* large.h - blocks above 32 KiB (AY_MAX_BINNED_SIZE, tcache.h), blocks aligned to more than a page, and
 * heap-profiler samples of any size (large.c): whole pages of a heap's page
 * heap up to AY_LARGE_MAX_PAGES
 * (8192 pages, 32 MiB; a LARGE span), so that freed large blocks are reused,
 * and a direct map above that (a DIRECT span, direct.h), which realloc can
 * resize with mremap.
 *
 * A LARGE or DIRECT span holds one block, which starts at the span's first
 * page, in every flavour.  The caller checks a pointer before it frees or resizes it (free.h).
 */
#ifndef ALLOY_LARGE_H
#define ALLOY_LARGE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "heap.h"
#include "span.h"

/* A block of `size` bytes aligned to `align` (a power of two) from heap h:
 * whole pages of its page heap, or a direct map above AY_LARGE_MAX_PAGES.
 * `zero` asks for zeroed memory.  NULL when out of memory. */
void *ay_large_alloc(ay_heap_t *h, size_t size, size_t align, bool zero);
/* Free the block at p, of LARGE or DIRECT span s (p checked by the caller). */
void ay_large_free(ay_span_t *s, void *p);
/* Usable bytes of the LARGE or DIRECT block at p of span s. */
size_t ay_large_usable(const ay_span_t *s, const void *p);
/* Resize the direct map s in place or by moving it; its new address, or
 * NULL (s untouched). */
void *ay_large_resize(ay_span_t *s, size_t size);
/* Resize the block of LARGE span s where it is, to whole
 * pages for `size` bytes (at most AY_LARGE_MAX_PAGES): it grows into the
 * free pages after it, or gives its tail back.  false, with s untouched,
 * when it cannot (ay_pageheap_resize). */
bool ay_large_resize_in_place(ay_span_t *s, size_t size);

/* The first byte of the LARGE or DIRECT block of span s. */
AY_INLINE uintptr_t ay_large_start(const ay_span_t *s) { return s->start; }

#endif
