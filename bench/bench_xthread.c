/* SPDX-License-Identifier: MIT */
/* bench_xthread.c - producer/consumer: one thread allocates, another frees.
 *
 * P pairs of threads.  Each producer allocates N objects (random sizes in
 * [S/2, 2S], default S=64), writes them and hands them through a single-
 * producer single-consumer ring to its consumer, which reads and frees them.
 * Every free is therefore a remote free: the classic weak spot of designs
 * with per-thread caches (memory piles up in the wrong thread, or every free
 * takes a lock).  The producer publishes its writes every -b objects (default
 * 64) and the consumer frees everything published, so the two threads touch
 * the ring's indices once per batch rather than once per object: the cost
 * measured is the allocator's, not cache-line ping-pong on the ring.  A full
 * or empty ring spins briefly, then yields, so the run behaves sanely with
 * more threads than cores.
 *
 * usage: bench_xthread [-p PAIRS] [-n OBJECTS_PER_PRODUCER] [-s SIZE] [-q RING] [-b BATCH]
 */
#include "common.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef struct ring {
    _Alignas(64) uint64_t head; /* next slot the producer writes; producer owns */
    _Alignas(64) uint64_t tail; /* next slot the consumer reads; consumer owns */
    _Alignas(64) void **slots;
    uint64_t mask;
    uint64_t n;
    uint64_t seed;
    uint64_t checksum;
} ring_t;

/* A thread of the team: the producer or the consumer of a ring. */
typedef struct role {
    ring_t *ring;
    int consumer;
} role_t;

static size_t base_size;
static uint64_t batch = 64;
static bench_team_t team;

static void backoff(unsigned *spins) {
    if (++*spins > 64) {
        sched_yield();
        *spins = 0;
    }
}

static void *producer_main(void *arg) {
    ring_t *r = arg;
    uint64_t rng = r->seed;
    uint64_t head = 0;
    for (uint64_t i = 0; i < r->n; i++) {
        size_t sz =
            (size_t)bench_rand_range(&rng, base_size / 2 ? base_size / 2 : 1, base_size * 2);
        unsigned char *p = malloc(sz);
        if (!p)
            bench_die("malloc(%zu) failed", sz);
        p[0] = (unsigned char)i;
        p[sz - 1] = 1;
        unsigned spins = 0;
        while (head - __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE) > r->mask)
            backoff(&spins);
        r->slots[head & r->mask] = p;
        head++;
        if (head % batch == 0 || head == r->n)
            __atomic_store_n(&r->head, head, __ATOMIC_RELEASE);
    }
    return NULL;
}

static void *consumer_main(void *arg) {
    ring_t *r = arg;
    uint64_t tail = 0, sum = 0;
    while (tail < r->n) {
        unsigned spins = 0;
        uint64_t head;
        while ((head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE)) == tail)
            backoff(&spins);
        for (; tail < head; tail++) {
            unsigned char *p = r->slots[tail & r->mask];
            sum += p[0];
            free(p);
        }
        __atomic_store_n(&r->tail, tail, __ATOMIC_RELEASE);
    }
    r->checksum = sum;
    return NULL;
}

static void *role_main(void *arg) {
    const role_t *role = arg;
    bench_team_go(&team);
    if (role->consumer)
        consumer_main(role->ring);
    else
        producer_main(role->ring);
    bench_team_done(&team);
    return NULL;
}

#define USAGE                                                                                      \
    "usage: bench_xthread [-p PAIRS] [-n OBJECTS_PER_PRODUCER] [-s SIZE] [-q RING] "               \
    "[-b BATCH]"

int main(int argc, char **argv) {
    bench_init(argv[0]);
    uint64_t pairs = 1, n = 2000000, ring_size = 1024;
    base_size = 64;
    const bench_opt_t opts[] = {
        BENCH_NUM('p', "-p pairs", 1, 512, pairs),
        BENCH_NUM('n', "-n objects", 1, 100000000000ull, n),
        BENCH_NUM('s', "-s size", 1, 1 << 20, base_size),
        BENCH_NUM('q', "-q ring", 2, 1 << 24, ring_size),
        BENCH_NUM('b', "-b batch", 1, 1 << 24, batch),
    };
    bench_options(argc, argv, USAGE, opts, sizeof opts / sizeof opts[0]);
    if (ring_size & (ring_size - 1))
        bench_die("-q ring: %llu is not a power of two", (unsigned long long)ring_size);
    if (batch > ring_size)
        bench_die("-b batch: %llu is larger than the ring (%llu)", (unsigned long long)batch,
                  (unsigned long long)ring_size);

    ring_t *rings = aligned_alloc(64, pairs * sizeof *rings);
    if (!rings)
        bench_die("out of memory");
    role_t *roles = calloc(2 * pairs, sizeof *roles);
    if (!roles)
        bench_die("out of memory");
    for (uint64_t i = 0; i < pairs; i++) {
        ring_t *r = &rings[i];
        r->head = r->tail = 0;
        r->slots = calloc(ring_size, sizeof *r->slots);
        if (!r->slots)
            bench_die("out of memory");
        r->mask = ring_size - 1;
        r->n = n;
        r->seed = 99 + i;
        roles[2 * i] = (role_t){r, 0};
        roles[2 * i + 1] = (role_t){r, 1};
    }
    bench_team_start(&team, (unsigned)(2 * pairs), role_main, roles, sizeof *roles);
    bench_team_wait_done(&team);
    bench_team_release(&team);
    bench_team_join(&team);
    double secs = bench_team_secs(&team);
    uint64_t total = pairs * n;
    printf("res case=pairs_%llu mops_per_s=%.3f ns_per_op=%.3f time_ms=%.2f peak_rss=%zu "
           "cpu_ms=%.2f%s\n",
           (unsigned long long)pairs, (double)total / secs / 1e6, secs * 1e9 / (double)total,
           secs * 1e3, bench_rss_peak(), team.cpu_ms, team.usage_fields);
    for (uint64_t i = 0; i < pairs; i++)
        free(rings[i].slots);
    free(rings);
    free(roles);
    return 0;
}
