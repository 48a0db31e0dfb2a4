/* SPDX-License-Identifier: MIT */
/* test_remote.c - cross-thread frees: blocks that a thread of one heap frees
 * for another go onto the freeing thread's lists, and from there in batches
 * through the transfer caches (transfer.h) to the threads that allocate, or
 * to their spans; nothing is lost on the way.  Run with ALLOY_CONF=heaps:2;
 * each thread chooses its heap (alloy_heap_set_default), so that producers
 * allocate from heap 0 and consumers free from heap 1.
 *   traffic  producers hand blocks (patterned) to consumers through rings;
 *            every block comes back intact, every one goes through a
 *            transfer cache (transfer_inserted grows by at least all of
 *            them), and at the end, after alloy_purge, stats.allocated is
 *            back to where it started and no byte is left in a transfer
 *            cache;
 *   exit     the same, but every producer exits while blocks are still on
 *            their way back, and every consumer exits with blocks of the
 *            other heap in its lists: nothing is lost (allocated back to the
 *            start after a purge);
 *   fork     the main thread forks while producers and consumers run; each
 *            child allocates, frees, purges and checks its counters' order
 *            (allocated <= active <= resident <= mapped) and exits 0;
 *   oom      consumers free while the OS refuses every new mapping: mallocs
 *            that need one fail with ENOMEM, the frees and the transfer
 *            caches need none, and once the OS gives memory again nothing
 *            was lost.
 * Usage: test_remote MODE [ROUNDS]  (only the alloy_* names are called) */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloy.h"
#include "alloy/heap.h"
#include "check.h"
#include "os.h"
#include "pattern.h"

#define PAIRS 2
#define RING 256 /* a power of two */
#define OBJS 20000

typedef struct ring {
    _Alignas(64) uint64_t head; /* written by the producer */
    _Alignas(64) uint64_t tail; /* written by the consumer */
    void *slot[RING];
    size_t size[RING];
} ring_t;

static ring_t rings[PAIRS];
static void *oom_blocks[2000];
static unsigned objs = OBJS;
static int corrupt, stop_fork;
static uint64_t made;

static int thread_failures; /* (threads do not CHECK: check.h's count is the main thread's) */

static void bind_heap(unsigned id) {
    if (alloy_heap_set_default(alloy_heap_from_id(id)) != 0)
        __atomic_add_fetch(&thread_failures, 1, __ATOMIC_RELAXED);
}

