/* SPDX-License-Identifier: MIT */
/* pagemap.h - the address -> span map: a two-level radix tree over 48-bit
 * addresses at 4 KiB granularity.
 *
 * The root has 2^18 entries, each covering 1 GiB; a leaf holds, for each of
 * its 2^18 pages, the span record and its bin's offset in a thread cache
 * (tcache.h): bin * AY_BIN_BYTES, bin = size class + 1, for a small object
 * of an automatic heap (a uint16_t); 0 for everything else (large blocks,
 * free pages, and the small objects of explicit heaps, whose frees must take
 * the slow path: bin 0, always empty with no room).  That is what free's
 * fast path adds to the thread's lists.  Leaves are mmap'ed on
 * first use and never freed, so a lookup needs no lock: free's fast path
 * reads the offset with two loads.
 * A root entry stores its leaf as an offset from ay_pagemap_zero, an all-zero
 * leaf in .bss (never written, so never resident): an unset entry (0) reads
 * as that empty leaf, and lookups need no NULL test.
 * Two modules write entries, and only for pages they own: the page heap
 * (free spans' boundary pages under its lock, and a kept span's other
 * pages, which go on mapping to it while it is free, when it stops being
 * kept; a span's pages while the span is between the page heap and its
 * user, which owns it alone; every page of an explicit heap being
 * destroyed) and the direct maps (a map's first
 * page).  The central caches and the front end only read.
 * An entry is the thread cache's byte offset, not the class, so that free's
 * fast path adds it to the lists as it is
 * (docs/ARCHITECTURE.md, "Where a lower layer knows a higher one").
 */
#ifndef ALLOY_PAGEMAP_H
#define ALLOY_PAGEMAP_H
#include <stdint.h>

#include "internal.h"
#include "span.h"

#define AY_PM_LEAF_BITS 18
#define AY_PM_ROOT_BITS 18
#define AY_PM_LEAF_PAGES ((uintptr_t)1 << AY_PM_LEAF_BITS)
#define AY_PM_ADDR_BITS (AY_PAGE_SHIFT + AY_PM_LEAF_BITS + AY_PM_ROOT_BITS) /* 48 */

typedef struct ay_pm_leaf {
    uint16_t list[AY_PM_LEAF_PAGES]; /* bin * AY_BIN_BYTES, or 0 */
    ay_span_t *span[AY_PM_LEAF_PAGES];
} ay_pm_leaf_t;

extern AY_HIDDEN uintptr_t ay_pagemap_root[(uintptr_t)1 << AY_PM_ROOT_BITS]; /* leaf - &zero */
extern AY_HIDDEN ay_pm_leaf_t ay_pagemap_zero;

/* The leaf covering address a; the empty leaf when there is none. */
AY_INLINE ay_pm_leaf_t *ay_pagemap_leaf(uintptr_t a) {
    uintptr_t i = a >> (AY_PAGE_SHIFT + AY_PM_LEAF_BITS);
    if (AY_UNLIKELY(i > ((uintptr_t)1 << AY_PM_ROOT_BITS) - 1)) /* a compare, not a shift */
        return &ay_pagemap_zero;                                /* beyond 48 bits: never ours */
    return (ay_pm_leaf_t *)((uintptr_t)&ay_pagemap_zero + AY_LOAD(&ay_pagemap_root[i]));
}

AY_INLINE uintptr_t ay_pagemap_index(uintptr_t a) {
    return (a >> AY_PAGE_SHIFT) & (AY_PM_LEAF_PAGES - 1);
}

/* The span that owns address a, or NULL. */
AY_INLINE ay_span_t *ay_pagemap_span(const void *p) {
    uintptr_t a = (uintptr_t)p;
    return AY_LOAD(&ay_pagemap_leaf(a)->span[ay_pagemap_index(a)]);
}

/* Make sure leaves exist for [start, start + npages pages).  0, or -1 when
 * out of memory or the range lies beyond 48 bits. */
int ay_pagemap_ensure(uintptr_t start, uintptr_t npages);
/* Set the entries of npages pages from start (leaves must exist). */
void ay_pagemap_set(uintptr_t start, uintptr_t npages, ay_span_t *s, uint32_t list);
/* Set one page's entry. */
void ay_pagemap_set1(uintptr_t page_addr, ay_span_t *s, uint32_t list);
/* Bytes mapped for leaves. */
uint64_t ay_pagemap_mapped(void);
void ay_pagemap_lock(void);
void ay_pagemap_unlock(void);
void ay_pagemap_reset_lock(void);

#endif
