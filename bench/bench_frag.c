/* bench_frag.c - seed 001 §5.3: fragmentation under a long stream of random
 * sizes with random lifetimes.  Single-threaded.
 *
 * Objects are log-uniform in size; which object dies next is chosen at random,
 * so lifetimes are geometric (most short, a few very long).  The number of live
 * objects follows a schedule that makes holes and then asks to reuse them:
 *   0-25%  grow to C objects of 16 B-32 KiB      25-50%  churn at C
 *   50-60% shrink to C/10 (random survivors pin their pages)
 *   60-85% regrow to C with sizes shifted up, 64 B-64 KiB   85-100% churn at C
 * RSS and live bytes are sampled 100 times (`ts` lines).  Reported: CPU time
 * (time_ms; wall_ms too), peak RSS,
 * final RSS and live bytes, RSS/live at the end, the mean RSS/live over the
 * second half, and usable_pct = live/RSS at the end (the seed's "usable memory").
 *
 * usage: bench_frag [-n OPS] [-c MAX_LIVE_OBJECTS] [-r SEED]
 */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define MAX_SAMPLES 101

static void usage(void)
{
    bench_die("usage: bench_frag [-n OPS] [-c MAX_LIVE_OBJECTS] [-r SEED]");
}

int main(int argc, char **argv)
{
    bench_init(argv[0]);
    uint64_t n_ops = 2000000, cap = 5000, rng = 7;
    int c;
    while ((c = getopt(argc, argv, "n:c:r:h")) != -1) {
        switch (c) {
        case 'n': n_ops = bench_parse_u64(optarg, "-n ops", 100, 100000000000ull); break;
        case 'c': cap = bench_parse_u64(optarg, "-c objects", 10, 100000000); break;
        case 'r': rng = bench_parse_u64(optarg, "-r seed", 0, UINT64_MAX); break;
        default: usage();
        }
    }
    if (optind != argc)
        usage();

    void **obj = malloc(cap * sizeof *obj);
    size_t *osz = malloc(cap * sizeof *osz);
    if (!obj || !osz)
        bench_die("out of memory for %llu objects", (unsigned long long)cap);
    uint64_t n_live = 0;
    size_t live = 0;
    uint64_t every = n_ops / (MAX_SAMPLES - 1);
    double ratio_sum = 0;
    unsigned ratio_n = 0;
    bench_usage_t u0 = bench_usage();
    uint64_t t0 = bench_now_ns(), c0 = bench_cpu_ns();
    for (uint64_t i = 0; i <= n_ops; i++) {
        if (i % every == 0 || i == n_ops) {
            size_t rss = bench_rss_now();
            printf("ts case=frag t_ms=%llu rss=%zu live=%zu\n",
                   (unsigned long long)((bench_now_ns() - t0) / 1000000), rss, live);
            if (i >= n_ops / 2 && live) {
                ratio_sum += (double)rss / (double)live;
                ratio_n++;
            }
            if (i == n_ops)
                break;
        }
        double f = (double)i / (double)n_ops;
        uint64_t target;
        size_t lo = 16, hi = 32768;
        if (f < 0.25)
            target = (uint64_t)(cap * (f / 0.25));
        else if (f < 0.50)
            target = cap;
        else if (f < 0.60)
            target = cap / 10;
        else {
            lo = 64, hi = 65536;
            target = f < 0.85 ? cap / 10 + (uint64_t)((cap - cap / 10) * ((f - 0.60) / 0.25)) : cap;
        }
        if (target < 1)
            target = 1;
        /* below target: mostly allocate; at or above: free; at target: churn */
        int do_alloc;
        if (n_live < target)
            do_alloc = n_live == 0 || bench_rand(&rng) % 4 != 0;
        else if (n_live > target)
            do_alloc = 0;
        else
            do_alloc = bench_rand(&rng) & 1;
        if (do_alloc && n_live < cap) {
            size_t sz = (size_t)bench_rand_log(&rng, lo, hi);
            void *p = malloc(sz);
            if (!p)
                bench_die("malloc(%zu) failed", sz);
            bench_touch(p, sz);
            obj[n_live] = p;
            osz[n_live] = sz;
            n_live++;
            live += sz;
        } else if (n_live > 0) {
            uint64_t k = bench_rand(&rng) % n_live;
            free(obj[k]);
            live -= osz[k];
            n_live--;
            obj[k] = obj[n_live];
            osz[k] = osz[n_live];
        }
    }
    uint64_t t1 = bench_now_ns(), c1 = bench_cpu_ns();
    size_t rss_end = bench_rss_now();
    printf("res case=frag time_ms=%.2f wall_ms=%.2f peak_rss=%zu rss_end=%zu live_end=%zu rss_over_live=%.3f "
           "mean_rss_over_live=%.3f usable_pct=%.1f%s\n",
           (double)(c1 - c0) / 1e6, (double)(t1 - t0) / 1e6, bench_rss_peak(), rss_end, live,
           live ? (double)rss_end / (double)live : 0.0, ratio_n ? ratio_sum / ratio_n : 0.0,
           rss_end ? 100.0 * (double)live / (double)rss_end : 0.0, bench_usage_fields(&u0));
    for (uint64_t k = 0; k < n_live; k++)
        free(obj[k]);
    free(obj);
    free(osz);
    return 0;
}
