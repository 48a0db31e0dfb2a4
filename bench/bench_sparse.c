/* SPDX-License-Identifier: MIT */
/* bench_sparse.c - buffers sized for the worst case and barely touched
 * (the footprint work that made freed pages serve any size).
 *
 * Each of T threads (2) keeps a window of W slots (2,000).  It first fills
 * them, then repeatedly picks a random slot, frees what is there and
 * allocates a new block: 50% of sizes are 8-128 B and 30% are 1-4 KiB, and
 * every page of those is written; 20% are 8-512 KiB, log-uniform (-l and -L
 * set the range), and of those only the first and the last byte are
 * written, as a program that reserves a buffer for the worst case and fills
 * a little of it would.  An allocator that places a new block on pages a
 * freed one left resident takes few page faults and little RSS here; one
 * that spreads blocks over fresh pages faults in two pages per block and
 * keeps them.
 *
 * Reported: wall time, peak RSS, final RSS, the bytes asked for that are
 * live at the end, faults.
 *
 * usage: bench_sparse [-t THREADS] [-n OPS_PER_THREAD] [-w SLOTS] [-l LARGE_MIN] [-L LARGE_MAX]
 *                     [-r SEED]
 */
#include "common.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef struct worker {
    uint64_t seed;
    size_t live; /* bytes requested and not yet freed, at the end */
    char pad[64];
} worker_t;

static uint64_t n_ops = 40000, n_slots = 2000, large_min = 8192, large_max = 524288;
static unsigned n_threads = 2;
static worker_t *workers;
static bench_team_t team;

/* A size, and whether only its ends are written. */
static size_t pick_size(uint64_t *rng, int *sparse) {
    uint64_t r = bench_rand(rng) % 100;
    *sparse = r >= 80;
    if (r < 50)
        return (size_t)bench_rand_range(rng, 8, 128);
    if (r < 80)
        return (size_t)bench_rand_range(rng, 1024, 4096);
    return (size_t)bench_rand_log(rng, large_min, large_max);
}

static void *worker_main(void *arg) {
    worker_t *w = arg;
    uint64_t rng = w->seed;
    void **slot = calloc(n_slots, sizeof *slot);
    size_t *slot_size = calloc(n_slots, sizeof *slot_size);
    if (!slot || !slot_size)
        bench_die("out of memory for slots");
    bench_team_go(&team);
    size_t live = 0;
    for (uint64_t i = 0; i < n_ops; i++) {
        uint64_t k = i < n_slots ? i : bench_rand(&rng) % n_slots;
        if (slot[k]) {
            free(slot[k]);
            live -= slot_size[k];
        }
        int sparse;
        size_t sz = pick_size(&rng, &sparse);
        char *p = malloc(sz);
        if (!p)
            bench_die("malloc(%zu) failed", sz);
        if (sparse) {
            p[0] = 1;
            p[sz - 1] = 1;
        } else {
            bench_touch(p, sz);
        }
        slot[k] = p;
        slot_size[k] = sz;
        live += sz;
    }
    w->live = live;
    bench_team_done(&team); /* main reads the RSS before anything is freed */
    for (uint64_t k = 0; k < n_slots; k++)
        free(slot[k]);
    free(slot);
    free(slot_size);
    return NULL;
}

#define USAGE                                                                                      \
    "usage: bench_sparse [-t THREADS] [-n OPS_PER_THREAD] [-w SLOTS] [-l LARGE_MIN] "              \
    "[-L LARGE_MAX] [-r SEED]"

int main(int argc, char **argv) {
    bench_init(argv[0]);
    uint64_t seed = 42;
    const bench_opt_t opts[] = {
        BENCH_NUM('t', "-t threads", 1, 1024, n_threads),
        BENCH_NUM('n', "-n ops", 1, 100000000000ull, n_ops),
        BENCH_NUM('w', "-w slots", 1, 100000000, n_slots),
        BENCH_NUM('l', "-l large min", 2, 1ull << 30, large_min),
        BENCH_NUM('L', "-L large max", 2, 1ull << 30, large_max),
        BENCH_NUM('r', "-r seed", 0, UINT64_MAX, seed),
    };
    bench_options(argc, argv, USAGE, opts, sizeof opts / sizeof opts[0]);
    if (large_min > large_max)
        bench_die("-l %llu is above -L %llu", (unsigned long long)large_min,
                  (unsigned long long)large_max);

    workers = calloc(n_threads, sizeof *workers);
    if (!workers)
        bench_die("out of memory");
    for (unsigned i = 0; i < n_threads; i++)
        workers[i].seed = seed * 1000003u + i;
    bench_team_start(&team, n_threads, worker_main, workers, sizeof *workers);
    bench_team_wait_done(&team); /* every worker is done */
    size_t rss_end = bench_rss_now(), live_end = 0;
    for (unsigned i = 0; i < n_threads; i++)
        live_end += workers[i].live;
    bench_team_release(&team);
    bench_team_join(&team);

    double secs = bench_team_secs(&team);
    printf("res case=sparse time_ms=%.2f ns_per_op=%.3f peak_rss=%zu rss_end=%zu live_end=%zu "
           "cpu_ms=%.2f%s\n",
           secs * 1e3, secs * 1e9 / ((double)n_ops * n_threads), bench_rss_peak(), rss_end,
           live_end, team.cpu_ms, team.usage_fields);
    free(workers);
    return 0;
}
