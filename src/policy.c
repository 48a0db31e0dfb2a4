/* SPDX-License-Identifier: MIT */
/* policy.c - pure size-class and batch-growth policy (see policy.h).
 *
 * Invariants: every function depends only on its arguments and on the
 * constant tables below (no state, no OS call, no lock), so the thread
 * cache and the simulator get the same answers; a size maps to the
 * smallest class that holds it, and class_size(size_class(s)) >= s for
 * every s up to AY_MAX_SMALL_SIZE; L(S) >= 1; under guard, pow2 and lean
 * the terminal batch fits the span fetched for it (test `policy`). */
#include "policy.h"

#include <string.h>

/* The five bands of size classes.  A band runs from the previous band's end
 * (exclusive; 0 for the first) to `end` (inclusive) in steps of `step`. */
typedef struct band {
    size_t end;     /* largest size in the band */
    size_t step;    /* distance between classes */
    unsigned first; /* index of the band's first class */
} band_t;

static const band_t bands[] = {
    {AY_BAND0_END, (size_t)1 << AY_BAND0_SHIFT, 0},
    {AY_BAND1_END, (size_t)1 << AY_BAND1_SHIFT, AY_BAND1_FIRST},
    {AY_BAND2_END, (size_t)1 << AY_BAND2_SHIFT, AY_BAND2_FIRST},
    {AY_BAND3_END, (size_t)1 << AY_BAND3_SHIFT, AY_BAND3_FIRST},
    {AY_BAND4_END, (size_t)1 << AY_BAND4_SHIFT, AY_BAND4_FIRST},
};
#define NBANDS (sizeof bands / sizeof bands[0])

ay_batch_params_t ay_policy_default_params(void) {
    ay_batch_params_t bp = {AY_BATCH_GUARD, AY_DEFAULT_BYTE_BUDGET, AY_DEFAULT_OBJECT_CAP};
    return bp;
}

size_t ay_policy_class_size(unsigned cls) {
    size_t start = 0;
    for (unsigned b = 0; b < NBANDS; b++) {
        unsigned count = (unsigned)((bands[b].end - start) / bands[b].step);
        if (cls < bands[b].first + count)
            return start + (size_t)(cls - bands[b].first + 1) * bands[b].step;
        start = bands[b].end;
    }
    return 0;
}

unsigned ay_policy_size_class(size_t size) {
    size_t start = 0;
    if (size == 0)
        return 0;
    for (unsigned b = 0; b < NBANDS; b++) {
        if (size <= bands[b].end)
            return bands[b].first + (unsigned)((size - start + bands[b].step - 1) / bands[b].step) -
                   1;
        start = bands[b].end;
    }
    return AY_NUM_CLASSES;
}

