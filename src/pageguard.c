/* SPDX-License-Identifier: MIT */
/* pageguard.c - the secure flavour's guarded cache (see pageguard.h): an
 * array of GUARDED spans, oldest first, under the page-heap lock. */
#include "pageguard.h"

#include <string.h>

#include "conf.h"
#include "error.h"

/* guarded[i] leaves the cache, LARGE and active again. */
static ay_span_t *guarded_remove(ay_pageheap_t *ph, unsigned i) {
    ay_span_t *s = ph->guarded[i];
    memmove(&ph->guarded[i], &ph->guarded[i + 1], (ph->nguarded - i - 1) * sizeof s);
    AY_STORE(&ph->nguarded, ph->nguarded - 1);
    ph->guarded_pages -= s->npages;
    ph->active_pages += s->npages;
    s->state = AY_SPAN_LARGE;
    return s;
}

bool ay_pageguard_due(const ay_pageheap_t *ph, uint64_t now, bool all) {
    if (ph->nguarded == 0)
        return false;
    int64_t decay = ay_conf.decay_ms;
    return all || (decay >= 0 && now - ph->guarded[0]->freed_ms >= (uint64_t)decay);
}

unsigned ay_pageguard_expire(ay_pageheap_t *ph, uint64_t now, bool all, ay_span_t **out) {
    unsigned n = 0;
    while (ay_pageguard_due(ph, now, all))
        out[n++] = guarded_remove(ph, 0);
    return n;
}

ay_span_t *ay_pageguard_take(ay_pageheap_t *ph, uintptr_t min_pages, uintptr_t max_pages) {
    unsigned best = ph->nguarded;
    uintptr_t best_pages = 0;
    for (unsigned i = 0; i < ph->nguarded; i++) {
        const ay_span_t *g = ph->guarded[i];
        uintptr_t pages = (g->user_end - g->open) >> AY_PAGE_SHIFT;
        if (pages >= min_pages && pages <= max_pages &&
            (best == ph->nguarded || pages < best_pages))
            best = i, best_pages = pages;
    }
    return best < ph->nguarded ? guarded_remove(ph, best) : NULL;
}

unsigned ay_pageguard_push(ay_pageheap_t *ph, ay_span_t *s, uint64_t now, ay_span_t **out) {
    unsigned n = 0;
    s->state = AY_SPAN_GUARDED;
    s->dirty = 1; /* its pages were the block's */
    s->freed_ms = now;
    ph->active_pages -= s->npages;
    while (ph->nguarded > 0 && (ph->nguarded == AY_GUARDED_SPANS ||
                                ph->guarded_pages + s->npages > AY_GUARDED_MAX_PAGES))
        out[n++] = guarded_remove(ph, 0);
    ph->guarded[ph->nguarded] = s;
    AY_STORE(&ph->nguarded, ph->nguarded + 1);
    ph->guarded_pages += s->npages;
    return n;
}

void ay_pageguard_forget(ay_pageheap_t *ph) {
    ph->nguarded = 0;
    ph->guarded_pages = 0;
}

size_t ay_pageguard_validate(const ay_pageheap_t *ph) {
    size_t guarded = 0;
    for (unsigned i = 0; i < ph->nguarded; i++) {
        const ay_span_t *g = ph->guarded[i];
        if (g->state != AY_SPAN_GUARDED || g->owner.pages != ph ||
            (i > 0 && g->freed_ms < ph->guarded[i - 1]->freed_ms))
            ay_fatal("pageheap: bad span in the guarded cache", (void *)g->start);
        guarded += g->npages;
    }
    return guarded;
}
