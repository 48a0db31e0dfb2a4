/* SPDX-License-Identifier: MIT */
/* real.c - alloy-sim-real: replays alloy-sim's workload traces on the real
 * liballoy (linked statically, so every allocation of this process is
 * alloy's) and prints one CSV row of its counters on stdout.
 *
 *   alloy-sim-real --workload W --seed N [--warmup N --ops N --live N
 *                  --sample-every N] [--threads T] [--timing] [--clock] [--pin]
 *
 * Counting mode (the default, one thread) reads alloy_stats_read() when the
 * warm-up ends and at every sample point after it, exactly where the model
 * samples, so counters are "measured ops only" on both sides.  Timing mode
 * runs T threads, each replaying its own trace (seed * 1000 + thread), starts
 * them together, and reports the wall clock of the measured ops, the central
 * lock acquisitions that had to wait, and the peak RSS.
 * With --clock (counting mode), liballoy runs on the model's clock: before
 * op i its test clock (src/os.h, ay_os_clock_set) is set to sim_clock_ms(i)
 * (sim/model.h), the time the model gives that op, so that the rules on the
 * clock (the transfer caches' idle rule and decay rounds) fire at the same
 * op in both.
 * With --pin (counting mode), the process runs on the CPU it started on
 * only, so that a per-CPU build uses one cache (alloy-sim validate --percpu).
 * The policy comes from ALLOY_CONF, read by liballoy at start-up.
 * Invariant: nothing in the measured region allocates except the trace's own
 * requests (the slot tables are mmap'ed, output is formatted at the end).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1 /* sched_setaffinity, sched_getcpu */
#endif
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

#include "alloy.h"
#include "model.h"
#include "os.h"
#include "tcache.h"
#include "workload.h"

typedef struct real_args {
    sim_workload_t wl;
    uint64_t seed;
    sim_trace_params_t tp;
    unsigned threads;
    int timing;
    int clock; /* --clock: liballoy's clock is the model's */
    int pin;   /* --pin: on one CPU only */
} real_args_t;

typedef struct real_thread {
    const real_args_t *a;
    unsigned id;
    pthread_barrier_t *start;
    double t0, t1; /* measured region, seconds */
    uint64_t hash;
    int failed;
} real_thread_t;

