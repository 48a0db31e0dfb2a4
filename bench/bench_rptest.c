/* SPDX-License-Identifier: MIT */
/* bench_rptest.c - in the manner of rpmalloc's rptest: threads allocate a
 * mix of sizes, keep them for a while, and pass a share of them, in
 * batches, to other threads, which free them.
 *
 * T threads each run L loops.  A loop allocates B blocks (sizes log-uniform
 * in [MIN, MAX], default 16 B to 16 KiB; first and last bytes written) into
 * the thread's working set of W slots, freeing what each slot held; then it
 * passes every X-th slot's block (default every 4th, so a quarter of them)
 * to the next thread, as one batch through that thread's mailbox, and frees
 * the batches its own mailbox holds (blocks another thread allocated:
 * remote frees).  So a quarter of all frees are of blocks another thread
 * allocated, and they arrive in bursts.  A mailbox is a lock-free stack of
 * batches (each a malloc'd array, freed by the receiver too) that holds at
 * most MAILBOX_MAX of them: a sender whose receiver has that many waiting
 * empties its own mailbox and yields until there is room, and a thread that
 * has run its loops keeps emptying its mailbox until every thread has, so
 * that memory stays bounded however the threads are scheduled.
 *
 * Reported: wall time from the earliest thread start to the last end, ns per
 * allocation, peak RSS, page faults and context switches.
 *
 * usage: bench_rptest [-t THREADS] [-l LOOPS] [-b BLOCKS_PER_LOOP] [-w WORKING_SET]
 *                     [-x PASS_EVERY] [-s MIN] [-u MAX] [-r SEED]
 */
#include "common.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef struct batch {
    struct batch *next; /* in the mailbox */
    uint64_t n;
    void *block[];
} batch_t;

#define MAILBOX_MAX 4

typedef struct worker {
    _Alignas(64) batch_t *mailbox; /* batches from the previous thread */
    unsigned pending;              /* batches in it: + by the sender, - by the owner */
    _Alignas(64) unsigned index;
    uint64_t seed;
} worker_t;

static unsigned n_threads, pass_every;
static uint64_t n_loops, per_loop, ws_size, min_size, max_size;
static worker_t *workers;
static bench_team_t team;
static unsigned n_done; /* threads that have run all their loops */

/* Free every block in w's mailbox, and the batches that held them. */
static void mailbox_empty(worker_t *w) {
    batch_t *b = __atomic_exchange_n(&w->mailbox, NULL, __ATOMIC_ACQUIRE);
    unsigned n = 0;
    for (; b; n++) {
        batch_t *next = b->next;
        for (uint64_t i = 0; i < b->n; i++)
            free(b->block[i]);
        free(b);
        b = next;
    }
    __atomic_fetch_sub(&w->pending, n, __ATOMIC_RELAXED);
}

static void mailbox_send(worker_t *from, worker_t *to, batch_t *b) {
    while (__atomic_load_n(&to->pending, __ATOMIC_RELAXED) >= MAILBOX_MAX) {
        mailbox_empty(from); /* never wait while others wait for us */
        sched_yield();
    }
    __atomic_fetch_add(&to->pending, 1, __ATOMIC_RELAXED);
    batch_t *head = __atomic_load_n(&to->mailbox, __ATOMIC_RELAXED);
    do
        b->next = head;
    while (!__atomic_compare_exchange_n(&to->mailbox, &head, b, 1, __ATOMIC_RELEASE,
                                        __ATOMIC_RELAXED));
}

