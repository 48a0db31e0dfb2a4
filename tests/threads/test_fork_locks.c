/* SPDX-License-Identifier: MIT */
/* test_fork_locks.c - fork while other threads hold, or keep taking, each of
 * alloy's locks; the child must be able to allocate and free of every kind.
 *
 * Usage: test_fork_locks MODE [forks]
 *   registry    threads that create and join short-lived threads (the
 *               thread-cache registry, and heaps_lock when they bind)
 *   heaps       threads that create, use and destroy explicit heaps, and
 *               rebind to automatic heaps (heaps_lock)
 *   pageheap    threads that allocate, free and purge large blocks and
 *               direct maps (each heap's page heap lock)
 *   central     threads that allocate and free small blocks across threads
 *               and flush their caches (the central caches' locks)
 *   background  the central and page-heap churn with the background purging
 *               thread running (ctest sets ALLOY_CONF=background_thread:true)
 * The parent forks `forks` times (100) while the threads run.  Each child
 * arms alarm(), so a lock left held fails the test (SIGALRM) instead of
 * hanging it, does its work, and exits 0 only if everything succeeded. */
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloy.h"
#include "alloy/ctl.h"
#include "alloy/heap.h"
#include "check.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

static volatile int stop;
static volatile int paused;   /* while a child runs: leave it the CPUs */
static unsigned long churned; /* iterations done by the churn threads */

/* End of a churn iteration: count it, and wait while a child runs (the fork
 * itself happens while the threads are busy). */
static void count(void) {
    __atomic_add_fetch(&churned, 1, __ATOMIC_RELAXED);
    while (paused && !stop)
        usleep(100);
}

/* ---- the churn threads ---- */

static void *short_lived(void *arg) {
    void *p[8];
    for (int i = 0; i < 8; i++)
        p[i] = alloy_malloc(16 + (size_t)i * 200);
    for (int i = 0; i < 8; i++)
        alloy_free(p[i]);
    return arg;
}

static void *churn_registry(void *arg) {
    while (!stop) {
        pthread_t t;
        if (pthread_create(&t, NULL, short_lived, NULL) == 0)
            pthread_join(t, NULL);
        alloy_stats_t s = {.size = sizeof s}; /* reads the registry too */
        alloy_stats_read(&s);
        count();
    }
    return arg;
}

static void *churn_heaps(void *arg) {
    unsigned n = 0;
    while (!stop) {
        alloy_heap_t *h = alloy_heap_create();
        if (h) {
            void *p[6];
            for (int i = 0; i < 6; i++)
                p[i] = alloy_heap_malloc(h, i == 5 ? 300000 : 32 + (size_t)i * 1000);
            alloy_heap_free(h, p[0]);
            alloy_heap_destroy(h); /* the rest go with the heap */
        }
        unsigned id = n++ % 2; /* rebinding takes heaps_lock as well */
        alloy_ctl("thread.heap", NULL, NULL, &id, sizeof id);
        count();
    }
    return arg;
}

static void *churn_pageheap(void *arg) {
    unsigned n = (unsigned)(uintptr_t)arg;
    while (!stop) {
        void *p[4];
        for (int i = 0; i < 4; i++)
            p[i] = alloy_malloc(i == 3 ? 2 * MiB + n % 7 * 4096
                                       : 256 * KiB + 1 +
                                             (n * 4099 + (unsigned)i * 65537) % (700 * KiB));
        for (int i = 0; i < 4; i++)
            alloy_free(p[i]);
        if (++n % 64 == 0)
            alloy_purge();
        count();
    }
    return NULL;
}

#define XN 256
static void *exchange[XN]; /* blocks left for the other central thread to free */
static pthread_mutex_t xlock = PTHREAD_MUTEX_INITIALIZER;

static void *churn_central(void *arg) {
    unsigned n = (unsigned)(uintptr_t)arg * 1000;
    void *mine[XN];
    while (!stop) {
        for (int i = 0; i < XN; i++)
            mine[i] = alloy_malloc(8 + (n++ * 37) % 3000);
        pthread_mutex_lock(&xlock); /* swap half of them with what is there */
        for (int i = 0; i < XN / 2; i++) {
            void *there = exchange[i];
            exchange[i] = mine[i];
            mine[i] = there;
        }
        pthread_mutex_unlock(&xlock);
        for (int i = 0; i < XN; i++)
            alloy_free(mine[i]); /* some of them the other thread's */
        alloy_thread_flush();
        count();
    }
    return NULL;
}

/* ---- the child ---- */

static void *child_thread(void *arg) {
    void *p = alloy_malloc(100);
    *(int *)arg = p != NULL;
    alloy_free(p);
    return NULL;
}

/* Everything a process does with its allocator; returns 0 or the number of
 * the step that failed. */
