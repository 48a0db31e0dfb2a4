/* SPDX-License-Identifier: MIT */
/* test_pageheap.c - the page heap, the direct maps and the pagemap, driven
 * directly on a private heap: best fit, split, coalesce, alignment, decay,
 * whether a span's pages are known to be zero, kept spans, direct maps.
 * With an argument, ay_pageheap_validate on a heap with one counter made
 * wrong, which must abort: `blocks` (mapped_pages against the blocks),
 * `purging` (purging_pages against the purging list), `keep` (keep_shift
 * out of its bounds). */
#include <string.h>

#include "check.h"
#include "conf.h"
#include "heap.h"
#include "os.h"
#include "pageblock.h"
#include "pagekeep.h"
#include "pagemap.h"

static ay_heap_t h;

#define PG(n) ((uintptr_t)(n) << AY_PAGE_SHIFT)

/* Free s with every page written first: the heap's sampled resident
 * fraction of freed LARGE spans (pagekeep.c, mincore on one freed medium
 * span in 8 to 256) then stays high whichever spans the sample hits, so the heap
 * merges them, as the sections below expect. */
static void free_written(ay_pageheap_t *ph, ay_span_t *s) {
    memset((void *)s->start, 0x5c, PG(s->npages));
    ay_pageheap_free(ph, s);
}

/* A 16-page LARGE span taken and freed, its first page written, or all of
 * them; false when none could be taken. */
static bool cycle_16(ay_pageheap_t *ph, bool all_written) {
    ay_span_t *k = ay_pageheap_alloc(ph, 16, 1, AY_SPAN_LARGE, 0);
    CHECK(k != NULL);
    if (!k)
        return false;
    if (all_written) {
        free_written(ph, k);
    } else {
        ((char *)k->start)[0] = 1; /* one page of 16 resident */
        ay_pageheap_free(ph, k);
    }
    return true;
}

/* A heap with one span taken, validated, then one counter made wrong and
 * validated again: aborts (main's argument, the file's comment). */
static int corrupt(const char *what) {
    ay_pageheap_t *ph = &h.pages;
    ay_span_t *s = ay_pageheap_alloc(ph, 4, 1, AY_SPAN_LARGE, 0);
    CHECK(s != NULL);
    ay_pageheap_validate(ph);
    if (strcmp(what, "blocks") == 0) {
        ph->blocks.next->npages += 256; /* a block's record disagrees with mapped_pages */
    } else if (strcmp(what, "purging") == 0) {
        ph->purging_pages += 4;
        ph->mapped_pages += 4; /* (the page counters still add up) */
    } else if (strcmp(what, "keep") == 0) {
        ph->keep_shift = AY_KEEP_SHIFT_MAX + 1;
    } else {
        return 2;
    }
    ay_pageheap_validate(ph);
    return 0; /* not reached when the check works */
}