static void *worker_main(void *arg) {
    worker_t *w = arg;
    uint64_t rng = w->seed, head = 0;
    void **ws = calloc(ws_size, sizeof *ws);
    if (!ws)
        bench_die("out of memory for the working set");
    worker_t *next = &workers[(w->index + 1) % n_threads];
    bench_team_go(&team);
    for (uint64_t loop = 0; loop < n_loops; loop++) {
        for (uint64_t i = 0; i < per_loop; i++) {
            size_t sz = (size_t)bench_rand_log(&rng, min_size, max_size);
            unsigned char *p = malloc(sz);
            if (!p)
                bench_die("malloc(%zu) failed", sz);
            p[0] = p[sz - 1] = (unsigned char)i;
            void **slot = &ws[head++ % ws_size];
            free(*slot);
            *slot = p;
        }
        if (n_threads > 1) {
            uint64_t n = ws_size / pass_every, k = 0;
            batch_t *batch = malloc(sizeof *batch + n * sizeof batch->block[0]);
            if (!batch)
                bench_die("out of memory for a batch");
            for (uint64_t s = bench_rand(&rng) % pass_every; s < ws_size && k < n;
                 s += pass_every) {
                batch->block[k++] = ws[s];
                ws[s] = NULL;
            }
            batch->n = k;
            mailbox_send(w, next, batch);
        }
        mailbox_empty(w);
    }
    bench_team_end(&team);
    __atomic_fetch_add(&n_done, 1, __ATOMIC_RELEASE);
    while (__atomic_load_n(&n_done, __ATOMIC_ACQUIRE) < n_threads) {
        mailbox_empty(w); /* the previous thread may wait for room */
        sched_yield();
    }
    bench_team_done(&team); /* nothing is sent after this */
    mailbox_empty(w);
    for (uint64_t k = 0; k < ws_size; k++)
        free(ws[k]);
    free(ws);
    return NULL;
}

#define USAGE                                                                                      \
    "usage: bench_rptest [-t THREADS] [-l LOOPS] [-b BLOCKS_PER_LOOP] [-w WORKING_SET] "           \
    "[-x PASS_EVERY] [-s MIN] [-u MAX] [-r SEED]"

int main(int argc, char **argv) {
    bench_init(argv[0]);
    n_threads = 4;
    n_loops = 2000;
    per_loop = 500;
    ws_size = 1000;
    pass_every = 4;
    min_size = 16;
    max_size = 16384;
    uint64_t seed = 7;
    const bench_opt_t opts[] = {
        BENCH_NUM('t', "-t threads", 1, 1024, n_threads),
        BENCH_NUM('l', "-l loops", 1, 100000000, n_loops),
        BENCH_NUM('b', "-b blocks per loop", 1, 100000000, per_loop),
        BENCH_NUM('w', "-w working set", 1, 100000000, ws_size),
        BENCH_NUM('x', "-x pass every", 1, 1000000, pass_every),
        BENCH_NUM('s', "-s min size", 1, 1ull << 30, min_size),
        BENCH_NUM('u', "-u max size", 1, 1ull << 30, max_size),
        BENCH_NUM('r', "-r seed", 0, UINT64_MAX, seed),
    };
    bench_options(argc, argv, USAGE, opts, sizeof opts / sizeof opts[0]);
    if (min_size > max_size || pass_every > ws_size)
        bench_die("%s", USAGE);
    workers = aligned_alloc(64, n_threads * sizeof *workers);
    if (!workers)
        bench_die("out of memory");
    for (unsigned i = 0; i < n_threads; i++) {
        worker_t *w = &workers[i];
        w->mailbox = NULL;
        w->pending = 0;
        w->index = i;
        w->seed = seed * 1000003u + i;
    }
    bench_team_start(&team, n_threads, worker_main, workers, sizeof *workers);
    bench_team_wait_done(&team); /* every worker has run its loops */
    bench_team_release(&team);
    bench_team_join(&team);
    double secs = bench_team_secs(&team), total = (double)n_loops * per_loop * n_threads;
    printf("res case=rptest_t%u time_ms=%.2f ns_per_op=%.3f peak_rss=%zu cpu_ms=%.2f%s\n",
           n_threads, secs * 1e3, secs * 1e9 / total, bench_rss_peak(), team.cpu_ms,
           team.usage_fields);
    free(workers);
    return 0;
}
