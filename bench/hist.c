/* SPDX-License-Identifier: MIT */
/* hist.c - the log-linear histogram's merge and quantile queries (see hist.h). */
#include "hist.h"

#include <math.h>
#include <string.h>

void hist_reset(hist_t *h) { memset(h, 0, sizeof *h); }

void hist_merge(hist_t *dst, const hist_t *src) {
    for (unsigned i = 0; i < HIST_BUCKETS; i++)
        dst->counts[i] += src->counts[i];
    dst->total += src->total;
    if (src->max > dst->max)
        dst->max = src->max;
}

uint64_t hist_bucket_low(unsigned i) {
    if (i < HIST_SUB)
        return i;
    unsigned shift = i / HIST_SUB - 1;
    uint64_t sub = i % HIST_SUB;
    return (HIST_SUB + sub) << shift;
}

uint64_t hist_bucket_high(unsigned i) {
    if (i < HIST_SUB)
        return (uint64_t)i + 1;
    unsigned shift = i / HIST_SUB - 1;
    return hist_bucket_low(i) + ((uint64_t)1 << shift);
}

uint64_t hist_quantile(const hist_t *h, double q) {
    if (h->total == 0)
        return 0;
    if (q < 0)
        q = 0;
    if (q > 1)
        q = 1;
    uint64_t rank = (uint64_t)ceil(q * (double)h->total);
    if (rank == 0)
        rank = 1;
    uint64_t seen = 0;
    for (unsigned i = 0; i < HIST_BUCKETS; i++) {
        seen += h->counts[i];
        if (seen >= rank) {
            uint64_t lo = hist_bucket_low(i), hi = hist_bucket_high(i);
            uint64_t mid = lo + (hi - lo - 1) / 2;
            return mid > h->max ? h->max : mid;
        }
    }
    return h->max;
}