int main(int argc, char **argv) {
    ay_conf.decay_ms = -1; /* no purging unless asked */
    h.cached = true;       /* a private heap, used through its page heap only */
    ay_pageheap_init(&h.pages, &h.usage);
    ay_direct_init(&h.direct, &h.usage);
    ay_pageheap_t *ph = &h.pages;
    if (argc > 1)
        return corrupt(argv[1]);
    /* a heap whose freed LARGE spans are resident merges them (the kept
     * spans of a sparse one are checked below) */
    ph->resident_avg = 256;

    /* pagemap: unknown addresses have no span; a set range maps back */
    CHECK(ay_pagemap_span((void *)0x1000) == NULL);
    CHECK(ay_pagemap_span((void *)(~(uintptr_t)0 - 5)) == NULL);
    /* a range across a leaf's end (1 GiB) is set on both leaves, and only it */
    {
        static ay_span_t fake;
        uintptr_t edge = (uintptr_t)0x6f0000000000, from = edge - PG(3);
        CHECK(ay_pagemap_ensure(from - PG(1), 8) == 0);
        ay_pagemap_set(from, 6, &fake, 7 * AY_BIN_BYTES);
        for (unsigned k = 0; k < 6; k++)
            CHECK(ay_pagemap_span((void *)(from + PG(k) + 9)) == &fake &&
                  ay_pagemap_leaf(from + PG(k))->list[ay_pagemap_index(from + PG(k))] ==
                      7 * AY_BIN_BYTES);
        CHECK(ay_pagemap_span((void *)(from - PG(1))) == NULL);
        CHECK(ay_pagemap_span((void *)(from + PG(6))) == NULL);
        ay_pagemap_set(from, 6, NULL, 0);
        CHECK(ay_pagemap_span((void *)edge) == NULL);
    }

    ay_span_t *a = ay_pageheap_alloc(ph, 3, 1, AY_SPAN_LARGE, 0);
    CHECK(a != NULL);
    if (!a)
        return CHECK_DONE();
    CHECK_EQ_U(a->npages, 3);
    CHECK_EQ_U(a->dirty, 0); /* fresh pages read as zero: calloc need not clear them */
    CHECK(a->owner.pages == ph && a->state == AY_SPAN_LARGE);
    CHECK_EQ_U(h.usage.active, PG(3));
    CHECK_EQ_U(ph->mapped_pages, AY_BLOCK_PAGES);
    CHECK_EQ_U(ph->active_pages, 3);
    CHECK_EQ_U(ph->free_clean_pages, AY_BLOCK_PAGES - 3);
    for (unsigned k = 0; k < 3; k++)
        CHECK(ay_pagemap_span((void *)(a->start + PG(k) + 17)) == a);
    memset((void *)a->start, 0xab, PG(3));

    /* the tail was split off: the next span follows directly */
    ay_span_t *b = ay_pageheap_alloc(ph, 5, 1, AY_SPAN_LARGE, 0);
    ay_span_t *c = ay_pageheap_alloc(ph, 2, 1, AY_SPAN_LARGE, 0);
    CHECK(b && c && b->start == a->start + PG(3) && c->start == b->start + PG(5));
    ay_pageheap_validate(ph);

    /* free the middle: a 5-page hole; best fit puts a 4-page span in it */
    uintptr_t b_start = b->start;
    free_written(ph, b);
    CHECK(ay_pagemap_span((void *)(b_start + PG(2))) == NULL); /* interior of a free span */
    ay_span_t *d = ay_pageheap_alloc(ph, 4, 1, AY_SPAN_LARGE, 0);
    CHECK(d && d->start == b_start);
    ay_pageheap_validate(ph);

    /* coalescing: free a, d, c; everything merges back into one free span */
    uintptr_t a_start = a->start;
    free_written(ph, a);
    free_written(ph, c);
    free_written(ph, d);
    ay_pageheap_validate(ph);
    ay_span_t *whole = ay_pagemap_span((void *)a_start);
    CHECK(whole && whole->state == AY_SPAN_FREE && whole->npages == AY_BLOCK_PAGES);
    CHECK_EQ_U(ph->active_pages, 0);
    /* a merged span is dirty when any part was: 3 + 4 + 2 pages were used, so
     * the whole block now counts as possibly resident (an upper bound) */
    CHECK_EQ_U(ph->free_dirty_pages, AY_BLOCK_PAGES);
    CHECK_EQ_U(ph->free_clean_pages, 0);

    /* a whole block can be taken; then a second block is mapped */
    ay_span_t *big = ay_pageheap_alloc(ph, AY_MAX_SPAN_PAGES, 1, AY_SPAN_LARGE, 0);
    ay_span_t *more = ay_pageheap_alloc(ph, 1, 1, AY_SPAN_LARGE, 0);
    CHECK(big && more);
    CHECK(big && big->dirty); /* reused pages may hold old data */
    CHECK(more && !more->dirty);
    CHECK_EQ_U(h.usage.peak, PG(AY_MAX_SPAN_PAGES + 1));
    CHECK_EQ_U(ph->mapped_pages, 2 * AY_BLOCK_PAGES);
    free_written(ph, big);
    free_written(ph, more);
    ay_pageheap_validate(ph);

    /* alignment: 64 KiB aligned spans */
    ay_span_t *al[4];
    for (int i = 0; i < 4; i++) {
        al[i] = ay_pageheap_alloc(ph, 3, 16, AY_SPAN_LARGE, 0);
        CHECK(al[i] && (al[i]->start & (PG(16) - 1)) == 0 && al[i]->npages == 3);
    }
    for (int i = 0; i < 4; i++)
        if (al[i])
            free_written(ph, al[i]);
    ay_pageheap_validate(ph);

    /* purge: every dirty free page becomes clean.  A block that is wholly
     * free is unmapped; in a block still in use, the free pages are purged
     * with madvise. */
    ay_span_t *pin = ay_pageheap_alloc(ph, 2, 1, AY_SPAN_LARGE, 0); /* keeps one block in use */
    CHECK(pin != NULL);
    memset((void *)pin->start, 3, PG(2));
    size_t blocks_before = ph->mapped_pages / AY_BLOCK_PAGES;
    CHECK(ph->free_dirty_pages > 0 && blocks_before == 2);
    uint64_t purges = ph->purges, unmapped = ph->blocks_unmapped;
    ay_pageheap_purge(ph, true);
    CHECK_EQ_U(ph->free_dirty_pages, 0);
    CHECK_EQ_U(ph->purging_pages, 0);
    CHECK_EQ_U(ph->blocks_unmapped, unmapped + 1); /* the other block: gone */
    CHECK_EQ_U(ph->mapped_pages, AY_BLOCK_PAGES);  /* and its address space */
    CHECK(ph->purges > purges);                    /* pin's block: madvise */
    CHECK_EQ_U(ph->free_clean_pages, AY_BLOCK_PAGES - 2);
    ay_pageheap_validate(ph);
    ay_span_t *purged = ay_pageheap_alloc(ph, 5, 1, AY_SPAN_LARGE, 0);
    CHECK(purged && !purged->dirty); /* purged pages read as zero again */
    if (purged)
        free_written(ph, purged);
    if (pin)
        free_written(ph, pin);

    /* kept spans (issue 33): in a heap whose freed LARGE spans are sparse,
     * a freed span below AY_MAX_SPAN_PAGES stays whole beside free pages,
     * unmerged, and the next request of its length gets it back; a purge
     * merges it */
    ph->resident_avg = 0;
    ay_span_t *k1 = ay_pageheap_alloc(ph, 10, 1, AY_SPAN_LARGE, 0);
    ay_span_t *k2 = ay_pageheap_alloc(ph, 10, 1, AY_SPAN_LARGE, 0);
    ay_span_t *k3 = ay_pageheap_alloc(ph, 10, 1, AY_SPAN_LARGE, 0);
    CHECK(k1 && k2 && k3 && k2->start == k1->start + PG(10));
    if (!k1 || !k2 || !k3)
        return CHECK_DONE();
    uintptr_t k1_start = k1->start, k2_start = k2->start;
    size_t kept0 = ph->kept_pages; /* (spans kept before: freed while the average was low) */
    ay_pageheap_free(ph, k1);
    ay_pageheap_free(ph, k2);
    ay_pageheap_validate(ph); /* adjacent free spans, allowed when kept */
    CHECK(ay_pagemap_span((void *)k1_start) == k1 && k1->kept && k1->npages == 10);
    CHECK(ay_pagemap_span((void *)k2_start) == k2 && k2->kept && k2->npages == 10);
    CHECK_EQ_U(ph->kept_pages, kept0 + 20);
    /* a kept span's pages still map to it (no write per page on its free
     * and its reuse whole); every other free span's inner pages to nothing */
    CHECK(ay_pagemap_span((void *)(k1_start + PG(5))) == k1);
    CHECK(ay_pagemap_span((void *)(k2_start + PG(8))) == k2);
    ay_span_t *k4 = ay_pageheap_alloc(ph, 10, 1, AY_SPAN_LARGE, 0);
    CHECK(k4 && k4->start == k2_start && !k4->kept); /* the last freed, whole */
    for (unsigned i = 0; k4 && i < 10; i++)
        CHECK(ay_pagemap_span((void *)(k2_start + PG(i))) == k4);
    ay_span_t *k5 = ay_pageheap_alloc(ph, 9, 1, AY_SPAN_LARGE, 0);
    CHECK(k5 && k5->start == k1_start); /* a shorter request splits a kept span */
    for (unsigned i = 0; k5 && i < 9; i++)
        CHECK(ay_pagemap_span((void *)(k1_start + PG(i))) == k5);
    const ay_span_t *piece = ay_pagemap_span((void *)(k1_start + PG(9))); /* its last page */
    CHECK(piece && piece->state == AY_SPAN_FREE && piece->start <= k1_start + PG(9));
    CHECK_EQ_U(ph->kept_pages, kept0);
    ay_pageheap_validate(ph);
    ay_span_t *k6 = ay_pageheap_alloc(ph, 17, 1, AY_SPAN_LARGE, 0);
    CHECK(k6 && k6->npages == 18); /* eight lengths per doubling: 16, 18, 20, ... */
    if (k4)
        ay_pageheap_free(ph, k4);
    if (k5)
        ay_pageheap_free(ph, k5);
    if (k6)
        ay_pageheap_free(ph, k6);
    uintptr_t k3_start = k3->start;
    ay_pageheap_free(ph, k3);
    CHECK(ph->kept_pages > 0);
    CHECK(ay_pagemap_span((void *)(k3_start + PG(5))) == k3);
    ay_pageheap_purge(ph, true); /* purged spans are clean, and merge */
    CHECK_EQ_U(ph->kept_pages, 0);
    CHECK(ay_pagemap_span((void *)(k3_start + PG(5))) == NULL); /* merged: no stale entry */
    CHECK_EQ_U(ph->free_dirty_pages, 0);
    ay_pageheap_validate(ph);

    /* the sample sees spans of any alignment: sixteen freed 16-page spans
     * whose first pages are not multiples of 8 (every 17 pages, a 1-page
     * span between) move the average (a sample by the first page's number
     * never saw them, and the average stayed 0) */
    ph->resident_avg = 0;
    ph->keep_shift = AY_KEEP_SHIFT_MIN; /* one in 8 sampled */
    ay_span_t *pad[64], *wide[32];
    unsigned nwide = 0, npad = 0;
    for (unsigned i = 0; i < 32 && nwide < 16; i++) {
        pad[npad] = ay_pageheap_alloc(ph, 1, 1, AY_SPAN_LARGE, 0);
        CHECK(pad[npad] != NULL);
        npad += pad[npad] != NULL;
        ay_span_t *w = ay_pageheap_alloc(ph, 16, 1, AY_SPAN_LARGE, 0);
        CHECK(w != NULL);
        if (w && ((w->start >> AY_PAGE_SHIFT) & 7) != 0)
            wide[nwide++] = w;
        else if (w)
            pad[npad++] = w; /* freed with the pads */
    }
    CHECK_EQ_U(nwide, 16);
    for (unsigned i = 0; i < nwide; i++)
        free_written(ph, wide[i]);
    CHECK(ph->resident_avg > 0);
    for (unsigned i = 0; i < npad; i++)
        ay_pageheap_free(ph, pad[i]);
    ay_pageheap_purge(ph, true);
    ay_pageheap_validate(ph);

    /* the sample backs off while it agrees with the average: a heap whose
     * freed medium spans stay unwritten (kept) comes to sample one in 256;
     * a written one then brings it back to one in 8 within 256 frees (and
     * the average moves) */
    ph->resident_avg = 0;
    ph->keep_shift = AY_KEEP_SHIFT_MIN;
    for (unsigned i = 0; i < 1000 && ph->keep_shift < AY_KEEP_SHIFT_MAX; i++)
        if (!cycle_16(ph, false))
            break;
    CHECK_EQ_U(ph->keep_shift, AY_KEEP_SHIFT_MAX);
    CHECK(ph->resident_avg <= 32);
    for (unsigned i = 0; i <= (1u << AY_KEEP_SHIFT_MAX) && ph->keep_shift != AY_KEEP_SHIFT_MIN; i++)
        if (!cycle_16(ph, true))
            break;
    CHECK_EQ_U(ph->keep_shift, AY_KEEP_SHIFT_MIN);
    CHECK(ph->resident_avg > 0);
    ay_pageheap_purge(ph, true);
    ay_pageheap_validate(ph);
    ph->resident_avg = 256;

    /* decay_ms 0 purges at once on free */
    ay_conf.decay_ms = 0;
    ay_span_t *e = ay_pageheap_alloc(ph, 7, 1, AY_SPAN_LARGE, 0);
    CHECK(e != NULL);
    memset((void *)e->start, 1, PG(7));
    ay_pageheap_free(ph, e);
    CHECK_EQ_U(ph->free_dirty_pages, 0);
    ay_conf.decay_ms = -1;

    /* out of memory: take every free page, then the next block cannot be
     * mapped; the page heap says so, stays consistent, and recovers */
    ay_span_t *held[8];
    unsigned nheld = 0;
    size_t mapped = ph->mapped_pages;
    while (nheld < 8 && ph->mapped_pages == mapped) /* until a new block was needed */
        held[nheld++] = ay_pageheap_alloc(ph, AY_MAX_SPAN_PAGES, 1, AY_SPAN_LARGE, 0);
    ay_os_fail_next_maps(1);
    ay_span_t *oom = ay_pageheap_alloc(ph, AY_MAX_SPAN_PAGES, 1, AY_SPAN_LARGE, 0);
    CHECK(oom == NULL);
    ay_pageheap_validate(ph);
    ay_span_t *ok = ay_pageheap_alloc(ph, AY_MAX_SPAN_PAGES, 1, AY_SPAN_LARGE, 0);
    CHECK(ok != NULL); /* the hook failed only one map */
    if (ok)
        ay_pageheap_free(ph, ok);
    for (unsigned i = 0; i < nheld; i++)
        if (held[i])
            ay_pageheap_free(ph, held[i]);
    ay_pageheap_validate(ph);

    /* a request above 256 pages gets a block of its own, rounded up to a
     * multiple of 256 pages; once freed, it serves a smaller large request
     * (split, best fit) before any new block is mapped */
    ay_span_t *big3 = ay_pageheap_alloc(ph, 600, 1, AY_SPAN_LARGE, 0);
    CHECK(big3 && big3->npages == 600 && big3->block->npages == 768);
    CHECK(big3 && (big3->block->start & (PG(AY_HUGE_PAGES) - 1)) == 0); /* huge-page aligned */
    size_t mapped_big = ph->mapped_pages;
    if (big3) {
        memset((void *)big3->start, 9, PG(600));
        uintptr_t at = big3->start;
        ay_pageheap_free(ph, big3);
        ay_span_t *reuse = ay_pageheap_alloc(ph, 400, 1, AY_SPAN_LARGE, 0);
        CHECK(reuse && reuse->start == at && reuse->dirty); /* old pages, not zero */
        CHECK_EQ_U(ph->mapped_pages, mapped_big);
        if (reuse)
            ay_pageheap_free(ph, reuse);
    }
    ay_pageheap_validate(ph);

    /* out of memory with wholly free blocks: they are unmapped and the map
     * is tried again, so the request succeeds */
    ay_conf.decay_ms = -1;
    CHECK(ph->free_dirty_pages >= 768); /* the 768-page block is free and dirty */
    uint64_t unmapped2 = ph->blocks_unmapped;
    ay_os_fail_next_maps(1);
    ay_span_t *retry = ay_pageheap_alloc(ph, 2000, 1, AY_SPAN_LARGE, 0);
    CHECK(retry != NULL);
    CHECK(ph->blocks_unmapped > unmapped2);
    if (retry)
        ay_pageheap_free(ph, retry);
    ay_pageheap_validate(ph);

    /* direct maps: registered at their first page, resizable, unmapped on free */
    size_t active = h.usage.active;
    ay_span_t *dm = ay_direct_alloc(&h.direct, PG(300), PG(1));
    CHECK(dm && dm->state == AY_SPAN_DIRECT && ay_pagemap_span((void *)dm->start) == dm);
    CHECK_EQ_U(ay_direct_bytes(&h.direct), PG(300));
    CHECK_EQ_U(h.usage.active, active + PG(300)); /* both modules count in one total */
    if (dm) {
        memset((void *)dm->start, 7, PG(300));
        CHECK(ay_direct_resize(dm, PG(600)) == 0);
        CHECK(((char *)dm->start)[PG(300) - 1] == 7);
        CHECK_EQ_U(ay_direct_bytes(&h.direct), PG(600));
        uintptr_t s = dm->start;
        ay_direct_free(dm);
        CHECK(ay_pagemap_span((void *)s) == NULL);
        CHECK_EQ_U(ay_direct_bytes(&h.direct), 0);
        CHECK_EQ_U(h.usage.active, active);
    }
    return CHECK_DONE();
}
