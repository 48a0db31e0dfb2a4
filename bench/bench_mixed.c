/* SPDX-License-Identifier: MIT */
/* bench_mixed.c - the allocator comparison's §3: the "web service" mix with a live working set.
 *
 * Each of T threads owns W slots.  It first fills them, then repeatedly picks a
 * random slot, frees what is there and allocates a new object: 50% of sizes are
 * 8-128 B, 30% are 1-4 KiB, 20% are "large", 8-256 KiB log-uniform (-L sets
 * the top of that range: -L 512k makes the case "mixed_512k"; -m small:
 * every size 8-128 B, the comparison's "pure small objects" row).  Every page of an
 * object is written, as a server filling a buffer would.  Thread 0 samples RSS
 * and the live bytes of all threads 100 times over the run (`ts` lines).
 *
 * Reported: wall time, ns per op, peak RSS, final RSS, live bytes, and RSS
 * growth: (final RSS - RSS at 20% of the run) / RSS at 20%, the short-run
 * stand-in for the comparison's "memory growth after 1 h".
 *
 * usage: bench_mixed [-t THREADS] [-n OPS_PER_THREAD] [-w SLOTS] [-m mixed|small] [-L LARGE_MAX]
 *                    [-r SEED]
 */
#include "common.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_SAMPLES 101

typedef struct worker {
    unsigned index;
    uint64_t seed;
    size_t live; /* bytes requested and not yet freed; owner writes */
    char pad[64];
} worker_t;

static uint64_t n_ops, n_slots, large_max = 262144;
static int small_only;
static unsigned n_threads;
static worker_t *workers;
static bench_team_t team;
static struct sample {
    uint64_t t_ms;
    size_t rss, live;
} samples[MAX_SAMPLES];
static unsigned n_samples;

static size_t pick_size(uint64_t *rng) {
    if (small_only)
        return (size_t)bench_rand_range(rng, 8, 128);
    uint64_t r = bench_rand(rng) % 100;
    if (r < 50)
        return (size_t)bench_rand_range(rng, 8, 128);
    if (r < 80)
        return (size_t)bench_rand_range(rng, 1024, 4096);
    return (size_t)bench_rand_log(rng, 8192, large_max);
}

static void take_sample(void) {
    if (n_samples >= MAX_SAMPLES)
        return;
    size_t live = 0;
    for (unsigned i = 0; i < n_threads; i++)
        live += __atomic_load_n(&workers[i].live, __ATOMIC_RELAXED);
    struct sample *s = &samples[n_samples++];
    s->t_ms = (bench_now_ns() - bench_team_first_start(&team)) / 1000000;
    s->rss = bench_rss_now();
    s->live = live;
}

static void *worker_main(void *arg) {
    worker_t *w = arg;
    uint64_t rng = w->seed;
    void **slot = calloc(n_slots, sizeof *slot);
    size_t *slot_size = calloc(n_slots, sizeof *slot_size);
    if (!slot || !slot_size)
        bench_die("out of memory for slots");
    size_t live = 0;
    uint64_t every = n_ops / (MAX_SAMPLES - 1);
    if (every == 0)
        every = 1;
    bench_team_go(&team);
    for (uint64_t i = 0; i < n_ops; i++) {
        uint64_t k = i < n_slots ? i : bench_rand(&rng) % n_slots;
        if (slot[k]) {
            free(slot[k]);
            live -= slot_size[k];
        }
        size_t sz = pick_size(&rng);
        slot[k] = malloc(sz);
        if (!slot[k])
            bench_die("malloc(%zu) failed", sz);
        bench_touch(slot[k], sz);
        slot_size[k] = sz;
        live += sz;
        __atomic_store_n(&w->live, live, __ATOMIC_RELAXED);
        if (w->index == 0 && i % every == 0)
            take_sample();
    }
    if (w->index == 0)
        take_sample();
    /* the final RSS is read by main before anything is freed */
    bench_team_done(&team);
    for (uint64_t k = 0; k < n_slots; k++)
        free(slot[k]);
    free(slot);
    free(slot_size);
    return NULL;
}

#define USAGE                                                                                      \
    "usage: bench_mixed [-t THREADS] [-n OPS_PER_THREAD] [-w SLOTS] [-m mixed|small] "             \
    "[-L LARGE_MAX] [-r SEED]"

static void parse_mode(const char *arg) {
    small_only = bench_parse_mode(arg, "-m", "mixed", "small");
}

int main(int argc, char **argv) {
    bench_init(argv[0]);
    n_threads = 2;
    n_ops = 400000;
    n_slots = 4000;
    uint64_t seed = 42;
    const bench_opt_t opts[] = {
        BENCH_NUM('t', "-t threads", 1, 1024, n_threads),
        BENCH_NUM('n', "-n ops", 1, 100000000000ull, n_ops),
        BENCH_NUM('w', "-w slots", 1, 100000000, n_slots),
        BENCH_NUM('r', "-r seed", 0, UINT64_MAX, seed),
        BENCH_NUM('L', "-L large max", 8192, 1ull << 30, large_max),
        BENCH_FN('m', parse_mode),
    };
    bench_options(argc, argv, USAGE, opts, sizeof opts / sizeof opts[0]);

    workers = calloc(n_threads, sizeof *workers);
    if (!workers)
        bench_die("out of memory");
    for (unsigned i = 0; i < n_threads; i++) {
        workers[i].index = i;
        workers[i].seed = seed * 1000003u + i;
    }
    bench_team_start(&team, n_threads, worker_main, workers, sizeof *workers);
    bench_team_wait_done(&team); /* all threads done with their ops */
    size_t rss_end = bench_rss_now(), live_end = 0;
    for (unsigned i = 0; i < n_threads; i++)
        live_end += workers[i].live;
    bench_team_release(&team);
    bench_team_join(&team);

    char name[32];
    if (small_only)
        snprintf(name, sizeof name, "small");
    else if (large_max == 262144)
        snprintf(name, sizeof name, "mixed");
    else if (large_max % 1024 == 0)
        snprintf(name, sizeof name, "mixed_%lluk", (unsigned long long)(large_max / 1024));
    else
        snprintf(name, sizeof name, "mixed_%llu", (unsigned long long)large_max);
    size_t base = samples[n_samples / 5].rss;
    for (unsigned i = 0; i < n_samples; i++)
        printf("ts case=%s t_ms=%llu rss=%zu live=%zu\n", name, (unsigned long long)samples[i].t_ms,
               samples[i].rss, samples[i].live);
    double secs = bench_team_secs(&team);
    printf("res case=%s time_ms=%.2f ns_per_op=%.3f peak_rss=%zu rss_end=%zu live_end=%zu "
           "rss_growth_pct=%.2f cpu_ms=%.2f%s\n",
           name, secs * 1e3, secs * 1e9 / ((double)n_ops * n_threads), bench_rss_peak(), rss_end,
           live_end, base ? 100.0 * ((double)rss_end - (double)base) / (double)base : 0.0,
           team.cpu_ms, team.usage_fields);
    free(workers);
    return 0;
}
