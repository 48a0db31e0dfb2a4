/* SPDX-License-Identifier: MIT */
/* test_lazy_heaps.c - an automatic heap is set up when it is first used, so
 * that a program with few threads pays nothing for the heaps of the other
 * CPUs (issue 33): heap 0 at start, each other one when a thread first binds
 * to it or a caller names it for use (alloy_heap_from_id).  Run with
 * ALLOY_CONF=heaps:64,numa:false.
 *
 * A program that allocates from one thread has one heap set up, counted two
 * ways: the heaps in ay_heaps (internal; every automatic heap was there from
 * the start before) and heaps.set_up.  A heap not set up reads as zeros
 * (alloy_heap_stats_read, stats.heaps.<i>.*), and reading it does not set
 * it up; purging it does nothing, destroying it is EINVAL.  Threads that start together
 * each set up a heap of their own (the first ones with no thread: 1, 2,
 * ...), under heaps_lock; a forked child can set up another, and bind a
 * new thread (not with `no-child-thread`, for ThreadSanitizer). */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloy.h"
#include "alloy/ctl.h"
#include "alloy/heap.h"
#include "check.h"
#include "heap.h"

#define HEAPS 64
#define THREADS 8

/* Automatic heaps in ay_heaps (those set up), read directly. */
static unsigned in_table(void) {
    unsigned n = 0;
    for (unsigned i = 0; i < ay_heaps_auto; i++)
        n += ay_heap_get(i) != NULL;
    return n;
}

static unsigned set_up(void) {
    unsigned n = ~0u;
    size_t len = sizeof n;
    if (alloy_ctl("heaps.set_up", &n, &len, NULL, 0) != 0)
        return ~0u;
    return n;
}

static pthread_barrier_t barrier;
static unsigned thread_heap[THREADS]; /* (written by the threads, which CHECK nothing) */
static bool thread_ok[THREADS];

static void *worker(void *arg) {
    unsigned k = (unsigned)(size_t)arg;
    void *p = malloc(100); /* the first slow path binds the thread */
    thread_ok[k] = p != NULL;
    thread_heap[k] = alloy_heap_id(alloy_heap_get_default());
    pthread_barrier_wait(&barrier); /* all alive at once: each on a heap of its own */
    free(p);
    return NULL;
}

int main(int argc, char **argv) {
    bool child_thread = !(argc > 1 && !strcmp(argv[1], "no-child-thread"));
    void *p = malloc(16);
    CHECK(p != NULL);
    unsigned count = 0;
    size_t len = sizeof count;
    CHECK(alloy_ctl("heaps.count", &count, &len, NULL, 0) == 0);
    CHECK_EQ_U(count, HEAPS);
    fprintf(stderr, "one thread: %u of %u automatic heaps set up\n", in_table(), ay_heaps_auto);
    CHECK_EQ_U(in_table(), 1);
    CHECK_EQ_U(set_up(), 1);
    CHECK_EQ_U(alloy_heap_id(alloy_heap_get_default()), 0);

    /* heap 40 exists and reads as zeros, without being set up */
    alloy_stats_t s = {.size = sizeof s};
    CHECK(alloy_heap_stats_read(40, &s) == 0);
    CHECK_EQ_U(s.allocated + s.active + s.mapped + s.threads_live, 0);
    uint64_t v = 1;
    len = sizeof v;
    CHECK(alloy_ctl("stats.heaps.40.allocated", &v, &len, NULL, 0) == 0 && v == 0);
    unsigned node = 1;
    len = sizeof node;
    CHECK(alloy_ctl("stats.heaps.40.node", &node, &len, NULL, 0) == 0 && node == 0);
    CHECK(alloy_ctl("heap.40.purge", NULL, NULL, NULL, 0) == 0);
    CHECK(alloy_ctl("heap.40.destroy", NULL, NULL, NULL, 0) == EINVAL);
    CHECK(alloy_ctl("stats.heaps.64.allocated", &v, &len, NULL, 0) == ENOENT);
    CHECK(alloy_stats_read(&s) == 0 && s.allocated >= 16);
    CHECK(alloy_ctl("purge", NULL, NULL, NULL, 0) == 0);
    CHECK_EQ_U(set_up(), 1);

    /* named for use: set up, and usable */
    alloy_heap_t *h50 = alloy_heap_from_id(50);
    CHECK(h50 != NULL && alloy_heap_id(h50) == 50);
    CHECK_EQ_U(set_up(), 2);
    void *q = h50 ? alloy_heap_malloc(h50, 1000) : NULL;
    CHECK(q != NULL);
    s.size = sizeof s;
    CHECK(alloy_heap_stats_read(50, &s) == 0 && s.allocated >= 1000);
    alloy_heap_free(h50, q);

    /* threads alive at once: heaps 1 .. THREADS, set up concurrently */
    pthread_t t[THREADS];
    pthread_barrier_init(&barrier, NULL, THREADS);
    for (unsigned k = 0; k < THREADS; k++)
        CHECK(pthread_create(&t[k], NULL, worker, (void *)(size_t)k) == 0);
    for (unsigned k = 0; k < THREADS; k++)
        pthread_join(t[k], NULL);
    unsigned seen = 0; /* bit i: heap i had a thread */
    for (unsigned k = 0; k < THREADS; k++)
        if (thread_ok[k] && thread_heap[k] >= 1 && thread_heap[k] <= THREADS)
            seen |= 1u << thread_heap[k];
    CHECK_EQ_U(seen, ((1u << THREADS) - 1) << 1);
    CHECK_EQ_U(set_up(), 2 + THREADS);
    CHECK_EQ_U(in_table(), 2 + THREADS);

    /* fork: the prepare handler takes the locks of the heaps set up; in
     * the child a heap is set up (heaps_lock was reset) and a new thread
     * binds */
    pid_t pid = fork();
    if (pid == 0) {
        alloy_heap_t *h60 = alloy_heap_from_id(60);
        CHECK(h60 != NULL && set_up() == 3 + THREADS);
        void *r = h60 ? alloy_heap_malloc(h60, 5000) : NULL;
        CHECK(r != NULL);
        alloy_heap_free(h60, r);
        if (child_thread) {
            pthread_t c;
            pthread_barrier_init(&barrier, NULL, 1);
            CHECK(pthread_create(&c, NULL, worker, (void *)0) == 0 && pthread_join(c, NULL) == 0);
            CHECK(thread_ok[0] && thread_heap[0] == 1); /* the first heap with no thread */
        }
        CHECK(alloy_stats_read(&s) == 0);
        _exit(CHECK_DONE());
    }
    int st = 0;
    CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK_EQ_U(set_up(), 2 + THREADS);
    free(p);
    return CHECK_DONE();
}
