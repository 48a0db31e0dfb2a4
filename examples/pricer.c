/* SPDX-License-Identifier: MIT */
/* pricer.c - seed 000's worked example in C: a Monte Carlo price of a
 * European call (S0 4.20, K 4.30, r 0.024, sigma 0.18, T 0.5; 252 GBM steps
 * per path; std::mt19937_64 seeded with 42), in three variants that differ
 * only in where each path's 252 doubles live:
 *
 *   baseline  an alloy_vec_t on the malloc resource: one malloc and one free
 *             of 2016 bytes per path (the seed's std::vector<double>);
 *   arena     an alloy_vec_t on a monotonic resource over 4096 bytes of stack
 *             scratch, built and dropped per path (the seed's
 *             std::pmr::vector on monotonic_buffer_resource);
 *   pool      an alloy_vec_t on an unsynchronized pool resource made once
 *             per pricing (std::pmr::unsynchronized_pool_resource).
 *
 * The simulation kernel is shared, so the variants are the same arithmetic
 * in the same order; they must print the same %.17g price, and the program
 * exits 1 if any two prices differ in any bit.  The random numbers are
 * libstdc++'s (mc_rng.h), so the price also equals mc_reference's.
 *
 * Timing: --runs R runs the variants interleaved (A B C A B C ...) and
 * reports each one's median wall time with min and max; the arena speedup
 * is median(baseline) / median(arena).  Each run line also gives the
 * process CPU time, which a busy machine inflates less than wall time.
 *
 * usage: pricer [--paths N] [--runs R] [--variant all|baseline|arena|pool]
 *               [--selftest-mismatch]
 * --selftest-mismatch seeds the pool variant with 43 instead of 42, to show
 * that the bit-identity check fails when it should.
 */
#define _POSIX_C_SOURCE 200809L
#include <alloy/resource.h>
#include <alloy/vec.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mc_rng.h"

#define N_STEPS 252
#define S0 4.20
#define K 4.30
#define R 0.024
#define SIG 0.18
#define T 0.5
#define MAX_RUNS 64

enum { V_BASELINE, V_ARENA, V_POOL, V_COUNT };
static const char *const variant_names[V_COUNT] = {"baseline", "arena", "pool"};

static void die_nomem(void) {
    fprintf(stderr, "pricer: out of memory\n");
    exit(2);
}

/* The GBM kernel, shared by every variant: fill path[0..n) and return the
 * last price.  The expression is the seed's, term for term. */
static inline double gbm_fill(mc_mt64_t *rng, double s0, double r, double sigma, double t,
                              double *path, size_t n_steps) {
    double dt = t / (double)n_steps;
    double S = s0;
    mc_normal_t norm = mc_normal_make(0.0, 1.0); /* fresh per path, as in the seed */
    for (size_t k = 0; k < n_steps; ++k) {
        double z = mc_normal_next(&norm, rng);
        S *= exp((r - 0.5 * sigma * sigma) * dt + sigma * sqrt(dt) * z);
        path[k] = S;
    }
    return path[n_steps - 1];
}

/* A path vector on resource res: resize (zero-filled, like std::vector(n)),
 * simulate, read the last element, give the storage back. */
static double simulate_on(alloy_resource_t *res, mc_mt64_t *rng, size_t n_steps) {
    alloy_vec_t path;
    ALLOY_VEC_INIT(&path, double, res);
    if (alloy_vec_resize(&path, n_steps) != 0)
        die_nomem();
    double last = gbm_fill(rng, S0, R, SIG, T, ALLOY_VEC_ITEMS(&path, double), n_steps);
    alloy_vec_destroy(&path);
    return last;
}

static double simulate_baseline(mc_mt64_t *rng, void *ctx) {
    return simulate_on(alloy_malloc_resource(), rng, N_STEPS);
}

static double simulate_arena(mc_mt64_t *rng, void *ctx) {
    _Alignas(16) unsigned char scratch[4096];
    alloy_monotonic_t arena;
    alloy_monotonic_init(&arena, scratch, sizeof scratch, alloy_malloc_resource());
    double last = simulate_on(alloy_monotonic_resource(&arena), rng, N_STEPS);
    alloy_monotonic_destroy(&arena);
    return last;
}

static double simulate_pool(mc_mt64_t *rng, void *ctx) {
    return simulate_on(alloy_pool_resource(ctx), rng, N_STEPS);
}

typedef double simulate_fn(mc_mt64_t *rng, void *ctx);

static double price_with(simulate_fn *simulate, void *ctx, size_t n_paths, uint64_t seed) {
    static mc_mt64_t rng; /* 2.5 KiB: keep it off the stack */
    mc_mt64_seed(&rng, seed);
    double sum = 0.0;
    for (size_t i = 0; i < n_paths; ++i) {
        double ST = simulate(&rng, ctx);
        double payoff = ST - K;
        sum += payoff < 0.0 ? 0.0 : payoff; /* std::max(ST - K, 0.0) */
    }
    return exp(-R * T) * sum / (double)n_paths;
}

