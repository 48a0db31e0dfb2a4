/* SPDX-License-Identifier: MIT */
/* pagekeep.c - kept spans and the resident sample that decides them (see
 * pagekeep.h).  The sample's mincore runs without the lock. */
#include "pagekeep.h"
#include "error.h"

#include "os.h"

#define KEEP_RESIDENT_MAX 224 /* of 256: the sampled resident fraction up to which spans are kept */
#define KEPT_MIN_AGE_MS 10    /* a kept span younger than this is not merged for a fit */

bool ay_pagekeep_decide(ay_pageheap_t *ph, const ay_span_t *s, bool purged, int *resident) {
    /* one in 2^keep_shift of the medium spans (by count, so that blocks of
     * any length and alignment are sampled) is looked at with mincore */
    bool medium = s->state == AY_SPAN_LARGE && !purged && s->npages < AY_MAX_SPAN_PAGES;
    *resident = -1;
    if (medium && (__atomic_fetch_add(&ph->medium_frees, 1, __ATOMIC_RELAXED) &
                   ((1u << AY_LOAD(&ph->keep_shift)) - 1)) == 0)
        *resident = ay_os_resident_pages((void *)s->start, s->npages);
    return medium && AY_LOAD(&ph->resident_avg) <= KEEP_RESIDENT_MAX;
}

void ay_pagekeep_learn(ay_pageheap_t *ph, const ay_span_t *s, int resident) {
    if (resident < 0)
        return;
    /* resident_avg: 0..256, weight 1/8 to the new sample */
    int frac = (int)((uintptr_t)resident * 256 / s->npages);
    /* a sample on the side of the threshold the average is on doubles the
     * interval to the next one, so that a settled heap pays few mincore
     * calls (docs/HISTORY.md, "The last steps before this run, each against
     * the build before it", counts them); one on the other side brings it
     * back to the shortest */
    bool agrees = (frac <= KEEP_RESIDENT_MAX) == (ph->resident_avg <= KEEP_RESIDENT_MAX);
    AY_STORE(&ph->keep_shift,
             agrees ? ph->keep_shift + (ph->keep_shift < AY_KEEP_SHIFT_MAX) : AY_KEEP_SHIFT_MIN);
    AY_STORE(&ph->resident_avg, ph->resident_avg + (frac - ph->resident_avg) / 8);
}

/* Under the lock: every kept span is merged with its free neighbours, so
 * that a request no span fits, or a wholly free block, can be seen.  The
 * kept spans all leave the lists first (their boundary pages then map to
 * nothing, so none merges with another while it is off them), then each
 * goes back merged. */
void ay_pagekeep_merge_all(ay_pageheap_t *ph, uint64_t now) {
    ay_span_t *off = NULL;
    for (ay_span_t *s = ph->dirty.dnext, *next; s != &ph->dirty && ph->kept_pages; s = next) {
        next = s->dnext;
        if (s->kept) {
            ay_pagelist_remove(ph, s);
            s->next = off;
            off = s;
        }
    }
    while (off) {
        ay_span_t *s = off;
        off = s->next;
        ay_pagelist_coalesce(ph, s, now);
    }
}

/* Under the lock, when no dirty span fits npages: the kept spans that have
 * waited KEPT_MIN_AGE_MS or longer are merged with their free neighbours,
 * oldest first (the decay FIFO's order), until one of them makes a dirty
 * fit, which is returned; NULL when none does.  Younger ones stay whole: a
 * span freed a moment ago is the one most likely to serve its length again
 * (merging every kept span here gave the sparse row its faults back,
 * BENCHMARKS.md).  Each merge ends one kept span, which one free made. */
ay_span_t *ay_pagekeep_merge_oldest(ay_pageheap_t *ph, uintptr_t npages) {
    uint64_t now = ay_os_now_ms();
    while (ph->kept_pages) {
        ay_span_t *k = ph->dirty.dnext;
        while (k != &ph->dirty && !k->kept)
            k = k->dnext;
        if (k == &ph->dirty || now - k->freed_ms < KEPT_MIN_AGE_MS)
            return NULL;
        ay_pagelist_remove(ph, k);
        ay_pagelist_coalesce(ph, k, now); /* k is the merged span now */
        if (k->npages >= npages)
            return ay_pagelist_best_fit(ph, npages, true);
    }
    return NULL;
}

void ay_pagekeep_validate(const ay_pageheap_t *ph) {
    if (ph->keep_shift < AY_KEEP_SHIFT_MIN || ph->keep_shift > AY_KEEP_SHIFT_MAX ||
        ph->resident_avg < 0 || ph->resident_avg > 256)
        ay_fatal("pageheap: kept spans' sampling out of its bounds", ph);
}
