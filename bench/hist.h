/* SPDX-License-Identifier: MIT */
/* hist.h - a log-linear latency histogram (HDR-style) for the workloads.
 *
 * Values are unsigned 64-bit counts (timer ticks or nanoseconds).  Each power
 * of two is split into HIST_SUB linear sub-buckets, so a recorded value is
 * known to within 1/HIST_SUB (about 3%) of itself; values below HIST_SUB are
 * exact.  Recording is one shift, one clz and an increment: cheap enough to
 * run around every timed operation.  Invariant: total == sum of counts[].
 */
#ifndef ALLOY_BENCH_HIST_H
#define ALLOY_BENCH_HIST_H
#include <stdint.h>

#define HIST_SUB_BITS 5
#define HIST_SUB (1u << HIST_SUB_BITS) /* sub-buckets per octave */
#define HIST_BUCKETS ((64 - HIST_SUB_BITS + 1) * HIST_SUB)

typedef struct hist {
    uint64_t total;                /* number of values recorded */
    uint64_t max;                  /* largest value recorded */
    uint64_t counts[HIST_BUCKETS]; /* per bucket */
} hist_t;

/* Index of the bucket that holds v. */
static inline unsigned hist_index(uint64_t v) {
    if (v < HIST_SUB)
        return (unsigned)v;
    unsigned msb = 63u - (unsigned)__builtin_clzll(v); /* >= HIST_SUB_BITS */
    unsigned shift = msb - HIST_SUB_BITS;
    return (shift + 1) * HIST_SUB + (unsigned)((v >> shift) & (HIST_SUB - 1));
}

static inline void hist_record(hist_t *h, uint64_t v) {
    h->counts[hist_index(v)]++;
    h->total++;
    if (v > h->max)
        h->max = v;
}

void hist_reset(hist_t *h);
/* Add every count of src into dst. */
void hist_merge(hist_t *dst, const hist_t *src);
/* Smallest value of bucket i, and one past its largest. */
uint64_t hist_bucket_low(unsigned i);
uint64_t hist_bucket_high(unsigned i);
/* The q-quantile (0 <= q <= 1) by the nearest-rank rule: the bucket holding the
 * ceil(q * total)-th smallest value, reported as that bucket's midpoint (capped
 * at max).  Returns 0 for an empty histogram. */
uint64_t hist_quantile(const hist_t *h, double q);

#endif
