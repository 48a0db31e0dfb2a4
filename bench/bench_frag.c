/* SPDX-License-Identifier: MIT */
/* bench_frag.c - the memory-pool text's §5.3: fragmentation under a long stream of random
 * sizes with random lifetimes.  Single-threaded.  Two modes:
 *
 * -m churn (default, case "frag"):
 * Objects are log-uniform in size; which object dies next is chosen at random,
 * so lifetimes are geometric (most short, a few very long).  The number of live
 * objects follows a schedule that makes holes and then asks to reuse them:
 *   0-25%  grow to C objects of 16 B-32 KiB      25-50%  churn at C
 *   50-60% shrink to C/10 (random survivors pin their pages)
 *   60-85% regrow to C with sizes shifted up, 64 B-64 KiB   85-100% churn at C
 * RSS and live bytes are sampled 100 times (`ts` lines).  Reported: CPU time
 * (time_ms; wall_ms too), peak RSS,
 * final RSS and live bytes, RSS/live at the end, the mean RSS/live over the
 * second half, and usable_pct = live/RSS at the end (the text's "usable memory").
 *
 * -m reuse (case "reuse90"): can memory freed by one size be reused by another?
 * Build a live set of -l bytes (sizes 16 B-32 KiB, log-uniform), free a random
 * 90% of the objects (the survivors pin their pages), then allocate 1-4 KiB
 * blocks until the live bytes are back where they were.  An allocator that
 * reuses the freed memory ends near its first peak; one that cannot grows by up
 * to the freed 90%.  RSS is the point: peak RSS, RSS after the build
 * (rss_built), after the free (rss_freed) and at the end, RSS/live at the end,
 * and CPU time.
 *
 * usage: bench_frag [-m churn|reuse] [-n OPS] [-c MAX_LIVE_OBJECTS] [-l LIVE_BYTES] [-r SEED]
 */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_SAMPLES 101

#define USAGE                                                                                      \
    "usage: bench_frag [-m churn|reuse] [-n OPS] [-c MAX_LIVE_OBJECTS] [-l LIVE_BYTES] "           \
    "[-r SEED]"

/* Growable array of live objects for the reuse mode. */
typedef struct objs {
    void **p;
    size_t *size;
    size_t n, cap;
} objs_t;

static void objs_push(objs_t *o, void *p, size_t size) {
    if (o->n == o->cap) {
        o->cap = o->cap ? 2 * o->cap : 4096;
        o->p = realloc(o->p, o->cap * sizeof *o->p);
        o->size = realloc(o->size, o->cap * sizeof *o->size);
        if (!o->p || !o->size)
            bench_die("out of memory for %zu objects", o->cap);
    }
    o->p[o->n] = p;
    o->size[o->n] = size;
    o->n++;
}

static uint64_t reuse_t0;
static int reuse; /* -m reuse */

static void parse_mode(const char *arg) { reuse = bench_parse_mode(arg, "-m", "churn", "reuse"); }

/* One `ts` sample; phase progress is printed as `live`, like the churn mode. */
static void reuse_sample(size_t live) {
    printf("ts case=reuse90 t_ms=%llu rss=%zu live=%zu\n",
           (unsigned long long)((bench_now_ns() - reuse_t0) / 1000000), bench_rss_now(), live);
}

/* Allocate objects (log-uniform in [lo, hi]) until `*live` reaches `target`,
 * sampling RSS each time another 1/33 of the way is done. */
static void reuse_fill(objs_t *o, size_t *live, size_t target, size_t lo, size_t hi, int log_sizes,
                       uint64_t *rng) {
    size_t start = *live, step = (target - start) / 33 + 1, next = start + step;
    while (*live < target) {
        size_t sz =
            log_sizes ? (size_t)bench_rand_log(rng, lo, hi) : (size_t)bench_rand_range(rng, lo, hi);
        void *p = malloc(sz);
        if (!p)
            bench_die("malloc(%zu) failed", sz);
        bench_touch(p, sz);
        objs_push(o, p, sz);
        *live += sz;
        if (*live >= next) {
            reuse_sample(*live);
            next += step;
        }
    }
}

static int reuse_main(uint64_t target, uint64_t rng) {
    objs_t o = {0};
    size_t live = 0;
    bench_usage_t u0 = bench_usage();
    uint64_t t0 = bench_now_ns(), c0 = bench_cpu_ns();
    reuse_t0 = t0;
    reuse_sample(0);
    reuse_fill(&o, &live, target, 16, 32768, 1, &rng);
    size_t rss_built = bench_rss_now();
    /* free a random 90%: shuffle, free the tail, keep the first tenth */
    bench_shuffle(o.p, o.size, o.n, &rng);
    size_t keep = o.n / 10, step = (o.n - keep) / 33 + 1;
    for (size_t i = o.n; i > keep; i--) {
        free(o.p[i - 1]);
        live -= o.size[i - 1];
        if ((o.n - i + 1) % step == 0)
            reuse_sample(live);
    }
    o.n = keep;
    size_t rss_freed = bench_rss_now();
    reuse_sample(live);
    reuse_fill(&o, &live, target, 1024, 4096, 0, &rng);
    uint64_t t1 = bench_now_ns(), c1 = bench_cpu_ns();
    size_t rss_end = bench_rss_now();
    printf("res case=reuse90 time_ms=%.2f wall_ms=%.2f peak_rss=%zu rss_built=%zu rss_freed=%zu "
           "rss_end=%zu live_end=%zu rss_over_live=%.3f%s\n",
           (double)(c1 - c0) / 1e6, (double)(t1 - t0) / 1e6, bench_rss_peak(), rss_built, rss_freed,
           rss_end, live, live ? (double)rss_end / (double)live : 0.0, bench_usage_fields(&u0));
    for (size_t i = 0; i < o.n; i++)
        free(o.p[i]);
    free(o.p);
    free(o.size);
    return 0;
}

int main(int argc, char **argv) {
    bench_init(argv[0]);
    uint64_t n_ops = 2000000, cap = 5000, rng = 7, live_target = 256ull << 20;
    const bench_opt_t opts[] = {
        BENCH_FN('m', parse_mode),
        BENCH_NUM('n', "-n ops", 100, 100000000000ull, n_ops),
        BENCH_NUM('c', "-c objects", 10, 100000000, cap),
        BENCH_NUM('l', "-l live bytes", 1 << 20, 1ull << 40, live_target),
        BENCH_NUM('r', "-r seed", 0, UINT64_MAX, rng),
    };
    bench_options(argc, argv, USAGE, opts, sizeof opts / sizeof opts[0]);
    if (reuse)
        return reuse_main(live_target, rng);

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
    printf("res case=frag time_ms=%.2f wall_ms=%.2f peak_rss=%zu rss_end=%zu live_end=%zu "
           "rss_over_live=%.3f "
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
