/* SPDX-License-Identifier: MIT */
/* pageblock.c - blocks from the OS, their huge pages, and giving wholly
 * free ones back (see pageblock.h).  Every system call here runs with the
 * lock dropped. */
#include "pageblock.h"

#include "conf.h"
#include "meta.h"
#include "os.h"
#include "pagemap.h"
#include "topology.h"

#define UNMAP_BATCH 16 /* wholly free blocks taken off the lists per round */

/* Under the lock: free span s, off the lists, is a whole block.  A fork
 * child taken before the unmap keeps the mapping, unknown to it: a harmless
 * leak in the child. */
void ay_pageblock_drop(ay_pageheap_t *ph, ay_span_t *s, uintptr_t *start, uintptr_t *npages) {
    ay_span_t *b = s->block;
    *start = b->start;
    *npages = b->npages;
    ay_list_remove(b);
    ph->mapped_pages -= b->npages;
    ph->blocks_unmapped++;
    ph->purges++;
    ay_pagelist_record_give(ph, s);
    ay_pagelist_record_give(ph, b);
}

/* Without the lock: unmap every block of at least min_pages pages that is
 * wholly free, dirty or clean.  Returns how many. */
static unsigned release_free_blocks(ay_pageheap_t *ph, uintptr_t min_pages) {
    unsigned total = 0;
    for (;;) {
        uintptr_t gone[UNMAP_BATCH][2];
        unsigned n = 0;
        ay_pagelist_lock(ph);
        /* whole blocks are >= 256 pages */
        for (ay_span_t *s = ph->first[AY_MAX_SPAN_PAGES], *next; s && n < UNMAP_BATCH; s = next) {
            next = s->next;
            if (ay_pagelist_whole_block(s) && s->npages >= min_pages) {
                ay_pagelist_remove(ph, s);
                ay_pageblock_drop(ph, s, &gone[n][0], &gone[n][1]);
                n++;
            }
        }
        ay_pagelist_unlock(ph);
        for (unsigned i = 0; i < n; i++)
            ay_os_unmap_chunk((void *)gone[i][0], AY_PAGES_BYTES(gone[i][1]));
        total += n;
        if (n < UNMAP_BATCH)
            return total;
    }
}

/* Without the lock: map a new block of at least npages pages (a multiple of
 * 256, or of 16 for a request between half a block and a block), and put it
 * on the free lists.  When the OS refuses, the wholly free blocks are given
 * back and the map is tried once more.  false when out of memory. */
bool ay_pageblock_grow(ay_pageheap_t *ph, uintptr_t npages) {
    uintptr_t pages = (npages + AY_BLOCK_PAGES - 1) / AY_BLOCK_PAGES * AY_BLOCK_PAGES;
    /* a request of more than half a block and at most a block gets a block
     * of about its size: in a block of 256 pages, what it leaves, less than
     * it, serves only smaller requests, and its address space goes unused
     * while they do not come (a block of 600,000 bytes took 1 MiB of it).
     * Above a block, the rest of the last 1 MiB serves the next request,
     * freed blocks serve larger ones, and huge pages cover whole 2 MiB. */
    if (npages > AY_BLOCK_PAGES / 2 && npages < AY_BLOCK_PAGES)
        pages = (npages + AY_OWN_BLOCK_STEP - 1) / AY_OWN_BLOCK_STEP * AY_OWN_BLOCK_STEP;
    /* a block for a request of 2 MiB or more is used whole: 2 MiB aligned,
     * with transparent huge pages, it faults in 2 MiB at a time */
    bool own = pages >= AY_HUGE_PAGES;
    /* the blocks for smaller requests get huge pages under thp:always only
     * (under auto, a heap with 64 MiB of small spans also grew in 2 MiB
     * huge blocks: in interleaved runs that made frag and malloc_test at
     * 100 threads slower, not faster, docs/HISTORY.md, "Huge pages for busy
     * heaps, removed") */
    bool huge = own ? ay_conf.thp != AY_THP_NEVER : ay_conf.thp == AY_THP_ALWAYS;
    if (huge && !own)
        pages = AY_HUGE_PAGES;
    size_t align = own || huge ? AY_PAGES_BYTES(AY_HUGE_PAGES) : AY_PAGE_SIZE;
    /* a request for a block of its own that no free span could serve: the
     * free blocks of their own (2 MiB or more) are too small for it, so they
     * go back first, rather than pile up while sizes vary */
    if (own)
        release_free_blocks(ph, AY_HUGE_PAGES);
    void *block = ay_os_map_chunk(AY_PAGES_BYTES(pages), align);
    if (!block && release_free_blocks(ph, 1))
        block = ay_os_map_chunk(AY_PAGES_BYTES(pages), align);
    if (!block)
        return false;
    if (huge || ay_conf.thp == AY_THP_NEVER)
        ay_os_hugepages(block, AY_PAGES_BYTES(pages), huge);
    ay_topology_place(block, AY_PAGES_BYTES(pages), ph->node); /* NUMA: before any touch */
    ay_span_t *s = ay_span_new(), *rec = ay_span_new();
    if (!s || !rec || ay_pagemap_ensure((uintptr_t)block, pages) != 0) {
        if (s)
            ay_span_delete(s);
        if (rec)
            ay_span_delete(rec);
        ay_os_unmap_chunk(block, AY_PAGES_BYTES(pages));
        return false;
    }
    rec->start = (uintptr_t)block; /* the block's record */
    rec->npages = pages;
    s->start = (uintptr_t)block;
    s->npages = pages;
    s->block = rec;
    s->dirty = 0; /* fresh pages are zero, and not resident until touched */
    uint64_t now = ay_os_now_ms();
    ay_pagelist_lock(ph);
    ay_list_push(&ph->blocks, rec);
    ph->mapped_pages += pages;
    ph->huge_blocks += huge;
    ay_pagelist_insert(ph, s, now);
    ay_pagelist_unlock(ph);
    return true;
}

/* Forget every span record in block b: walk it page by page.  Under the lock. */
static void forget_block_spans(const ay_span_t *b) {
    uintptr_t end = b->start + AY_PAGES_BYTES(b->npages);
    for (uintptr_t a = b->start; a < end;) {
        ay_span_t *s = ay_pagemap_span((void *)a);
        if (s && s->start == a && s->state != AY_SPAN_DEAD) {
            uintptr_t n = s->npages;
            ay_pagemap_set(a, n, NULL, 0);
            ay_span_delete(s);
            a += AY_PAGES_BYTES(n);
        } else {
            ay_pagemap_set1(a, NULL, 0);
            a += AY_PAGE_SIZE;
        }
    }
}

void ay_pageblock_forget_all(ay_pageheap_t *ph, ay_span_t *out) {
    for (ay_span_t *b = ph->blocks.next; b != &ph->blocks; b = b->next)
        forget_block_spans(b);
    while (!ay_list_empty(&ph->blocks)) {
        ay_span_t *b = ph->blocks.next;
        ay_list_remove(b);
        ay_list_push(out, b);
    }
}

void ay_pageblock_unmap_all(ay_span_t *blocks) {
    while (!ay_list_empty(blocks)) {
        ay_span_t *b = blocks->next;
        ay_list_remove(b);
        ay_os_unmap_chunk((void *)b->start, AY_PAGES_BYTES(b->npages));
        ay_span_delete(b);
    }
}