static uint64_t gcd64(uint64_t a, uint64_t b) {
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static uint64_t lcm_pages(uint64_t bytes) {
    return bytes / gcd64(bytes, AY_PAGE_SIZE); /* lcm(bytes, 4096) / 4096 */
}

uint32_t ay_policy_batch_limit(const ay_batch_params_t *bp, size_t S) {
    uint32_t budget = bp->byte_budget, cap = bp->object_cap;
    if (bp->policy == AY_BATCH_LEAN) {
        budget = budget < AY_LEAN_BYTE_BUDGET ? budget : AY_LEAN_BYTE_BUDGET;
        cap = cap < AY_LEAN_OBJECT_CAP ? cap : AY_LEAN_OBJECT_CAP;
    }
    if (bp->policy == AY_BATCH_COMPACT && S > AY_COMPACT_SMALL_MAX)
        budget /= AY_COMPACT_LARGE_SHARE;
    size_t l = budget / S;
    if (l > cap)
        l = cap;
    return l ? (uint32_t)l : 1;
}

uint32_t ay_policy_span_pages(size_t S, uint32_t n) {
    uint64_t p = lcm_pages((uint64_t)S * n);
    if (p > AY_MAX_SPAN_PAGES)
        p = lcm_pages(S);
    return (uint32_t)p;
}

/* compact's span: the fewest pages that hold n objects of size S with at
 * most an eighth of them left over (at most AY_MAX_SPAN_PAGES, or what S
 * needs alone). */
static uint32_t compact_pages(size_t S, uint32_t n) {
    uint64_t p = ((uint64_t)S * n + AY_PAGE_SIZE - 1) >> AY_PAGE_SHIFT;
    uint64_t least = (S + AY_PAGE_SIZE - 1) >> AY_PAGE_SHIFT;
    if (p > AY_MAX_SPAN_PAGES)
        p = least > AY_MAX_SPAN_PAGES ? least : AY_MAX_SPAN_PAGES;
    while (p < AY_MAX_SPAN_PAGES && (AY_PAGES_BYTES(p) % S) * 8 > AY_PAGES_BYTES(p))
        p++;
    return (uint32_t)p;
}

uint32_t ay_policy_span_pages_for(const ay_batch_params_t *bp, size_t S, uint32_t n) {
    return bp->policy == AY_BATCH_COMPACT ? compact_pages(S, n) : ay_policy_span_pages(S, n);
}

uint32_t ay_policy_span_objects(size_t S, uint32_t pages) {
    return (uint32_t)(((uint64_t)pages << AY_PAGE_SHIFT) / S);
}

uint32_t ay_policy_next_batch(const ay_batch_params_t *bp, size_t S, uint32_t n) {
    uint32_t limit = ay_policy_batch_limit(bp, S);
    uint32_t c = 2 * n < limit ? 2 * n : limit;
    int clipped = c < 2 * n;
    switch (bp->policy) {
    case AY_BATCH_GUARD:
    case AY_BATCH_LEAN:
    case AY_BATCH_COMPACT:
        if (clipped && ay_policy_span_objects(S, ay_policy_span_pages_for(bp, S, c)) < c)
            return n;
        return c;
    case AY_BATCH_POW2: return clipped ? n : c;
    case AY_BATCH_CLIP:
    default: return c;
    }
}

uint32_t ay_policy_terminal_batch(const ay_batch_params_t *bp, size_t S) {
    uint32_t n = 1, next;
    while ((next = ay_policy_next_batch(bp, S, n)) != n)
        n = next;
    return n;
}

uint32_t ay_policy_return_threshold(uint32_t n, uint32_t k_halves) {
    uint32_t t = (uint32_t)(((uint64_t)n * k_halves) / 2);
    return t > n ? t : n + 1;
}

ay_tc_step_t ay_policy_on_miss(const ay_batch_params_t *bp, size_t S, uint32_t n) {
    ay_tc_step_t t = {n, ay_policy_next_batch(bp, S, n)};
    return t;
}

ay_tc_step_t ay_policy_on_overflow(const ay_batch_params_t *bp, size_t S, uint32_t n,
                                   uint32_t len) {
    ay_tc_step_t t = {n < len ? n : len, n};
    if ((uint64_t)n * S < AY_OVERFLOW_GROWTH_BYTES)
        t.batch = ay_policy_next_batch(bp, S, n);
    return t;
}

ay_tc_step_t ay_policy_on_scavenge(uint32_t n, uint32_t len) {
    ay_tc_step_t t = {(len + 1) / 2, n > 1 ? n / 2 : n};
    return t;
}

uint32_t ay_policy_list_limit(uint32_t n, uint32_t k_halves) {
    return ay_policy_return_threshold(n, k_halves) - 1;
}

int ay_policy_scavenge_due(ay_tc_clock_t *c, uint64_t bytes_in, uint64_t limit) {
    c->bytes_in += bytes_in;
    if (++c->events < AY_SCAVENGE_PERIOD && c->bytes_in < limit / 4)
        return 0;
    c->events = 0;
    c->bytes_in = 0;
    return 1;
}

static const char *const policy_names[AY_NUM_POLICIES] = {"clip", "guard", "pow2", "lean",
                                                          "compact"};

int ay_policy_parse(const char *s, size_t len, ay_batch_policy_t *out) {
    for (unsigned i = 0; i < AY_NUM_POLICIES; i++) {
        if (strlen(policy_names[i]) == len && memcmp(s, policy_names[i], len) == 0) {
            *out = (ay_batch_policy_t)i;
            return 0;
        }
    }
    return -1;
}

const char *ay_policy_name(ay_batch_policy_t p) {
    return (unsigned)p < AY_NUM_POLICIES ? policy_names[p] : "?";
}
