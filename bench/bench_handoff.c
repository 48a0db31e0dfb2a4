/* SPDX-License-Identifier: MIT */
/* bench_handoff.c - request processing with hand-off: T workers allocate
 * objects, keep a bounded working set, and hand a share of the objects to
 * another worker, which frees them.
 *
 * Each worker serves N requests.  A request allocates one object of a mixed
 * small size (16 B-2 KiB, log-uniform, so most are small) and writes it.
 * With probability H% (default 30) the object is handed to another worker,
 * chosen at random, through that worker's inbox (a lock-free stack the owner
 * empties every 32 requests, freeing everything in it: a remote free for the
 * allocator).  Otherwise it joins the worker's own working set, a ring of W
 * slots (default 1000): the oldest object there is freed to make room.  An
 * inbox is a bounded queue: a sender whose receiver already has W objects
 * waiting empties its own inbox and yields until there is room (with more
 * workers than CPUs a receiver that is not running would otherwise collect
 * objects without limit).  So each worker holds at most W objects of its own
 * and about W in its inbox, and every allocator serves the same sequence of
 * requests and hand-offs.  The objects' first word links them in the inbox,
 * so the hand-off itself allocates nothing.
 *
 * Reported: wall time from the earliest worker start to the last worker end,
 * ns per request, peak RSS, RSS at the end (before anything is torn down),
 * page faults, context switches, and the share really handed off.
 *
 * usage: bench_handoff [-t THREADS] [-n REQUESTS_PER_THREAD] [-w WORKING_SET] [-p HANDOFF_PCT]
 *                      [-r SEED]
 */
#include "common.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define DRAIN_EVERY 32

typedef struct obj {
    struct obj *next; /* inbox link, written by the sender */
} obj_t;

typedef struct worker {
    _Alignas(64) obj_t *inbox; /* pushed by others, emptied by the owner */
    uint64_t pending;          /* objects in the inbox: + by senders, - by the owner */
    _Alignas(64) unsigned index;
    uint64_t seed;
    uint64_t handed; /* objects this worker handed to others */
} worker_t;

static unsigned n_threads, handoff_pct;
static uint64_t n_requests, ws_size;
static worker_t *workers;
static bench_team_t team;
static unsigned n_done; /* workers that have served all their requests */

static void inbox_push(worker_t *to, obj_t *o) {
    obj_t *head = __atomic_load_n(&to->inbox, __ATOMIC_RELAXED);
    do
        o->next = head;
    while (
        !__atomic_compare_exchange_n(&to->inbox, &head, o, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
}

static void inbox_drain(worker_t *w) {
    obj_t *o = __atomic_exchange_n(&w->inbox, NULL, __ATOMIC_ACQUIRE);
    uint64_t n = 0;
    while (o) {
        obj_t *next = o->next;
        free(o);
        o = next;
        n++;
    }
    __atomic_fetch_sub(&w->pending, n, __ATOMIC_RELAXED);
}

static void *worker_main(void *arg) {
    worker_t *w = arg;
    uint64_t rng = w->seed, handed = 0;
    void **ring = calloc(ws_size, sizeof *ring);
    if (!ring)
        bench_die("out of memory for the working set");
    uint64_t head = 0;
    bench_team_go(&team);
    for (uint64_t i = 0; i < n_requests; i++) {
        size_t sz = (size_t)bench_rand_log(&rng, 16, 2048);
        unsigned char *p = malloc(sz);
        if (!p)
            bench_die("malloc(%zu) failed", sz);
        p[sz - 1] = (unsigned char)i;
        p[sizeof(obj_t)] = 1;
        if (n_threads > 1 && bench_rand(&rng) % 100 < handoff_pct) {
            worker_t *to =
                &workers[(w->index + 1 + bench_rand(&rng) % (n_threads - 1)) % n_threads];
            while (__atomic_load_n(&to->pending, __ATOMIC_RELAXED) >= ws_size) {
                inbox_drain(w); /* never wait while others wait for us */
                sched_yield();
            }
            __atomic_fetch_add(&to->pending, 1, __ATOMIC_RELAXED);
            inbox_push(to, (obj_t *)p);
            handed++;
        } else {
            void **slot = &ring[head++ % ws_size];
            free(*slot);
            *slot = p;
        }
        if (i % DRAIN_EVERY == DRAIN_EVERY - 1)
            inbox_drain(w);
    }
    bench_team_end(&team);
    w->handed = handed;
    /* Keep emptying the inbox until every worker is done: a sender may be
     * waiting for room in it.  The final RSS is read by main while every
     * working set is still live; nothing is handed off once every worker is
     * done, so the last drain below empties the inbox for good. */
    __atomic_fetch_add(&n_done, 1, __ATOMIC_RELEASE);
    while (__atomic_load_n(&n_done, __ATOMIC_ACQUIRE) < n_threads) {
        inbox_drain(w);
        sched_yield();
    }
    bench_team_done(&team);
    inbox_drain(w);
    for (uint64_t k = 0; k < ws_size; k++)
        free(ring[k]);
    free(ring);
    return NULL;
}

#define USAGE                                                                                      \
    "usage: bench_handoff [-t THREADS] [-n REQUESTS_PER_THREAD] [-w WORKING_SET] "                 \
    "[-p HANDOFF_PCT] [-r SEED]"

int main(int argc, char **argv) {
    bench_init(argv[0]);
    n_threads = 4;
    n_requests = 1000000;
    ws_size = 1000;
    handoff_pct = 30;
    uint64_t seed = 5;
    const bench_opt_t opts[] = {
        BENCH_NUM('t', "-t threads", 1, 1024, n_threads),
        BENCH_NUM('n', "-n requests", 1, 100000000000ull, n_requests),
        BENCH_NUM('w', "-w working set", 1, 100000000, ws_size),
        BENCH_NUM('p', "-p hand-off %", 0, 100, handoff_pct),
        BENCH_NUM('r', "-r seed", 0, UINT64_MAX, seed),
    };
    bench_options(argc, argv, USAGE, opts, sizeof opts / sizeof opts[0]);

    workers = aligned_alloc(64, n_threads * sizeof *workers);
    if (!workers)
        bench_die("out of memory");
    for (unsigned i = 0; i < n_threads; i++) {
        worker_t *w = &workers[i];
        w->inbox = NULL;
        w->pending = 0;
        w->index = i;
        w->seed = seed * 1000003u + i;
        w->handed = 0;
    }
    bench_team_start(&team, n_threads, worker_main, workers, sizeof *workers);
    bench_team_wait_done(&team); /* every worker has served its requests */
    size_t rss_end = bench_rss_now();
    bench_team_release(&team);
    bench_team_join(&team);
    uint64_t handed = 0;
    for (unsigned i = 0; i < n_threads; i++)
        handed += workers[i].handed;
    double secs = bench_team_secs(&team), total = (double)n_requests * n_threads;
    printf("res case=handoff_%u time_ms=%.2f ns_per_op=%.3f peak_rss=%zu rss_end=%zu "
           "handed_pct=%.1f cpu_ms=%.2f%s\n",
           handoff_pct, secs * 1e3, secs * 1e9 / total, bench_rss_peak(), rss_end,
           100.0 * (double)handed / total, team.cpu_ms, team.usage_fields);
    free(workers);
    return 0;
}