static double real_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *real_map(size_t bytes) {
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static int real_stats(alloy_stats_t *s) {
    memset(s, 0, sizeof *s);
    s->size = sizeof *s;
    return alloy_stats_read(s);
}

/* Counting mode: one thread, stats at the same points as the model. */
static int real_count(const real_args_t *a) {
    /* the model's transfer caches, which liballoy's one live thread cache
     * would not use otherwise (src/tcache.h) */
    ay_tcache_test_use_transfer();
    if (a->pin) {
        cpu_set_t one;
        int cpu = sched_getcpu();
        CPU_ZERO(&one);
        CPU_SET(cpu >= 0 ? cpu : 0, &one);
        if (sched_setaffinity(0, sizeof one, &one)) {
            perror("alloy-sim-real: sched_setaffinity");
            return 1;
        }
    }
    sim_trace_t t;
    if (a->clock)
        ay_os_clock_set(sim_clock_ms(0)); /* from the trace's first allocation on */
    if (sim_trace_init(&t, a->wl, a->seed, &a->tp))
        return 1;
    void **slot = real_map(sizeof(void *) * t.max_live);
    if (!slot)
        return 1;
    alloy_stats_t s0, s;
    uint64_t total = sim_trace_total_ops(&a->tp), samples = 0;
    double sum_cached = 0, sum_tc = 0, sum_central = 0;
    if (a->tp.warmup_ops == 0)
        real_stats(&s0);
    for (uint64_t i = 0; i < total; i++) {
        sim_op_t op;
        if (a->clock)
            ay_os_clock_set(sim_clock_ms(i));
        sim_trace_next(&t, &op);
        if (op.kind == SIM_OP_ALLOC) {
            void *p = alloy_malloc(op.size);
            if (!p) {
                fprintf(stderr, "alloy-sim-real: malloc(%u) failed\n", op.size);
                return 1;
            }
            *(volatile char *)p = 1;
            slot[op.slot] = p;
        } else {
            alloy_free(slot[op.slot]);
        }
        if (i + 1 == a->tp.warmup_ops)
            real_stats(&s0);
        if (i + 1 > a->tp.warmup_ops && ((i + 1) % a->tp.sample_every == 0 || i + 1 == total)) {
            real_stats(&s);
            samples++;
            /* the model's central cache holds its spans' tails too (0 under
             * the paper's geometry, which leaves none) */
            sum_cached += (double)(s.tcache_bytes + s.central_bytes + s.span_tail_bytes);
            sum_tc += (double)s.tcache_bytes;
            sum_central += (double)(s.central_bytes + s.span_tail_bytes);
        }
    }
    real_stats(&s);
    double n = samples ? (double)samples : 1;
    printf("slow_path_calls,short_fetches,objects_fetched,objects_released,spans_allocated,"
           "spans_freed,mean_cached_bytes,mean_tcache_bytes,mean_central_bytes,final_active_bytes,"
           "final_pageheap_bytes,final_mapped_bytes,central_lock_contended,tcache_overflows,"
           "tcache_scavenges,percpu_caches,percpu_misses,percpu_overflows,percpu_scavenges,"
           "percpu_moves,percpu_drains,trace_hash\n");
    printf("%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
           ",%.3f,%.3f,%.3f,%zu,%zu,%zu,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
           ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%016" PRIx64 "\n",
           s.slow_path_calls - s0.slow_path_calls, s.short_fetches - s0.short_fetches,
           s.objects_fetched - s0.objects_fetched, s.objects_released - s0.objects_released,
           s.spans_allocated - s0.spans_allocated, s.spans_freed - s0.spans_freed, sum_cached / n,
           sum_tc / n, sum_central / n, s.active, s.pageheap_free_bytes + s.pageheap_purged_bytes,
           s.mapped, s.central_lock_contended - s0.central_lock_contended,
           s.tcache_overflows - s0.tcache_overflows, s.tcache_scavenges - s0.tcache_scavenges,
           s.percpu_caches, s.percpu_misses - s0.percpu_misses,
           s.percpu_overflows - s0.percpu_overflows, s.percpu_scavenges - s0.percpu_scavenges,
           s.percpu_moves - s0.percpu_moves, s.percpu_drains - s0.percpu_drains, t.hash);
    return 0;
}

static void *real_thread_main(void *arg) {
    real_thread_t *rt = arg;
    const real_args_t *a = rt->a;
    sim_trace_t t;
    if (sim_trace_init(&t, a->wl, a->seed * 1000 + rt->id, &a->tp)) {
        rt->failed = 1;
        pthread_barrier_wait(rt->start);
        return NULL;
    }
    void **slot = real_map(sizeof(void *) * t.max_live);
    uint64_t total = sim_trace_total_ops(&a->tp);
    pthread_barrier_wait(rt->start);
    if (!slot) {
        rt->failed = 1;
        return NULL;
    }
    for (uint64_t i = 0; i < total; i++) {
        sim_op_t op;
        if (i == a->tp.warmup_ops)
            rt->t0 = real_now();
        sim_trace_next(&t, &op);
        if (op.kind == SIM_OP_ALLOC) {
            char *p = alloy_malloc(op.size);
            if (!p) {
                rt->failed = 1;
                break;
            }
            p[0] = 1;
            slot[op.slot] = p;
        } else {
            alloy_free(slot[op.slot]);
        }
    }
    if (a->tp.warmup_ops >= total)
        rt->t0 = real_now();
    rt->t1 = real_now();
    rt->hash = t.hash;
    return NULL;
}

/* Timing mode: T threads, each its own trace, started together. */
static int real_time(const real_args_t *a) {
    real_thread_t rt[64];
    pthread_t tid[64];
    pthread_barrier_t start;
    alloy_stats_t s0, s;
    pthread_barrier_init(&start, NULL, a->threads);
    real_stats(&s0);
    memset(rt, 0, sizeof rt);
    for (unsigned i = 0; i < a->threads; i++) {
        rt[i].a = a;
        rt[i].id = i;
        rt[i].start = &start;
        if (pthread_create(&tid[i], NULL, real_thread_main, &rt[i])) {
            fprintf(stderr, "alloy-sim-real: cannot start thread %u\n", i);
            return 1;
        }
    }
    double t0 = 1e300, t1 = 0;
    int failed = 0;
    for (unsigned i = 0; i < a->threads; i++) {
        pthread_join(tid[i], NULL);
        failed |= rt[i].failed;
        if (rt[i].t0 < t0)
            t0 = rt[i].t0;
        if (rt[i].t1 > t1)
            t1 = rt[i].t1;
    }
    if (failed) {
        fprintf(stderr, "alloy-sim-real: a thread failed\n");
        return 1;
    }
    real_stats(&s);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("wall_seconds,slow_path_calls,short_fetches,central_lock_contended,max_rss_kib,"
           "final_mapped_bytes\n");
    printf("%.6f,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%ld,%zu\n", t1 - t0,
           s.slow_path_calls - s0.slow_path_calls, s.short_fetches - s0.short_fetches,
           s.central_lock_contended - s0.central_lock_contended, ru.ru_maxrss, s.mapped);
    return 0;
}

static int real_u64(const char *v, uint64_t lo, uint64_t hi, uint64_t *out) {
    char *end;
    unsigned long long x = strtoull(v, &end, 10);
    if (!*v || *end || *v == '-' || x < lo || x > hi)
        return -1;
    *out = x;
    return 0;
}

int main(int argc, char **argv) {
    real_args_t a;
    memset(&a, 0, sizeof a);
    a.wl = SIM_WL_COUNT;
    a.seed = 1;
    a.threads = 1;
    int have_tp = 0;
    uint64_t warmup = UINT64_MAX, ops = 0, live = 0, every = 0, v;
    for (int i = 1; i < argc; i++) {
        const char *k = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(k, "--timing")) {
            a.timing = 1;
            continue;
        }
        if (!strcmp(k, "--clock")) {
            a.clock = 1;
            continue;
        }
        if (!strcmp(k, "--pin")) {
            a.pin = 1;
            continue;
        }
        if (!val) {
            fprintf(stderr, "alloy-sim-real: option '%s' needs a value\n", k);
            return 2;
        }
        i++;
        if (!strcmp(k, "--workload")) {
            if (sim_workload_parse(val, &a.wl)) {
                fprintf(stderr, "alloy-sim-real: unknown workload '%s'\n", val);
                return 2;
            }
            continue;
        }
        uint64_t *dst = !strcmp(k, "--seed")           ? &a.seed
                        : !strcmp(k, "--warmup")       ? &warmup
                        : !strcmp(k, "--ops")          ? &ops
                        : !strcmp(k, "--live")         ? &live
                        : !strcmp(k, "--sample-every") ? &every
                        : !strcmp(k, "--threads")      ? &v
                                                       : NULL;
        if (!dst || real_u64(val, 0, UINT32_MAX, dst)) {
            fprintf(stderr, "alloy-sim-real: bad option '%s %s'\n", k, val);
            return 2;
        }
        if (!strcmp(k, "--threads")) {
            if (v < 1 || v > 64) {
                fprintf(stderr, "alloy-sim-real: --threads wants 1..64\n");
                return 2;
            }
            a.threads = (unsigned)v;
        }
        have_tp = 1;
    }
    (void)have_tp;
    if (a.wl == SIM_WL_COUNT) {
        fprintf(stderr, "usage: alloy-sim-real --workload W [--seed N --warmup N --ops N "
                        "--live N --sample-every N --threads T --timing --clock --pin]\n");
        return 2;
    }
    a.tp = sim_trace_default_params(a.wl);
    if (warmup != UINT64_MAX)
        a.tp.warmup_ops = (uint32_t)warmup;
    if (ops)
        a.tp.measure_ops = (uint32_t)ops;
    if (live)
        a.tp.live = (uint32_t)live;
    if (every)
        a.tp.sample_every = (uint32_t)every;
    if (a.timing && a.clock) {
        fprintf(stderr, "alloy-sim-real: --clock is for counting mode, not --timing\n");
        return 2;
    }
    return a.timing ? real_time(&a) : real_count(&a);
}