static double run_variant(int v, size_t n_paths, uint64_t seed) {
    if (v == V_BASELINE)
        return price_with(simulate_baseline, NULL, n_paths, seed);
    if (v == V_ARENA)
        return price_with(simulate_arena, NULL, n_paths, seed);
    alloy_pool_resource_t pool;
    if (alloy_pool_resource_init(&pool, NULL, alloy_malloc_resource()) != 0)
        die_nomem();
    double price = price_with(simulate_pool, &pool, n_paths, seed);
    alloy_pool_resource_destroy(&pool);
    return price;
}

static double clock_seconds(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *xs, int n) {
    qsort(xs, (size_t)n, sizeof *xs, cmp_double);
    return n % 2 ? xs[n / 2] : (xs[n / 2 - 1] + xs[n / 2]) / 2;
}

static void usage(void) {
    fprintf(stderr, "usage: pricer [--paths N] [--runs R] [--variant all|baseline|arena|pool]"
                    " [--selftest-mismatch]\n");
    exit(2);
}

int main(int argc, char **argv) {
    size_t n_paths = 1000000;
    int runs = 1, only = -1, mismatch = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--paths") == 0 && i + 1 < argc)
            n_paths = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (strcmp(argv[i], "--variant") == 0 && i + 1 < argc) {
            const char *name = argv[++i];
            only = -2;
            for (int v = 0; v < V_COUNT; v++)
                if (strcmp(name, variant_names[v]) == 0)
                    only = v;
            if (strcmp(name, "all") == 0)
                only = -1;
            if (only == -2)
                usage();
        } else if (strcmp(argv[i], "--selftest-mismatch") == 0)
            mismatch = 1;
        else
            usage();
    }
    if (n_paths == 0 || runs < 1 || runs > MAX_RUNS)
        usage();

    double prices[V_COUNT], times[V_COUNT][MAX_RUNS];
    int ran[V_COUNT] = {0};
    for (int run = 0; run < runs; run++) {
        for (int v = 0; v < V_COUNT; v++) {
            if (only >= 0 && v != only)
                continue;
            uint64_t seed = (mismatch && v == V_POOL) ? 43 : 42;
            double t0 = clock_seconds(CLOCK_MONOTONIC);
            double c0 = clock_seconds(CLOCK_PROCESS_CPUTIME_ID);
            double p = run_variant(v, n_paths, seed);
            double cpu = clock_seconds(CLOCK_PROCESS_CPUTIME_ID) - c0;
            times[v][run] = clock_seconds(CLOCK_MONOTONIC) - t0;
            printf("run %d %-8s price %.17g time %.6f s cpu %.6f s\n", run + 1, variant_names[v], p,
                   times[v][run], cpu);
            if (ran[v] && memcmp(&p, &prices[v], sizeof p) != 0) {
                fprintf(stderr, "pricer: %s is not deterministic\n", variant_names[v]);
                return 1;
            }
            prices[v] = p;
            ran[v] = 1;
        }
    }

    /* Paired ratios: each round's baseline over the same round's arena, so
     * that slow phases of a busy machine hit both sides of each ratio. */
    double ratios[MAX_RUNS];
    int have_pairs = ran[V_BASELINE] && ran[V_ARENA];
    for (int i = 0; have_pairs && i < runs; i++)
        ratios[i] = times[V_BASELINE][i] / times[V_ARENA][i];

    int first = -1, agree = 1;
    for (int v = 0; v < V_COUNT; v++) {
        if (!ran[v])
            continue;
        double lo = times[v][0], hi = times[v][0];
        for (int i = 1; i < runs; i++) {
            lo = times[v][i] < lo ? times[v][i] : lo;
            hi = times[v][i] > hi ? times[v][i] : hi;
        }
        double med = median(times[v], runs);
        times[v][0] = med; /* keep the median for the speedup below */
        printf("%-8s price %.17g median %.4f s (min %.4f, max %.4f, %d runs, %zu paths)\n",
               variant_names[v], prices[v], med, lo, hi, runs, n_paths);
        if (first < 0)
            first = v;
        else if (memcmp(&prices[v], &prices[first], sizeof prices[v]) != 0)
            agree = 0;
    }
    if (have_pairs) {
        printf("arena speedup over baseline: %.3fx (%.1f%% less time)\n",
               times[V_BASELINE][0] / times[V_ARENA][0],
               100.0 * (1.0 - times[V_ARENA][0] / times[V_BASELINE][0]));
        double lo = ratios[0], hi = ratios[0];
        for (int i = 1; i < runs; i++) {
            lo = ratios[i] < lo ? ratios[i] : lo;
            hi = ratios[i] > hi ? ratios[i] : hi;
        }
        printf("arena speedup, median of per-round ratios: %.4fx (min %.4f, max %.4f)\n",
               median(ratios, runs), lo, hi);
    }
    if (!agree) {
        fprintf(stderr, "pricer: FAIL: the variants' prices are not bit-identical\n");
        return 1;
    }
    printf("prices bit-identical across variants: yes\n");
    return 0;
}
