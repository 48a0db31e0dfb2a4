/* SPDX-License-Identifier: MIT */
/* bench_large.c - large-block recycling: a few dozen blocks of several MiB stay
 * live, and one at a time is replaced by a new, zero-filled block.  Single-
 * threaded.
 *
 * K blocks (default 32) of random sizes in [MIN, MAX] (default 1-8 MiB,
 * uniform) are allocated and filled.  Then N times (default 2000) a random one
 * is freed and replaced by a new block of a new random size, zero-filled in
 * one of two ways, as programs do:
 *   -m calloc (case "calloc"): calloc, then one byte of every page written, as
 *      a program that goes on to use the block would (an allocator that
 *      hands out fresh pages need not clear them, but they fault when used);
 *   -m memset (case "memset"): malloc, then memset of the whole block.
 * This is where an allocator that maps every large block and unmaps it on
 * free pays a page fault per 4 KiB page on every replacement, while one that
 * keeps freed large blocks mapped reuses them.
 *
 * Reported for the replacement phase: CPU time (time_ms; wall_ms too), time
 * per replacement, page faults (and per replacement), peak RSS, and RSS at
 * the end.
 *
 * usage: bench_large [-m calloc|memset] [-k BLOCKS] [-n REPLACEMENTS] [-l MIN] [-u MAX] [-r SEED]
 */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int use_calloc = 1;
/* Called through a volatile pointer: otherwise the compiler turns
 * malloc + memset(0) into calloc, and the memset mode would measure calloc. */
static void *(*volatile clear_fn)(void *, int, size_t) = memset;

static void *new_block(size_t size) {
    unsigned char *p;
    if (use_calloc) {
        p = calloc(1, size);
        if (!p)
            bench_die("calloc(1, %zu) failed", size);
        bench_touch(p, size);
    } else {
        p = malloc(size);
        if (!p)
            bench_die("malloc(%zu) failed", size);
        clear_fn(p, 0, size);
    }
    bench_sink += p[size / 2];
    return p;
}

#define USAGE                                                                                      \
    "usage: bench_large [-m calloc|memset] [-k BLOCKS] [-n REPLACEMENTS] [-l MIN] "                \
    "[-u MAX] [-r SEED]"

static void parse_mode(const char *arg) {
    use_calloc = !bench_parse_mode(arg, "-m", "calloc", "memset");
}

int main(int argc, char **argv) {
    bench_init(argv[0]);
    uint64_t k = 32, n = 2000, lo = 1 << 20, hi = 8 << 20, rng = 11;
    const bench_opt_t opts[] = {
        BENCH_FN('m', parse_mode),
        BENCH_NUM('k', "-k blocks", 1, 100000, k),
        BENCH_NUM('n', "-n replacements", 1, 1000000000ull, n),
        BENCH_NUM('l', "-l min size", 1, 1ull << 32, lo),
        BENCH_NUM('u', "-u max size", 1, 1ull << 32, hi),
        BENCH_NUM('r', "-r seed", 0, UINT64_MAX, rng),
    };
    bench_options(argc, argv, USAGE, opts, sizeof opts / sizeof opts[0]);
    if (lo > hi)
        bench_die("-l min size %llu is above -u max size %llu", (unsigned long long)lo,
                  (unsigned long long)hi);

    void **blk = calloc(k, sizeof *blk);
    size_t *bsz = calloc(k, sizeof *bsz);
    if (!blk || !bsz)
        bench_die("out of memory for %llu blocks", (unsigned long long)k);
    size_t live = 0;
    for (uint64_t i = 0; i < k; i++) {
        bsz[i] = (size_t)bench_rand_range(&rng, lo, hi);
        blk[i] = new_block(bsz[i]);
        live += bsz[i];
    }
    bench_usage_t u0 = bench_usage();
    uint64_t t0 = bench_now_ns(), c0 = bench_cpu_ns();
    for (uint64_t i = 0; i < n; i++) {
        uint64_t j = bench_rand(&rng) % k;
        free(blk[j]);
        live -= bsz[j];
        bsz[j] = (size_t)bench_rand_range(&rng, lo, hi);
        blk[j] = new_block(bsz[j]);
        live += bsz[j];
    }
    uint64_t t1 = bench_now_ns(), c1 = bench_cpu_ns();
    bench_usage_t u1 = bench_usage();
    size_t rss_end = bench_rss_now();
    double ms = (double)(c1 - c0) / 1e6;
    printf("res case=%s time_ms=%.2f wall_ms=%.2f us_per_replace=%.2f faults_per_replace=%.1f "
           "peak_rss=%zu rss_end=%zu live_end=%zu%s\n",
           use_calloc ? "calloc" : "memset", ms, (double)(t1 - t0) / 1e6, ms * 1e3 / (double)n,
           (double)((u1.minflt + u1.majflt) - (u0.minflt + u0.majflt)) / (double)n,
           bench_rss_peak(), rss_end, live, bench_usage_fields(&u0));
    for (uint64_t i = 0; i < k; i++)
        free(blk[i]);
    free(blk);
    free(bsz);
    return 0;
}
