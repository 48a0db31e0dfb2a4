/* SPDX-License-Identifier: MIT */
/* test_hist.c - unit test of the workloads' latency histogram: bucket bounds,
 * nearest-rank quantiles against a sorted reference, and merging. */
#include "hist.h"
#include "../tests/common/check.h"

#include <stdlib.h>

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Is the histogram's answer in the same bucket as the exact value? */
static int same_bucket(uint64_t got, uint64_t exact) {
    unsigned i = hist_index(exact);
    return got >= hist_bucket_low(i) && got < hist_bucket_high(i);
}

int main(void) {
    static hist_t h, h2;
    /* empty */
    hist_reset(&h);
    CHECK_EQ_U(hist_quantile(&h, 0.5), 0);

    /* every value maps into a bucket whose bounds contain it */
    uint64_t probes[] = {
        0, 1, 31, 32, 33, 63, 64, 65, 100, 1000, 4095, 4096, 123456789, UINT64_MAX / 3, UINT64_MAX};
    for (unsigned i = 0; i < sizeof probes / sizeof probes[0]; i++) {
        unsigned b = hist_index(probes[i]);
        CHECK(b < HIST_BUCKETS);
        CHECK(hist_bucket_low(b) <= probes[i]);
        if (probes[i] != UINT64_MAX)
            CHECK(probes[i] < hist_bucket_high(b) || hist_bucket_high(b) == 0);
    }
    /* buckets are contiguous and increasing */
    for (unsigned b = 0; b + 1 < HIST_BUCKETS - 1; b++)
        CHECK_EQ_U(hist_bucket_high(b), hist_bucket_low(b + 1));

    /* small exact values: 1..100, nearest rank */
    for (uint64_t v = 1; v <= 100; v++)
        hist_record(&h, v);
    CHECK(same_bucket(hist_quantile(&h, 0.5), 50));
    CHECK(same_bucket(hist_quantile(&h, 0.99), 99));
    CHECK(same_bucket(hist_quantile(&h, 0.0), 1));
    CHECK_EQ_U(hist_quantile(&h, 1.0), 100); /* capped at max */
    CHECK_EQ_U(hist_quantile(&h, 0.1), 10);  /* < 32: exact */

    /* random values against a sorted reference */
    enum { N = 100000 };
    static uint64_t ref[N];
    uint64_t s = 12345;
    hist_reset(&h);
    hist_reset(&h2);
    for (int i = 0; i < N; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t v = (s >> 33) % 100000;
        if (i % 100 == 0)
            v *= 50; /* a tail */
        ref[i] = v;
        hist_record(i & 1 ? &h : &h2, v);
    }
    hist_merge(&h, &h2);
    CHECK_EQ_U(h.total, N);
    qsort(ref, N, sizeof ref[0], cmp_u64);
    CHECK_EQ_U(h.max, ref[N - 1]);
    double qs[] = {0.5, 0.9, 0.99, 0.999};
    for (unsigned i = 0; i < 4; i++) {
        uint64_t rank = (uint64_t)(qs[i] * N + 0.999999);
        uint64_t exact = ref[rank - 1];
        uint64_t got = hist_quantile(&h, qs[i]);
        CHECK(same_bucket(got, exact));
        /* and within the promised relative error */
        double err = (double)(got > exact ? got - exact : exact - got) / (double)exact;
        CHECK(err <= 1.0 / HIST_SUB);
    }
    return CHECK_DONE();
}