static void *producer(void *arg) {
    ring_t *r = arg;
    bind_heap(0);
    for (unsigned i = 0; i < objs; i++) {
        size_t size = 16 + (size_t)(i * 37 % 1000); /* many classes */
        unsigned char *p = alloy_malloc(size);
        if (!p) {
            i--;
            continue; /* (oom: the OS refuses, the next one may not) */
        }
        fill(p, 0, size, (unsigned)(uintptr_t)p);
        while (__atomic_load_n(&r->head, __ATOMIC_RELAXED) -
                   __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE) ==
               RING)
            sched_yield();
        uint64_t h = r->head;
        r->slot[h % RING] = p;
        r->size[h % RING] = size;
        __atomic_store_n(&r->head, h + 1, __ATOMIC_RELEASE);
        __atomic_add_fetch(&made, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

static void *consumer(void *arg) {
    ring_t *r = arg;
    bind_heap(1);
    for (unsigned i = 0; i < objs; i++) {
        while (__atomic_load_n(&r->tail, __ATOMIC_RELAXED) ==
               __atomic_load_n(&r->head, __ATOMIC_ACQUIRE))
            sched_yield();
        uint64_t t = r->tail;
        unsigned char *p = r->slot[t % RING];
        if (first_bad(p, r->size[t % RING], (unsigned)(uintptr_t)p) != r->size[t % RING])
            __atomic_add_fetch(&corrupt, 1, __ATOMIC_RELAXED);
        alloy_free(p); /* a block of heap 0: onto this thread's list, then a transfer cache */
        __atomic_store_n(&r->tail, t + 1, __ATOMIC_RELEASE);
    }
    return NULL; /* (exits with its last batches unsent: the exit sends them) */
}

static void run_pairs(void) {
    pthread_t p[PAIRS], c[PAIRS];
    memset(rings, 0, sizeof rings);
    for (int i = 0; i < PAIRS; i++) {
        CHECK(pthread_create(&p[i], NULL, producer, &rings[i]) == 0);
        CHECK(pthread_create(&c[i], NULL, consumer, &rings[i]) == 0);
    }
    for (int i = 0; i < PAIRS; i++) {
        pthread_join(p[i], NULL);
        pthread_join(c[i], NULL);
    }
}

static void *idle_thread(void *arg) {
    pthread_barrier_wait(arg);
    return NULL;
}

/* glibc keeps the stacks of exited threads for reuse, each with memory it
 * took from malloc (its TLS vector): make it keep as many as the test runs
 * at once before the starting point is read, so that the count ends where
 * it started. */
static void warm_threads(void) {
    enum { N = PAIRS * 2 + 2 };
    pthread_t t[N];
    pthread_barrier_t b;
    pthread_barrier_init(&b, NULL, N);
    for (int i = 0; i < N; i++)
        CHECK(pthread_create(&t[i], NULL, idle_thread, &b) == 0);
    for (int i = 0; i < N; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&b);
}

static alloy_stats_t stats(void) {
    alloy_thread_flush(); /* (the secure flavour's quarantine holds freed blocks) */
    alloy_stats_t s = {.size = sizeof s};
    CHECK(alloy_stats_read(&s) == 0);
    return s;
}

/* Nothing lost: after a purge, what is allocated is what was at the start,
 * and the transfer caches hold nothing (a purge sends their batches to the
 * spans). */
static void check_nothing_lost(const alloy_stats_t *s0) {
    CHECK_EQ_U(thread_failures, 0);
    alloy_thread_flush();
    alloy_purge();
    alloy_stats_t s = stats();
    if (s.allocated != s0->allocated || s.transfer_bytes != 0)
        fprintf(stderr, "allocated %zu (at the start %zu), transfer bytes %zu\n", s.allocated,
                s0->allocated, s.transfer_bytes);
    CHECK_EQ_U(s.allocated, s0->allocated);
    CHECK_EQ_U(s.transfer_bytes, 0);
    CHECK(s.allocated <= s.active && s.active <= s.resident && s.resident <= s.mapped);
}

static int traffic(unsigned rounds) {
    alloy_stats_t s0 = stats();
    for (unsigned k = 0; k < rounds; k++)
        run_pairs();
    CHECK_EQ_U(corrupt, 0);
    alloy_stats_t s = stats();
    /* every freed block went through a transfer cache: the consumers'
     * overflows, and their exits' flushes for the last ones */
    CHECK(s.transfer_inserted - s0.transfer_inserted >= (uint64_t)rounds * PAIRS * objs);
    check_nothing_lost(&s0);
    return CHECK_DONE();
}

static int exits(unsigned rounds) {
    alloy_stats_t s0 = stats();
    objs = 3000; /* short-lived threads: many batches in flight at each exit */
    for (unsigned k = 0; k < rounds * 10; k++)
        run_pairs();
    CHECK_EQ_U(corrupt, 0);
    check_nothing_lost(&s0);
    return CHECK_DONE();
}

static void *forker(void *arg) {
    (void)arg;
    while (!__atomic_load_n(&stop_fork, __ATOMIC_RELAXED)) {
        pid_t pid = fork();
        if (pid == 0) {
            /* the child: the other threads are gone, with whatever they held */
            void *p[64];
            for (int i = 0; i < 64; i++)
                p[i] = alloy_malloc(16 + (size_t)i * 24);
            for (int i = 0; i < 64; i++)
                alloy_free(p[i]);
            alloy_purge();
            alloy_stats_t s = {.size = sizeof s};
            int bad = alloy_stats_read(&s) != 0 || s.allocated > s.active ||
                      s.active > s.resident || s.resident > s.mapped;
            _exit(bad ? 3 : 0);
        }
        int status = -1;
        if (pid > 0)
            waitpid(pid, &status, 0);
        if (pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "fork child: status %#x\n", status);
            __atomic_add_fetch(&thread_failures, 1, __ATOMIC_RELAXED);
        }
        usleep(2000);
    }
    return NULL;
}

static int forks(unsigned rounds) {
    alloy_stats_t s0 = stats();
    pthread_t f;
    CHECK(pthread_create(&f, NULL, forker, NULL) == 0);
    for (unsigned k = 0; k < rounds; k++)
        run_pairs();
    __atomic_store_n(&stop_fork, 1, __ATOMIC_RELAXED);
    pthread_join(f, NULL);
    CHECK_EQ_U(corrupt, 0);
    check_nothing_lost(&s0);
    return CHECK_DONE();
}

static void *refused(void *arg) {
    (void)arg;
    bind_heap(1);
    ay_os_fail_next_maps(1u << 30); /* (the hook is the process's) */
    errno = 0;
    void *big = alloy_malloc(64u << 20); /* needs a mapping: refused */
    int e = errno;
    for (int i = 0; i < 2000; i++)
        alloy_free(oom_blocks[i]); /* heap 0's: onto this thread's lists, no memory needed */
    alloy_thread_flush();
    ay_os_fail_next_maps(0);
    return (void *)(uintptr_t)(big == NULL && e == ENOMEM ? 1 : 2);
}

static int oom(void) {
    alloy_stats_t s0 = stats();
    bind_heap(0);
    for (int i = 0; i < 2000; i++) {
        oom_blocks[i] = alloy_malloc(48);
        CHECK(oom_blocks[i] != NULL);
    }
    pthread_t t;
    void *r = NULL;
    CHECK(pthread_create(&t, NULL, refused, NULL) == 0);
    pthread_join(t, &r);
    CHECK(r == (void *)1);      /* NULL and ENOMEM */
    void *p = alloy_malloc(48); /* from a list, a transfer cache or a span: no mapping */
    CHECK(p != NULL);
    alloy_free(p);
    check_nothing_lost(&s0);
    return CHECK_DONE();
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    unsigned rounds = argc > 2 ? (unsigned)atoi(argv[2]) : 2;
    alarm(240);
    make_pattern();
    alloy_free(alloy_malloc(1)); /* set up */
    warm_threads();
    if (!strcmp(mode, "traffic"))
        return traffic(rounds);
    if (!strcmp(mode, "exit"))
        return exits(rounds);
    if (!strcmp(mode, "fork"))
        return forks(rounds);
    if (!strcmp(mode, "oom"))
        return oom();
    fprintf(stderr, "usage: test_remote traffic|exit|fork|oom [ROUNDS]\n");
    return 2;
}
