/* SPDX-License-Identifier: MIT */
/* bench_larson.c - a Larson-style server (Larson and Krishnan, "Memory
 * allocation for long-running server applications", 1998): threads come and
 * go, and the objects they leave behind are freed by their successors.
 *
 * T slot arrays of S slots each are filled by the main thread (blocks of
 * random sizes in [MIN, MAX], default 8-1000 B, every one written), then one
 * thread is started per array.  Each step of a thread frees the block in a
 * random slot of its array and puts a new block of a random size there.
 * After N steps the thread retires: it starts its successor, which inherits
 * the slot array, and exits.  Each array goes through G threads.  So every
 * block a thread finds in its array at the start was allocated by a thread
 * that is gone (at first the main thread), and with N = 5 S (the default)
 * about a fifth of all frees are frees of another thread's objects, on top of
 * the cost of creating and ending threads that own caches.
 *
 * Reported: throughput (M steps/s, wall time from the first thread's start to
 * the last one's end), ns per step, peak RSS, RSS at the end (every array
 * still full), page faults, context switches, and the threads created.
 *
 * usage: bench_larson [-t THREADS] [-s SLOTS] [-n STEPS_PER_THREAD] [-g GENERATIONS]
 *                     [-l MIN] [-u MAX] [-r SEED]
 */
#include "common.h"

#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef struct lane {
    void **slot;               /* the slot array, handed from thread to thread */
    uint64_t rng;              /* handed on too: the lane's sequence of sizes */
    unsigned generation;       /* of the thread running the lane, from 1 */
    pthread_t pred;            /* the thread that retired: its successor joins it */
    pthread_t last;            /* the newest thread, for main to join at the end */
    uint64_t start_ns, end_ns; /* the lane's first start, its last end */
} lane_t;

static uint64_t n_slots, n_steps, lo, hi;
static unsigned n_gens;
static sem_t lanes_done; /* posted by each lane's last thread */

static void *fill(uint64_t *rng) {
    size_t sz = (size_t)bench_rand_range(rng, lo, hi);
    unsigned char *p = malloc(sz);
    if (!p)
        bench_die("malloc(%zu) failed", sz);
    p[0] = (unsigned char)sz;
    p[sz - 1] = 1;
    return p;
}

static void *thread_main(void *arg) {
    lane_t *l = arg;
    /* The predecessor's exit (where an allocator flushes its thread cache)
     * belongs to the lane's time: join it first. */
    if (l->generation > 1)
        pthread_join(l->pred, NULL);
    else
        l->start_ns = bench_now_ns();
    uint64_t rng = l->rng;
    for (uint64_t i = 0; i < n_steps; i++) {
        uint64_t k = bench_rand(&rng) % n_slots;
        free(l->slot[k]);
        l->slot[k] = fill(&rng);
    }
    l->rng = rng;
    if (l->generation < n_gens) {
        /* retire: the successor takes over the slot array, and joins us.
         * `last` is read by main only after the lane's last thread, which
         * joined this one, has posted lanes_done. */
        l->pred = pthread_self();
        l->generation++;
        if (pthread_create(&l->last, NULL, thread_main, l) != 0)
            bench_die("pthread_create of generation %u failed", l->generation);
    } else {
        l->end_ns = bench_now_ns();
        sem_post(&lanes_done);
    }
    return NULL;
}

#define USAGE                                                                                      \
    "usage: bench_larson [-t THREADS] [-s SLOTS] [-n STEPS_PER_THREAD] [-g GENERATIONS] "          \
    "[-l MIN] [-u MAX] [-r SEED]"

int main(int argc, char **argv) {
    bench_init(argv[0]);
    unsigned n_threads = 4;
    uint64_t seed = 17;
    n_slots = 1000;
    n_steps = 5000;
    n_gens = 40;
    lo = 8;
    hi = 1000;
    const bench_opt_t opts[] = {
        BENCH_NUM('t', "-t threads", 1, 1024, n_threads),
        BENCH_NUM('s', "-s slots", 1, 100000000, n_slots),
        BENCH_NUM('n', "-n steps", 1, 100000000000ull, n_steps),
        BENCH_NUM('g', "-g generations", 1, 1000000, n_gens),
        BENCH_NUM('l', "-l min size", 1, 1 << 30, lo),
        BENCH_NUM('u', "-u max size", 1, 1 << 30, hi),
        BENCH_NUM('r', "-r seed", 0, UINT64_MAX, seed),
    };
    bench_options(argc, argv, USAGE, opts, sizeof opts / sizeof opts[0]);
    if (lo > hi)
        bench_die("-l min size %llu is above -u max size %llu", (unsigned long long)lo,
                  (unsigned long long)hi);

    lane_t *lanes = calloc(n_threads, sizeof *lanes);
    if (!lanes)
        bench_die("out of memory");
    for (unsigned i = 0; i < n_threads; i++) {
        lane_t *l = &lanes[i];
        l->rng = seed * 1000003u + i;
        l->slot = malloc(n_slots * sizeof *l->slot);
        if (!l->slot)
            bench_die("out of memory for %llu slots", (unsigned long long)n_slots);
        for (uint64_t k = 0; k < n_slots; k++)
            l->slot[k] = fill(&l->rng);
    }
    sem_init(&lanes_done, 0, 0);
    bench_usage_t u0 = bench_usage();
    for (unsigned i = 0; i < n_threads; i++) {
        lanes[i].generation = 1;
        if (pthread_create(&lanes[i].last, NULL, thread_main, &lanes[i]))
            bench_die("pthread_create failed");
    }
    for (unsigned i = 0; i < n_threads; i++)
        while (sem_wait(&lanes_done) != 0)
            ;
    for (unsigned i = 0; i < n_threads; i++)
        pthread_join(lanes[i].last, NULL);
    size_t rss_end = bench_rss_now();
    uint64_t t0 = UINT64_MAX, t1 = 0;
    for (unsigned i = 0; i < n_threads; i++) {
        if (lanes[i].start_ns < t0)
            t0 = lanes[i].start_ns;
        if (lanes[i].end_ns > t1)
            t1 = lanes[i].end_ns;
    }
    double secs = (double)(t1 - t0) / 1e9, total = (double)n_steps * n_gens * n_threads;
    printf("res case=larson_%u mops_per_s=%.3f ns_per_op=%.3f time_ms=%.2f peak_rss=%zu "
           "rss_end=%zu threads_created=%llu%s\n",
           n_threads, total / secs / 1e6, secs * 1e9 / total, secs * 1e3, bench_rss_peak(), rss_end,
           (unsigned long long)n_gens * n_threads, bench_usage_fields(&u0));
    for (unsigned i = 0; i < n_threads; i++) {
        for (uint64_t k = 0; k < n_slots; k++)
            free(lanes[i].slot[k]);
        free(lanes[i].slot);
    }
    free(lanes);
    return 0;
}
