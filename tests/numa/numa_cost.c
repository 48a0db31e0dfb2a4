/* SPDX-License-Identifier: MIT */
/* numa_cost.c - what NUMA awareness costs a thread (docs/NUMA.md,
 * "What it costs").  Linked against the NUMA test flavour and run on the
 * two-node tree tests/numa/sysfs/two (CPU 0 on node 0, CPU 1 on node 1),
 * with ALLOY_CONF=numa:true or numa:false; not a test.
 *
 *   numa_cost getcpu N          ns per sched_getcpu (what one node check reads)
 *   numa_cost mbind N           ns per mbind(MPOL_PREFERRED, node 0) of a fresh 1 MiB map
 *   numa_cost slow N K          N rounds of malloc, malloc, free, free (64 bytes):
 *                               with ALLOY_CONF=batch_cap:1 nearly every call is a
 *                               slow-path event, so the node check shows; K as below
 *   numa_cost move N            N moves: fill the thread cache (4096 malloc(64) and
 *                               frees), move to the other CPU, then time each
 *                               malloc(64) one by one until the thread has moved
 *                               heaps: the slowest is the one that moved (flush,
 *                               unbind, bind); prints its median, and the bytes the
 *                               cache held
 *   numa_cost flush N           ns to flush a thread cache holding one full list of
 *                               64-byte objects (what a move at an overflow adds)
 *   numa_cost churn ROUNDS K    ROUNDS rounds of 4096 malloc(64) then 4096 frees,
 *                               which miss and overflow the thread cache: ns per
 *                               slow-path event; every K rounds (0: never) the
 *                               thread is moved to the other CPU, so with
 *                               numa:true it moves heaps (a flush) each time
 * Prints one line: key=value pairs.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sys/mman.h>

#include "alloy.h"
#include "alloy/ctl.h"
#include "heap.h"
#include "os.h"
#include "tcache.h"

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t rd(const char *name) {
    uint64_t v = 0;
    size_t len = sizeof v;
    alloy_ctl(name, &v, &len, NULL, 0);
    return v;
}

static void pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof set, &set);
}

#define BATCH 4096

static int cmp(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "getcpu")) {
        long n = atol(argv[2]);
        volatile int sink = 0;
        uint64_t t = now_ns();
        for (long i = 0; i < n; i++)
            sink += sched_getcpu();
        printf("getcpu_ns=%.2f\n", (double)(now_ns() - t) / (double)n);
        return 0;
    }
    if (argc == 3 && !strcmp(argv[1], "mbind")) {
        long n = atol(argv[2]);
        uint64_t spent = 0;
        int fails = 0;
        for (long i = 0; i < n; i++) {
            void *m =
                mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            uint64_t t = now_ns();
            fails += ay_os_bind_node(m, 1 << 20, 0) != 0;
            spent += now_ns() - t;
            munmap(m, 1 << 20);
        }
        printf("mbind_ns=%.0f failures=%d\n", (double)spent / (double)n, fails);
        return 0;
    }
    if (argc == 3 && !strcmp(argv[1], "move")) {
        long n = atol(argv[2]);
        static void *p[BATCH];
        static uint64_t took[1024], held[1024], miss[1 << 16];
        unsigned nmiss = 0;
        unsigned bin = ay_size_bin(64);
        int cpu = 0;
        pin(cpu);
        free(malloc(64)); /* bind, on CPU 0 */
        if (n > 1024)
            n = 1024;
        for (long m = 0; m < n; m++) {
            uint64_t moves = ay_heap_numa_moves();
            cpu ^= 1;
            pin(cpu);
            /* rounds of 4096 mallocs and frees until one call moves the thread:
             * time that call, and note how many objects the cache held */
            took[m] = 0;
            for (int round = 0; !took[m]; round++) {
                if (round == 1000) {
                    fprintf(stderr, "numa_cost: no move after 1000 rounds\n");
                    return 1;
                }
                for (int op = 0; op < 2 * BATCH; op++) {
                    uint64_t len = ay_bin_len(&ay_tcache_get()->bins[bin]), t = now_ns();
                    if (op < BATCH)
                        p[op] = malloc(64);
                    else
                        free(p[op - BATCH]);
                    uint64_t d = now_ns() - t;
                    if (!took[m] && ay_heap_numa_moves() != moves) {
                        took[m] = d;
                        held[m] = len * 64;
                    } else if (op < BATCH && len == 0 && nmiss < (1 << 16)) {
                        miss[nmiss++] = d; /* a miss that did not move */
                    }
                }
            }
        }
        qsort(took, (size_t)n, sizeof took[0], cmp);
        qsort(held, (size_t)n, sizeof held[0], cmp);
        qsort(miss, nmiss, sizeof miss[0], cmp);
        printf("moves=%llu move_ns_median=%llu move_ns_min=%llu cache_bytes_median=%llu "
               "other_miss_ns_median=%llu\n",
               (unsigned long long)ay_heap_numa_moves(), (unsigned long long)took[n / 2],
               (unsigned long long)took[0], (unsigned long long)held[n / 2],
               (unsigned long long)(nmiss ? miss[nmiss / 2] : 0));
        return 0;
    }
    if (argc == 3 && !strcmp(argv[1], "flush")) {
        long n = atol(argv[2]);
        static void *p[BATCH];
        static uint64_t took[1024];
        uint64_t bytes = 0;
        if (n > 1024)
            n = 1024;
        for (long m = 0; m < n; m++) {
            for (int i = 0; i < BATCH; i++)
                p[i] = malloc(64);
            for (int i = 0; i < BATCH; i++)
                free(p[i]);
            bytes += rd("thread.tcache.bytes");
            uint64_t t = now_ns();
            alloy_thread_flush();
            took[m] = now_ns() - t;
        }
        qsort(took, (size_t)n, sizeof took[0], cmp);
        printf("flush_ns_median=%llu cache_bytes_mean=%llu\n", (unsigned long long)took[n / 2],
               (unsigned long long)(bytes / (uint64_t)n));
        return 0;
    }
    bool slow = argc == 4 && !strcmp(argv[1], "slow");
    if (argc != 4 || (!slow && strcmp(argv[1], "churn"))) {
        fprintf(stderr, "usage: numa_cost getcpu N | mbind N | slow N K | churn ROUNDS K\n");
        return 2;
    }
    long rounds = atol(argv[2]), k = atol(argv[3]);
    static void *p[BATCH];
    int cpu = 0;
    pin(cpu);
    free(malloc(64)); /* bind */
    uint64_t ev0 = rd("stats.slow_path_calls") + rd("stats.tcache_overflows");
    uint64_t moves0 = rd("numa.moves"), pins = 0;
    uint64_t t = now_ns();
    for (long r = 0; r < rounds; r++) {
        if (k && r % k == k - 1) {
            cpu ^= 1;
            pin(cpu);
            pins++;
        }
        int batch = slow ? 2 : BATCH;
        for (int i = 0; i < batch; i++)
            p[i] = malloc(64);
        for (int i = 0; i < batch; i++)
            free(p[i]);
    }
    uint64_t ns = now_ns() - t;
    uint64_t ev = rd("stats.slow_path_calls") + rd("stats.tcache_overflows") - ev0;
    printf("rounds=%ld ns_per_round=%.0f events=%llu ns_per_event=%.1f pins=%llu moves=%llu\n",
           rounds, (double)ns / (double)rounds, (unsigned long long)ev,
           (double)ns / (double)(ev ? ev : 1), (unsigned long long)pins,
           (unsigned long long)(rd("numa.moves") - moves0));
    return 0;
}
