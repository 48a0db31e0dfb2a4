/* SPDX-License-Identifier: MIT */
/* bench_realloc.c - growing vectors and strings through realloc.
 *
 * K buffers are live at once.  Each step picks one at random and grows it:
 * "strings" (even-numbered buffers) append 1-64 bytes and realloc to the exact
 * new length, as naive string builders do; "vectors" (odd-numbered) double
 * their capacity when full, as dynamic arrays do, and append 8-byte elements.
 * When a buffer passes its random final length (log-uniform, 64 B - MAX) it is
 * freed and starts again from nothing.  Appended bytes are really written, so
 * a realloc that moves pays for copying, as it would in a program.  Timed in
 * process CPU time (time_ms, ns_per_step); wall_ms too.
 *
 * usage: bench_realloc [-n STEPS] [-k BUFFERS] [-m MAX_BYTES] [-r SEED]
 */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct buf {
    char *data;
    size_t len, cap, final;
} buf_t;

#define USAGE "usage: bench_realloc [-n STEPS] [-k BUFFERS] [-m MAX_BYTES] [-r SEED]"

int main(int argc, char **argv) {
    bench_init(argv[0]);
    uint64_t steps = 2000000, k = 256, max = 1 << 20, rng = 3;
    const bench_opt_t opts[] = {
        BENCH_NUM('n', "-n steps", 1, 100000000000ull, steps),
        BENCH_NUM('k', "-k buffers", 1, 10000000, k),
        BENCH_NUM('m', "-m max bytes", 128, 1ull << 32, max),
        BENCH_NUM('r', "-r seed", 0, UINT64_MAX, rng),
    };
    bench_options(argc, argv, USAGE, opts, sizeof opts / sizeof opts[0]);

    buf_t *b = calloc(k, sizeof *b);
    if (!b)
        bench_die("out of memory");
    uint64_t reallocs = 0, moves = 0;
    bench_usage_t u0 = bench_usage();
    uint64_t t0 = bench_now_ns(), c0 = bench_cpu_ns();
    for (uint64_t s = 0; s < steps; s++) {
        uint64_t i = bench_rand(&rng) % k;
        buf_t *v = &b[i];
        if (v->final == 0)
            v->final = (size_t)bench_rand_log(&rng, 64, max);
        size_t add = (i & 1) ? 8 : (size_t)bench_rand_range(&rng, 1, 64);
        size_t need = v->len + add;
        if (need > v->cap) {
            size_t ncap = (i & 1) ? (v->cap ? v->cap * 2 : 16) : need;
            while (ncap < need)
                ncap *= 2;
            char *old = v->data;
            char *p = realloc(v->data, ncap);
            if (!p)
                bench_die("realloc(%zu) failed", ncap);
            reallocs++;
            moves += p != old && old != NULL;
            v->data = p;
            v->cap = ncap;
        }
        memset(v->data + v->len, (int)(s & 0x7f), add);
        v->len = need;
        if (v->len >= v->final) {
            bench_sink += (unsigned char)v->data[v->len / 2];
            free(v->data);
            memset(v, 0, sizeof *v);
        }
    }
    uint64_t t1 = bench_now_ns(), c1 = bench_cpu_ns();
    char usage_fields[256];
    snprintf(usage_fields, sizeof usage_fields, "%s", bench_usage_fields(&u0));
    size_t live = 0;
    for (uint64_t i = 0; i < k; i++) {
        live += b[i].cap;
        free(b[i].data);
    }
    double ns = (double)(c1 - c0);
    printf("res case=grow time_ms=%.2f wall_ms=%.2f ns_per_step=%.3f ns_per_realloc=%.3f "
           "reallocs=%llu "
           "moved_pct=%.1f peak_rss=%zu live_end=%zu%s\n",
           ns / 1e6, (double)(t1 - t0) / 1e6, ns / (double)steps,
           reallocs ? ns / (double)reallocs : 0.0, (unsigned long long)reallocs,
           reallocs ? 100.0 * (double)moves / (double)reallocs : 0.0, bench_rss_peak(), live,
           usage_fields);
    free(b);
    return 0;
}
