/* SPDX-License-Identifier: MIT */
/* hot_bench.c - seed 001's §5.1 single-thread table, reproduced: ns per
 * alloc/free of 8, 64, 512 and 4096 bytes with the global malloc, the pool,
 * the arena and the thread-local scratch arena (plus alloy's other hot-path
 * allocators as extra rows), printed beside the seed's numbers.
 *
 * One op is one allocation and its release, as in the seed's
 * BM_AllocDealloc loop (allocate, DoNotOptimize, deallocate):
 *   malloc        p = malloc(n); free(p)
 *   pool          p = alloy_pool_alloc(pool of n-byte slots); alloy_pool_free
 *   arena         p = alloy_arena_alloc(n, 8); every 64 ops alloy_arena_reset
 *                 (an arena has no per-object free: the reset is its free,
 *                 amortised over a batch as per-tick use does)
 *   tls arena     p = alloy_scratch_alloc(n, 8); every 64 ops rewind to a mark
 *   sync pool     alloy_sync_pool_alloc / alloy_sync_pool_free
 *   pool res      the unsynchronized pool resource through its vtable
 *   sync pool res the synchronized pool resource through its vtable
 * The pointer goes through an empty asm with a memory clobber (what
 * benchmark::DoNotOptimize does), so nothing is optimised away.
 *
 * Method: --rounds R rounds; each round runs every (row, size) cell once, in
 * the same order (A B C ... A B C ...), for --ops N ops.  A cell reports the
 * median over rounds with min and max, in ns of the thread's CPU time per op.
 * "malloc" is whatever malloc the process has: run under LD_PRELOAD to
 * measure a peer.
 *
 * usage: hot_bench [--ops N] [--rounds R] [--rows a,b,...] [--csv]
 */
#define _POSIX_C_SOURCE 200809L
#include <alloy/arena.h>
#include <alloy/pool.h>
#include <alloy/resource.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NSIZES 4
#define MAX_ROUNDS 99
#define ARENA_BATCH 64

static const size_t sizes[NSIZES] = {8, 64, 512, 4096};

static inline void escape(void *p) { __asm__ volatile("" : : "r"(p) : "memory"); }

/* The thread's CPU time: time spent descheduled on a busy machine does not
 * count (wall time would charge it to whichever cell was running). */
static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* ---- one function per row: run n ops of size sz, return ns per op ------- */

static double row_malloc(size_t sz, long n) {
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        void *p = malloc(sz);
        escape(p);
        free(p);
    }
    return (now_ns() - t0) / (double)n;
}

static double row_pool(size_t sz, long n) {
    alloy_pool_t pool;
    alloy_pool_config_t cfg = {.slot_size = sz, .slot_align = 8};
    if (alloy_pool_init(&pool, &cfg) != 0)
        abort();
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        void *p = alloy_pool_alloc(&pool);
        escape(p);
        alloy_pool_free(&pool, p);
    }
    double t = (now_ns() - t0) / (double)n;
    alloy_pool_destroy(&pool);
    return t;
}

static double row_arena(size_t sz, long n) {
    static _Alignas(64) unsigned char buf[ARENA_BATCH * 4096 + 64];
    alloy_arena_t a;
    alloy_arena_init(&a, buf, sizeof buf, alloy_malloc_resource());
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        void *p = alloy_arena_alloc(&a, sz, 8);
        escape(p);
        if ((i & (ARENA_BATCH - 1)) == ARENA_BATCH - 1)
            alloy_arena_reset(&a);
    }
    double t = (now_ns() - t0) / (double)n;
    alloy_arena_destroy(&a);
    return t;
}

static double row_tls(size_t sz, long n) {
    alloy_arena_mark_t m = alloy_scratch_mark();
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        void *p = alloy_scratch_alloc(sz, 8);
        escape(p);
        if ((i & (ARENA_BATCH - 1)) == ARENA_BATCH - 1)
            alloy_scratch_rewind(m);
    }
    double t = (now_ns() - t0) / (double)n;
    alloy_scratch_rewind(m);
    return t;
}

static double row_sync_pool(size_t sz, long n) {
    alloy_sync_pool_t pool;
    alloy_pool_config_t cfg = {.slot_size = sz, .slot_align = 8};
    if (alloy_sync_pool_init(&pool, &cfg) != 0)
        abort();
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        void *p = alloy_sync_pool_alloc(&pool);
        escape(p);
        alloy_sync_pool_free(&pool, p);
    }
    double t = (now_ns() - t0) / (double)n;
    alloy_sync_pool_destroy(&pool);
    return t;
}

static double row_resource(alloy_resource_t *r, size_t sz, long n) {
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        void *p = alloy_resource_allocate(r, sz, 8);
        escape(p);
        alloy_resource_deallocate(r, p, sz, 8);
    }
    return (now_ns() - t0) / (double)n;
}

