/* SPDX-License-Identifier: MIT */
/* bench_sizes.c - the memory-pool text's §5.1: single-threaded malloc/free pairs of one size.
 *
 * For each size (default 8,64,512,4096) it runs a warm-up, then a throughput
 * loop timed as a whole (ns per malloc+free pair, in process CPU time, and in
 * wall time as wall_ns_per_op), then a latency loop that
 * times every pair with the cycle counter into a histogram (P50/P99/P999, with
 * the cost of an empty timed region subtracted).  Each histogram sample is a
 * group of -g pairs (default 8) divided by the group size, because virtual
 * machines often step the cycle counter in ~10 ns units, coarser than one
 * pair; -g 1 times single pairs where the counter is fine-grained.  The first byte of every block
 * is written, so the pair cannot be optimised away.
 *
 * usage: bench_sizes [-n PAIRS] [-s SIZE,SIZE,...] [-g GROUP]
 */
#include "common.h"
#include "hist.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define USAGE "usage: bench_sizes [-n PAIRS] [-s SIZE,...] [-g GROUP]  (sizes 1..1048576)"

static uint64_t sizes[16] = {8, 64, 512, 4096}; /* -s */
static unsigned nsizes = 4;

static void parse_sizes(const char *arg) {
    nsizes = bench_parse_list(arg, "-s sizes", sizes, 16, 1, 1 << 20);
}

int main(int argc, char **argv) {
    bench_init(argv[0]);
    uint64_t pairs = 2000000;
    unsigned group = 8;
    const bench_opt_t opts[] = {
        BENCH_NUM('n', "-n pairs", 1, 10000000000ull, pairs),
        BENCH_FN('s', parse_sizes),
        BENCH_NUM('g', "-g group", 1, 1024, group),
    };
    bench_options(argc, argv, USAGE, opts, sizeof opts / sizeof opts[0]);
    bench_tick_calibrate();

    static hist_t h;
    for (unsigned si = 0; si < nsizes; si++) {
        size_t size = (size_t)sizes[si];
        for (uint64_t i = 0; i < pairs / 10 + 1; i++) { /* warm-up */
            volatile char *p = malloc(size);
            p[0] = 1;
            free((void *)p);
        }
        bench_usage_t u0 = bench_usage();
        uint64_t t0 = bench_now_ns(), c0 = bench_cpu_ns();
        for (uint64_t i = 0; i < pairs; i++) {
            volatile char *p = malloc(size);
            p[0] = (char)i;
            free((void *)p);
        }
        uint64_t t1 = bench_now_ns(), c1 = bench_cpu_ns();
        char usage_fields[256];
        snprintf(usage_fields, sizeof usage_fields, "%s", bench_usage_fields(&u0));

        hist_reset(&h);
        bench_time_pairs(&h, pairs, group, size);
        double tpn = bench_ticks_per_ns * group;
        printf("res case=size_%zu ns_per_op=%.3f wall_ns_per_op=%.3f p50_ns=%.1f p99_ns=%.1f "
               "p999_ns=%.1f%s\n",
               size, (double)(c1 - c0) / (double)pairs, (double)(t1 - t0) / (double)pairs,
               (double)hist_quantile(&h, 0.5) / tpn, (double)hist_quantile(&h, 0.99) / tpn,
               (double)hist_quantile(&h, 0.999) / tpn, usage_fields);
        fflush(stdout);
    }
    printf("res case=process peak_rss=%zu\n", bench_rss_peak());
    return 0;
}
