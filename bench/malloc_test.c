/* SPDX-License-Identifier: MIT */
/* malloc_test.c - the allocator comparison's §1: `malloc_test T N S`: T threads each allocate N
 * objects of S bytes (writing each), then free them all.
 *
 * The comparison's command is `perf stat -e L1-dcache-load-misses,cache-misses
 * ./malloc_test 100 1000000 16`; the runner wraps this program in `perf stat`
 * where hardware counters work.  Context switches come from getrusage either
 * way.  With -b BATCH a thread keeps at most BATCH objects live at once
 * (allocate BATCH, free BATCH, repeat), bounding memory for small machines;
 * the default keeps all N live, as the comparison does.
 *
 * usage: malloc_test [-b BATCH] T N S
 */
#include "common.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static uint64_t n_objs, batch;
static size_t obj_size;
static pthread_barrier_t start_barrier;
static uint64_t first_start = UINT64_MAX; /* earliest worker start, ns */

static void *worker_main(void *arg) {
    (void)arg;
    void **slots = malloc(batch * sizeof *slots);
    if (!slots)
        bench_die("out of memory for %llu slots", (unsigned long long)batch);
    pthread_barrier_wait(&start_barrier);
    uint64_t now = bench_now_ns(), seen = __atomic_load_n(&first_start, __ATOMIC_RELAXED);
    while (now < seen && !__atomic_compare_exchange_n(&first_start, &seen, now, 0, __ATOMIC_RELAXED,
                                                      __ATOMIC_RELAXED))
        ;
    for (uint64_t done = 0; done < n_objs;) {
        uint64_t k = n_objs - done < batch ? n_objs - done : batch;
        for (uint64_t i = 0; i < k; i++) {
            char *p = malloc(obj_size);
            if (!p)
                bench_die("malloc(%zu) failed", obj_size);
            p[0] = (char)i;
            slots[i] = p;
        }
        for (uint64_t i = 0; i < k; i++)
            free(slots[i]);
        done += k;
    }
    free(slots);
    return NULL;
}

static void usage(void) {
    bench_die("usage: malloc_test [-b BATCH] THREADS OBJECTS_PER_THREAD SIZE");
}

int main(int argc, char **argv) {
    bench_init(argv[0]);
    uint64_t b = 0;
    int c;
    while ((c = getopt(argc, argv, "b:h")) != -1) {
        switch (c) {
        case 'b': b = bench_parse_u64(optarg, "-b batch", 1, 1000000000ull); break;
        default: usage();
        }
    }
    if (argc - optind != 3)
        usage();
    unsigned t = (unsigned)bench_parse_u64(argv[optind], "THREADS", 1, 4096);
    n_objs = bench_parse_u64(argv[optind + 1], "OBJECTS_PER_THREAD", 1, 1000000000ull);
    obj_size = (size_t)bench_parse_u64(argv[optind + 2], "SIZE", 1, 1 << 30);
    batch = b && b < n_objs ? b : n_objs;

    pthread_t *tids = calloc(t, sizeof *tids);
    if (!tids)
        bench_die("out of memory");
    pthread_barrier_init(&start_barrier, NULL, t + 1);
    for (unsigned i = 0; i < t; i++)
        if (pthread_create(&tids[i], NULL, worker_main, NULL))
            bench_die("pthread_create failed for thread %u", i);
    bench_usage_t u0 = bench_usage();
    uint64_t cpu0 = bench_cpu_ns();
    pthread_barrier_wait(&start_barrier);
    for (unsigned i = 0; i < t; i++)
        pthread_join(tids[i], NULL);
    uint64_t t1 = bench_now_ns(), t0 = first_start;
    double secs = (double)(t1 - t0) / 1e9;
    printf("res case=T%u_N%llu_S%zu time_s=%.4f ns_per_obj=%.3f peak_rss=%zu cpu_ms=%.2f%s\n", t,
           (unsigned long long)n_objs, obj_size, secs, secs * 1e9 / ((double)n_objs * t),
           bench_rss_peak(), (double)(bench_cpu_ns() - cpu0) / 1e6, bench_usage_fields(&u0));
    free(tids);
    return 0;
}
