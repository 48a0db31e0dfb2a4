/* SPDX-License-Identifier: MIT */
/* bench_idle.c - free, then idle: does the allocator give memory back to the
 * OS once a program that has freed most of its memory goes quiet?
 * Single-threaded.
 *
 * Builds a live set of -l bytes (default 256 MiB) of mixed sizes: 60% of the
 * objects 16-512 B, 30% 1-8 KiB, 10% 16-256 KiB (log-uniform within each),
 * every page written.  Then frees a random -f percent of the objects (default
 * 90; 100 frees everything), and idles for -i milliseconds (default 3000):
 * it only sleeps and reads its RSS from /proc/self/statm every -s ms
 * (default 100), which calls no allocator function.  So what the RSS does
 * during the idle is the allocator's own doing: memory given back at free
 * time, or by a background thread.
 *
 * `ts` lines: t_ms is time since the start of the free phase (the first sample
 * is just before it), rss and live bytes.  Reported: peak RSS, RSS before the
 * free (rss_built), right after it (rss_freed), at the end of the idle
 * (rss_idle_end), live bytes left, returned_pct = how much of the freed bytes
 * left RSS by the end of the idle ((rss_built - rss_idle_end) / freed bytes,
 * can pass 100 when the allocator's own overhead goes too), and
 * time_to_drop_ms: time from the end of the free phase until RSS first fell by
 * half the freed bytes; an allocator that never got there within the idle
 * reports the whole idle length and dropped=0.  Also the time of the build and
 * free phases (CPU) and page faults.
 *
 * usage: bench_idle [-l LIVE_BYTES] [-f FREE_PCT] [-i IDLE_MS] [-s SAMPLE_MS] [-r SEED]
 */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static size_t pick_size(uint64_t *rng) {
    uint64_t r = bench_rand(rng) % 10;
    if (r < 6)
        return (size_t)bench_rand_log(rng, 16, 512);
    if (r < 9)
        return (size_t)bench_rand_log(rng, 1024, 8192);
    return (size_t)bench_rand_log(rng, 16384, 262144);
}

static void sleep_ms(uint64_t ms) {
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

#define USAGE                                                                                      \
    "usage: bench_idle [-l LIVE_BYTES] [-f FREE_PCT] [-i IDLE_MS] [-s SAMPLE_MS] "                 \
    "[-r SEED]"

int main(int argc, char **argv) {
    bench_init(argv[0]);
    uint64_t target = 256ull << 20, free_pct = 90, idle_ms = 3000, sample_ms = 100, rng = 13;
    const bench_opt_t opts[] = {
        BENCH_NUM('l', "-l live bytes", 1 << 20, 1ull << 40, target),
        BENCH_NUM('f', "-f free %", 1, 100, free_pct),
        BENCH_NUM('i', "-i idle ms", 0, 3600000, idle_ms),
        BENCH_NUM('s', "-s sample ms", 1, 60000, sample_ms),
        BENCH_NUM('r', "-r seed", 0, UINT64_MAX, rng),
    };
    bench_options(argc, argv, USAGE, opts, sizeof opts / sizeof opts[0]);

    /* The object table is sized up front (the mean object is over 1 KiB), so
     * nothing but the objects is allocated once the build starts. */
    size_t cap = (size_t)(target / 1024) + 1024, n = 0, live = 0;
    void **obj = malloc(cap * sizeof *obj);
    size_t *osz = malloc(cap * sizeof *osz);
    /* samples are printed after the idle, so nothing but sleeping and reading
     * /proc happens during it */
    size_t n_samples = 0, max_samples = (size_t)(idle_ms / sample_ms) + 2;
    struct sample {
        double t_ms;
        size_t rss;
    } *samples = malloc(max_samples * sizeof *samples);
    if (!obj || !osz || !samples)
        bench_die("out of memory for %zu objects", cap);
    bench_usage_t u0 = bench_usage();
    uint64_t c0 = bench_cpu_ns();
    while (live < target) {
        if (n == cap)
            bench_die("more than %zu objects for %llu bytes", cap, (unsigned long long)target);
        size_t sz = pick_size(&rng);
        void *p = malloc(sz);
        if (!p)
            bench_die("malloc(%zu) failed", sz);
        bench_touch(p, sz);
        obj[n] = p;
        osz[n++] = sz;
        live += sz;
    }
    uint64_t c1 = bench_cpu_ns();
    /* free a random free_pct% of the objects: shuffle, free the tail */
    bench_shuffle(obj, osz, n, &rng);
    size_t keep = free_pct == 100 ? 0 : n - (size_t)((double)n * (double)free_pct / 100.0);
    size_t rss_built = bench_rss_now(), live_built = live;
    uint64_t t_free = bench_now_ns();
    uint64_t c2 = bench_cpu_ns();
    for (size_t i = n; i > keep; i--) {
        free(obj[i - 1]);
        live -= osz[i - 1];
    }
    uint64_t c3 = bench_cpu_ns(), t_idle = bench_now_ns();
    size_t rss_freed = bench_rss_now(), freed = live_built - live;
    size_t goal = rss_built > freed / 2 ? rss_built - freed / 2 : 0;
    double drop_ms = -1;
    size_t rss = rss_freed;
    if (rss <= goal)
        drop_ms = 0;
    samples[n_samples++] = (struct sample){(double)(t_idle - t_free) / 1e6, rss};
    /* idle: sleep to the next sample time, read RSS, nothing else */
    for (uint64_t k = 1; sample_ms * k <= idle_ms; k++) {
        uint64_t due = t_idle + sample_ms * k * 1000000ull, now = bench_now_ns();
        if (due > now)
            sleep_ms((due - now + 999999) / 1000000);
        rss = bench_rss_now();
        now = bench_now_ns();
        if (drop_ms < 0 && rss <= goal)
            drop_ms = (double)(now - t_idle) / 1e6;
        samples[n_samples++] = (struct sample){(double)(now - t_free) / 1e6, rss};
    }
    size_t rss_idle_end = rss;
    char name[32];
    snprintf(name, sizeof name, "free_%llu", (unsigned long long)free_pct);
    printf("ts case=%s t_ms=0 rss=%zu live=%zu\n", name, rss_built, live_built);
    for (size_t i = 0; i < n_samples; i++)
        printf("ts case=%s t_ms=%.0f rss=%zu live=%zu\n", name, samples[i].t_ms, samples[i].rss,
               live);
    printf("res case=%s peak_rss=%zu rss_built=%zu rss_freed=%zu rss_idle_end=%zu "
           "live_end=%zu returned_pct=%.1f time_to_drop_ms=%.0f dropped=%d build_ms=%.2f "
           "free_ms=%.2f%s\n",
           name, bench_rss_peak(), rss_built, rss_freed, rss_idle_end, live,
           freed ? 100.0 * ((double)rss_built - (double)rss_idle_end) / (double)freed : 0.0,
           drop_ms < 0 ? (double)idle_ms : drop_ms, drop_ms >= 0, (double)(c1 - c0) / 1e6,
           (double)(c3 - c2) / 1e6, bench_usage_fields(&u0));
    for (size_t i = 0; i < keep; i++)
        free(obj[i]);
    free(obj);
    free(osz);
    free(samples);
    return 0;
}