static int child_work(void) {
    static const size_t sizes[] = {0,     1,     16,     100,    384, 1000,    4096,
                                   20000, 70000, 262144, 300000, MiB, 2 * MiB, 5 * MiB};
    enum { N = sizeof sizes / sizeof sizes[0] };
    void *p[N][4];
    for (unsigned k = 0; k < N; k++)
        for (int i = 0; i < 4; i++) {
            p[k][i] = i == 3 ? alloy_calloc(1, sizes[k]) : alloy_malloc(sizes[k]);
            if (!p[k][i])
                return 1;
            memset(p[k][i], 0x33, sizes[k] < 4096 ? sizes[k] : 4096);
        }
    for (unsigned k = 0; k < N; k++) {
        p[k][0] = alloy_realloc(p[k][0], sizes[k] * 2 + 10);
        if (!p[k][0] || (sizes[k] && ((unsigned char *)p[k][0])[0] != 0x33))
            return 2;
    }
    for (unsigned k = 0; k < N; k++)
        for (int i = 0; i < 4; i++)
            alloy_free(p[k][i]);
    alloy_thread_flush();
    alloy_purge();

    int ok = 0; /* a new thread: registry, heap binding, thread exit */
    pthread_t t;
    if (pthread_create(&t, NULL, child_thread, &ok) != 0)
        return 3;
    pthread_join(t, NULL);
    if (!ok)
        return 4;

    alloy_heap_t *h = alloy_heap_create(); /* heaps_lock */
    if (!h)
        return 5;
    void *a = alloy_heap_malloc(h, 5000), *b = alloy_heap_malloc(h, 500000);
    if (!a || !b)
        return 6;
    alloy_heap_free(h, a);
    if (alloy_heap_destroy(h) != 0)
        return 7;

    alloy_stats_t s = {.size = sizeof s};
    if (alloy_stats_read(&s) != 0 ||
        !(s.allocated <= s.active && s.active <= s.resident && s.resident <= s.mapped))
        return 8;
    uint64_t epoch = 1;
    size_t len = sizeof epoch;
    if (alloy_ctl("epoch", &epoch, &len, &epoch, sizeof epoch) != 0)
        return 9;
    return 0;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "central";
    int forks = argc > 2 ? atoi(argv[2]) : 100;
    void *(*fn)(void *) = NULL;
    void *(*fn2)(void *) = NULL;
    if (!strcmp(mode, "registry"))
        fn = churn_registry;
    else if (!strcmp(mode, "heaps"))
        fn = churn_heaps;
    else if (!strcmp(mode, "pageheap"))
        fn = churn_pageheap;
    else if (!strcmp(mode, "central"))
        fn = churn_central;
    else if (!strcmp(mode, "background"))
        fn = churn_central, fn2 = churn_pageheap;
    if (!fn) {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    if (!strcmp(mode, "background")) {
        bool on = false;
        size_t len = sizeof on;
        CHECK(alloy_ctl("background_thread", &on, &len, NULL, 0) == 0 && on);
    }
    alarm(120); /* the parent too: a deadlock in fork's prepare handler fails */

    pthread_t t[3];
    int nt = fn2 ? 3 : 2;
    for (int i = 0; i < nt; i++)
        pthread_create(&t[i], NULL, i == 2 ? fn2 : fn, (void *)(uintptr_t)i);
    while (__atomic_load_n(&churned, __ATOMIC_RELAXED) < 10)
        usleep(1000);

    int failures = 0;
    for (int round = 0; round < forks; round++) {
        unsigned long before = __atomic_load_n(&churned, __ATOMIC_RELAXED);
        pid_t pid = fork();
        if (pid == 0) {
            alarm(10);
            _exit(child_work());
        }
        paused = 1;
        int status = -1;
        CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
        paused = 0;
        int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        if (!ok && failures++ < 5) {
            if (WIFSIGNALED(status))
                fprintf(stderr, "fork %d: child killed by signal %d%s\n", round, WTERMSIG(status),
                        WTERMSIG(status) == SIGALRM ? " (deadlock)" : "");
            else
                fprintf(stderr, "fork %d: child failed at step %d\n", round, WEXITSTATUS(status));
        }
        CHECK(ok);
        /* let the churn threads get back inside their locks */
        while (__atomic_load_n(&churned, __ATOMIC_RELAXED) == before)
            sched_yield();
    }
    stop = 1;
    for (int i = 0; i < nt; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < XN; i++)
        alloy_free(exchange[i]);

    /* the parent is fine too */
    CHECK_EQ_U(child_work(), 0);
    alloy_thread_flush();
    alloy_stats_t s = {.size = sizeof s};
    CHECK(alloy_stats_read(&s) == 0);
    CHECK(s.allocated <= s.active && s.active <= s.resident && s.resident <= s.mapped);
    if (s.allocated >= MiB)
        fprintf(stderr, "allocated %zu after every block was freed\n", s.allocated);
    CHECK(s.allocated < MiB);
    fprintf(stderr, "%s: %d forks, %lu churn iterations\n", mode, forks, churned);
    return CHECK_DONE();
}
