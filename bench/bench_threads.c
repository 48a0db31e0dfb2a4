/* SPDX-License-Identifier: MIT */
/* bench_threads.c - the memory-pool text's §5.2: 64-byte malloc/free pairs on T threads at once.
 *
 * For each thread count, T threads start together at a barrier and each runs
 * PAIRS untimed pairs (throughput = all pairs / wall time from release to the
 * last thread's end), then, after a second barrier, PAIRS/4 pairs each timed
 * with the cycle counter into a per-thread histogram (merged for P50/P99), in
 * groups of -g pairs (default 8; see bench_sizes.c for why).
 * More threads than cores is allowed: it measures behaviour under preemption.
 *
 * usage: bench_threads [-t T,T,...] [-n PAIRS_PER_THREAD] [-s SIZE] [-g GROUP]
 */
#include "common.h"
#include "hist.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef struct worker {
    uint64_t pairs;
    size_t size;
    hist_t hist;
} worker_t;

static bench_team_t team;
static unsigned group = 8;

static void *worker_main(void *arg) {
    worker_t *w = arg;
    size_t size = w->size;
    bench_team_go(&team);
    for (uint64_t i = 0; i < w->pairs; i++) {
        volatile char *p = malloc(size);
        p[0] = (char)i;
        free((void *)p);
    }
    bench_team_done(&team);
    uint64_t timed = w->pairs / 4 + 1;
    bench_time_pairs(&w->hist, timed, group, size);
    return NULL;
}

#define USAGE "usage: bench_threads [-t THREADS,...] [-n PAIRS_PER_THREAD] [-s SIZE] [-g GROUP]"

static uint64_t threads[16] = {1, 2, 4, 8, 16}; /* -t */
static unsigned nt = 5;

static void parse_threads(const char *arg) {
    nt = bench_parse_list(arg, "-t threads", threads, 16, 1, 1024);
}

int main(int argc, char **argv) {
    bench_init(argv[0]);
    uint64_t pairs = 1000000, size = 64;
    const bench_opt_t opts[] = {
        BENCH_FN('t', parse_threads),
        BENCH_NUM('n', "-n pairs", 1, 10000000000ull, pairs),
        BENCH_NUM('s', "-s size", 1, 1 << 20, size),
        BENCH_NUM('g', "-g group", 1, 1024, group),
    };
    bench_options(argc, argv, USAGE, opts, sizeof opts / sizeof opts[0]);
    bench_tick_calibrate();

    for (unsigned ti = 0; ti < nt; ti++) {
        unsigned n = (unsigned)threads[ti];
        worker_t *ws = calloc(n, sizeof *ws);
        if (!ws)
            bench_die("out of memory");
        for (unsigned i = 0; i < n; i++) {
            ws[i].pairs = pairs;
            ws[i].size = (size_t)size;
        }
        bench_team_start(&team, n, worker_main, ws, sizeof *ws);
        bench_team_wait_done(&team);
        bench_team_release(&team); /* (the timed pairs that follow are the workers' own) */
        bench_team_join(&team);
        static hist_t all;
        hist_reset(&all);
        for (unsigned i = 0; i < n; i++)
            hist_merge(&all, &ws[i].hist);
        double secs = bench_team_secs(&team);
        double tpn = bench_ticks_per_ns * group;
        printf("res case=threads_%u mops_per_s=%.3f ns_per_op=%.3f p50_ns=%.1f p99_ns=%.1f%s\n", n,
               (double)pairs * n / secs / 1e6, secs * 1e9 / ((double)pairs * n),
               (double)hist_quantile(&all, 0.5) / tpn, (double)hist_quantile(&all, 0.99) / tpn,
               bench_usage_fields(&team.u0)); /* (the timed pairs included) */
        fflush(stdout);
        free(ws);
    }
    printf("res case=process peak_rss=%zu\n", bench_rss_peak());
    return 0;
}