static double row_pool_res(size_t sz, long n) {
    alloy_pool_resource_t pr;
    if (alloy_pool_resource_init(&pr, NULL, alloy_malloc_resource()) != 0)
        abort();
    double t = row_resource(alloy_pool_resource(&pr), sz, n);
    alloy_pool_resource_destroy(&pr);
    return t;
}

static double row_sync_pool_res(size_t sz, long n) {
    alloy_sync_pool_resource_t pr;
    if (alloy_sync_pool_resource_init(&pr, NULL, alloy_malloc_resource()) != 0)
        abort();
    double t = row_resource(alloy_sync_pool_resource(&pr), sz, n);
    alloy_sync_pool_resource_destroy(&pr);
    return t;
}

typedef struct row {
    const char *name;
    const char *seed_name; /* the seed's row, or NULL */
    double seed[NSIZES];   /* the seed's ns/op; < 0: N/A */
    double (*run)(size_t sz, long n);
} row_t;

static const row_t rows[] = {
    {"malloc", "标准分配器 (standard)", {25.3, 26.1, 28.7, 35.2}, row_malloc},
    {"pool", "对象池 (object pool)", {7.2, 7.5, 8.1, -1}, row_pool},
    {"arena", "线性分配器 (linear)", {3.1, 3.2, 3.3, 3.4}, row_arena},
    {"tls", "TLS分配器 (TLS)", {5.8, 6.0, 6.5, 8.7}, row_tls},
    {"sync_pool", NULL, {0}, row_sync_pool},
    {"pool_res", NULL, {0}, row_pool_res},
    {"sync_pool_res", NULL, {0}, row_sync_pool_res},
};
#define NROWS (sizeof rows / sizeof rows[0])

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void usage(void) {
    fprintf(stderr, "usage: hot_bench [--ops N] [--rounds R] [--rows a,b,...] [--csv]\n");
    exit(2);
}

int main(int argc, char **argv) {
    long ops = 2000000;
    int rounds = 7, csv = 0;
    int use[NROWS];
    for (size_t r = 0; r < NROWS; r++)
        use[r] = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--ops") == 0 && i + 1 < argc)
            ops = atol(argv[++i]);
        else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (strcmp(argv[i], "--csv") == 0)
            csv = 1;
        else if (strcmp(argv[i], "--rows") == 0 && i + 1 < argc) {
            const char *list = argv[++i];
            for (size_t r = 0; r < NROWS; r++) {
                const char *at = strstr(list, rows[r].name);
                size_t len = strlen(rows[r].name);
                use[r] = at != NULL && (at == list || at[-1] == ',') &&
                         (at[len] == ',' || at[len] == '\0');
            }
        } else
            usage();
    }
    if (ops < ARENA_BATCH || rounds < 1 || rounds > MAX_ROUNDS)
        usage();

    static double t[NROWS][NSIZES][MAX_ROUNDS];
    for (int k = 0; k < rounds; k++)
        for (size_t r = 0; r < NROWS; r++)
            for (int s = 0; s < NSIZES; s++)
                if (use[r])
                    t[r][s][k] = rows[r].run(sizes[s], ops);

    if (csv)
        printf("row,size,median_ns,min_ns,max_ns,rounds,ops\n");
    else
        printf("CPU ns per alloc+free, median (min-max) of %d interleaved rounds of %ld ops\n\n"
               "| allocator | 8 B | 64 B | 512 B | 4096 B |\n|---|---|---|---|---|\n",
               rounds, ops);
    for (size_t r = 0; r < NROWS; r++) {
        if (!use[r])
            continue;
        if (!csv)
            printf(r == 0 ? "| %s (this process's) |" : "| %s (alloy) |", rows[r].name);
        for (int s = 0; s < NSIZES; s++) {
            double *xs = t[r][s];
            qsort(xs, (size_t)rounds, sizeof *xs, cmp_double);
            double med = rounds % 2 ? xs[rounds / 2] : (xs[rounds / 2 - 1] + xs[rounds / 2]) / 2;
            if (csv)
                printf("%s,%zu,%.2f,%.2f,%.2f,%d,%ld\n", rows[r].name, sizes[s], med, xs[0],
                       xs[rounds - 1], rounds, ops);
            else
                printf(" %.1f (%.1f-%.1f) |", med, xs[0], xs[rounds - 1]);
        }
        if (!csv)
            printf("\n");
        if (!csv && rows[r].seed_name != NULL) {
            printf("| %s, seed 001 |", rows[r].seed_name);
            for (int s = 0; s < NSIZES; s++) {
                if (rows[r].seed[s] < 0)
                    printf(" N/A |");
                else
                    printf(" %.1f |", rows[r].seed[s]);
            }
            printf("\n");
        }
    }
    return 0;
}
