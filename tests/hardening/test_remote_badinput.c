/* SPDX-License-Identifier: MIT */
/* test_remote_badinput.c - bad frees that travel through the cross-thread
 * path (transfer.h) are caught as they are on the local one: at the bad free
 * in the debug and secure flavours, and in the release flavour at the latest
 * when the batch is formed or a malloc reaches the block, with the same
 * message.  Each case runs in a forked child (run with ALLOY_CONF=heaps:2);
 * thread A is bound to heap 0 and allocates, threads B and C to heap 1 and
 * free:
 *   double-batch   B frees p, q, p: p is twice in B's list;
 *   double-queue   B frees p and flushes it to the transfer cache, then C
 *                  frees p and flushes it too: p is in two batches there,
 *                  and A mallocs;
 *   interior       B frees p + 16, flushes, and A mallocs.
 * The child must abort with the expected text on stderr.  Every thread runs
 * on one CPU (below). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloy.h"
#include "alloy/heap.h"
#include "check.h"
#include "child.h"

#define SIZE 64

static void *p, *q;

static void bind_heap(unsigned id) {
    if (alloy_heap_set_default(alloy_heap_from_id(id)) != 0)
        abort();
}

static void *alloc_pq(void *arg) {
    (void)arg;
    bind_heap(0);
    p = alloy_malloc(SIZE);
    q = alloy_malloc(SIZE);
    return NULL;
}

/* A, on heap 0, allocates until its list of the class misses (and takes
 * a batch from the transfer cache), a few times over. */
static void *alloc_many(void *arg) {
    (void)arg;
    bind_heap(0);
    for (int i = 0; i < 20000; i++)
        alloy_malloc(SIZE);
    return NULL;
}

static void *double_batch(void *arg) {
    (void)arg;
    bind_heap(1);
    alloy_free(p);
    alloy_free(q);
    alloy_free(p);
    alloy_thread_flush(); /* what is left goes back, as a batch */
    return NULL;
}

static void *free_p_home(void *arg) {
    bind_heap(1);
    alloy_free((char *)p + (arg ? 16 : 0));
    alloy_thread_flush();
    return NULL;
}

static void run(void *(*fn)(void *), void *arg) {
    pthread_t t;
    if (pthread_create(&t, NULL, fn, arg) != 0)
        abort();
    pthread_join(t, NULL);
}

static void case_double_batch(void) {
    run(alloc_pq, NULL);
    run(double_batch, NULL);
    run(alloc_many, NULL);
}

static void case_double_queue(void) {
    run(alloc_pq, NULL);
    run(free_p_home, NULL); /* B */
    run(free_p_home, NULL); /* C */
    run(alloc_many, NULL);
}

static void case_interior(void) {
    run(alloc_pq, NULL);
    run(free_p_home, (void *)1);
    run(alloc_many, NULL);
}

static void expect_abort(const char *name, void (*fn)(void), const char *text) {
    char out[4096];
    int status = child_run(fn, out, sizeof out);
    int ok = status != -1 && WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT &&
             strstr(out, text) != NULL;
    fprintf(stderr, "%s: %s (wanted an abort with \"%s\"): %s", name, ok ? "ok" : "WRONG", text,
            out[0] ? out : "(nothing on stderr)\n");
    if (status != -1 && !WIFSIGNALED(status))
        fprintf(stderr, "%s: exited with %d\n", name, WEXITSTATUS(status));
    CHECK(ok);
}

int main(void) {
    /* every thread on one CPU: with per-CPU caches they then share one, so
     * that the blocks take the path each case follows (on two CPUs, a
     * block freed twice can wait in the other CPU's cache, which A's
     * mallocs never reach) */
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
            if (CPU_ISSET(cpu, &set)) {
                CPU_ZERO(&set);
                CPU_SET(cpu, &set);
                sched_setaffinity(0, sizeof set, &set);
                break;
            }
    alloy_free(alloy_malloc(1));
    expect_abort("double-batch", case_double_batch, "double free");
    expect_abort("double-queue", case_double_queue, "double free");
    expect_abort("interior", case_interior, "not the start of a block");
    return CHECK_DONE();
}
