/* SPDX-License-Identifier: MIT */
/* test_percpu.c - the first tier under the conditions that break a per-CPU
 * cache whose sequences are wrong: far more threads than CPUs, threads
 * moved between CPUs mid-loop, a signal handler that allocates while the
 * code it interrupted is inside a sequence, fork from a threaded program,
 * and threads that exit while their CPU's cache holds their blocks.
 *
 *   test_percpu mode auto|thread     the first tier that runs is thread
 *                                    caches, or (auto) the one percpu:auto
 *                                    gives on this machine
 *   test_percpu migrate [THREADS [percpu [TRIES]]]
 *                                    threads pass patterned blocks to each
 *                                    other and move between CPUs (the
 *                                    workloads in a child: TRIES of them,
 *                                    one after another, until one finds
 *                                    the lists corrupted; 1 by default)
 *   test_percpu signal               SIGALRM every 50 us; its handler
 *                                    allocates, fills, checks and frees
 *   test_percpu fork                 threads allocate while the main thread
 *                                    forks; each child allocates at once
 *   test_percpu exit                 threads free into their CPU's cache and
 *                                    exit; the main thread takes the blocks
 *   test_percpu drain                threads allocate and free at full
 *                                    speed while another drains every
 *                                    CPU's cache, again and again
 *   test_percpu heap                 a thread whose default heap is an
 *                                    explicit one: its mallocs come from
 *                                    that heap, not from its CPU's cache,
 *                                    which holds blocks of heap 0
 *   test_percpu twice                a block freed twice (another free
 *                                    between): one copy goes to its span
 *                                    by an overflow, the other with its
 *                                    CPU's cache at a flush: alloy must
 *                                    abort ("double free") there; exits 3
 *                                    if nothing caught it, 77 with thread
 *                                    caches
 *   test_percpu touch [32]           per CPU: 4000 blocks of 1 KiB (or 100
 *                                    of each of 32 sizes) grow the resident
 *                                    set by at most 80 KiB (416) more than
 *                                    their own bytes (a cache writes only
 *                                    the never-used objects it is about to
 *                                    hand out, and its lists share pages
 *                                    of slots)
 *
 * Each workload runs in a child process; a child that dies (alloy's abort
 * on a block handed out twice, a crash) or finds a pattern broken makes the
 * test print "per-CPU lists corrupted" and exit 1, the one failure that a
 * build whose sequences are not armed shows (tests/threads/CMakeLists.txt).
 * The signal workload needs the per-CPU mode (thread caches are not
 * async-signal-safe): with thread caches it exits 77 (skipped). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sys/auxv.h>

#include "alloy.h"
#include "alloy/ctl.h"
#include "alloy/heap.h"
#include "check.h"

#define AT_RSEQ_FEATURE_SIZE_ 27
extern const unsigned int __rseq_size __attribute__((weak));

static int rseq_registered(void) { return &__rseq_size != NULL && __rseq_size != 0; }

#define SLOTS 64

static int ncpus;
static volatile int corrupt;

static size_t size_of(unsigned i) { return 16 + (i * 37) % 500; }

/* A block of `size` bytes filled with a pattern made from tag. */
static unsigned char *make(size_t size, unsigned tag) {
    unsigned char *p = malloc(size);
    if (!p)
        return NULL;
    memset(p, (int)(tag & 0xff), size);
    memcpy(p, &size, sizeof size);
    return p;
}

/* Is p's pattern whole?  Then free it. */
static void check_free(unsigned char *p, unsigned tag) {
    size_t size;
    memcpy(&size, p, sizeof size);
    for (size_t i = sizeof size; i < size; i++)
        if (p[i] != (unsigned char)(tag & 0xff)) {
            corrupt = 1;
            break;
        }
    free(p);
}

static const char *mode_now(void) {
    static char buf[32];
    const char *s = NULL;
    size_t len = sizeof s;
    if (alloy_ctl("percpu.mode", &s, &len, NULL, 0) != 0 || !s)
        return "?";
    snprintf(buf, sizeof buf, "%s", s);
    return buf;
}

/* ---- migrate: threads far beyond the CPUs, moved between them ---- */

typedef struct mailbox {
    pthread_mutex_t lock;
    unsigned char *p[SLOTS];
    unsigned tag[SLOTS];
    int n;
} mailbox_t;

static mailbox_t *boxes;
static int nthreads;
static int rounds = 3000;

static void *migrate_worker(void *arg) {
    unsigned id = (unsigned)(uintptr_t)arg, seed = id * 2654435761u;
    unsigned char *mine[16];
    for (int r = 0; r < rounds; r++) {
        if (r % 100 == 0) { /* move to another CPU mid-loop */
            cpu_set_t set;
            CPU_ZERO(&set);
            CPU_SET((int)((id + (unsigned)r / 100) % (unsigned)ncpus), &set);
            sched_setaffinity(0, sizeof set, &set);
        }
        for (unsigned i = 0; i < 16; i++)
            mine[i] = make(size_of(seed + i), id + i);
        /* half go to another thread's mailbox, to be freed there */
        mailbox_t *b = &boxes[(id + 1 + seed % 7) % (unsigned)nthreads];
        pthread_mutex_lock(&b->lock);
        for (unsigned i = 0; i < 8 && b->n < SLOTS; i++) {
            b->p[b->n] = mine[i];
            b->tag[b->n++] = id + i;
            mine[i] = NULL;
        }
        pthread_mutex_unlock(&b->lock);
        for (unsigned i = 0; i < 16; i++)
            if (mine[i])
                check_free(mine[i], id + i);
        mailbox_t *own = &boxes[id];
        pthread_mutex_lock(&own->lock);
        while (own->n > 0) {
            own->n--;
            check_free(own->p[own->n], own->tag[own->n]);
        }
        pthread_mutex_unlock(&own->lock);
        seed = seed * 1103515245u + 12345u;
    }
    return NULL;
}

static int run_migrate(int threads) {
    nthreads = threads;
    boxes = calloc((size_t)threads, sizeof *boxes);
    pthread_t *t = calloc((size_t)threads, sizeof *t);
    if (!boxes || !t)
        return 1;
    for (int i = 0; i < threads; i++)
        pthread_mutex_init(&boxes[i].lock, NULL);
    for (int i = 0; i < threads; i++)
        if (pthread_create(&t[i], NULL, migrate_worker, (void *)(uintptr_t)i) != 0)
            return 1;
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < threads; i++)
        while (boxes[i].n > 0) {
            boxes[i].n--;
            check_free(boxes[i].p[boxes[i].n], boxes[i].tag[boxes[i].n]);
        }
    /* every cache given back, nothing lost: what is allocated is this
     * process's own few blocks */
    alloy_thread_flush();
    alloy_stats_t st = {.size = sizeof st};
    CHECK(alloy_stats_read(&st) == 0);
    CHECK_EQ_U(st.tcache_bytes, 0);
    CHECK(st.allocated < (1u << 20));
    free(t);
    free(boxes);
    return corrupt ? 1 : CHECK_DONE();
}

/* ---- signal: a handler that allocates inside the interrupted sequences ---- */

static volatile sig_atomic_t handled;

/* The handler keeps the blocks it made for a while (each call frees the one
 * it made 8 calls ago, then makes another): so a call changes the lists the
 * interrupted code was reading, instead of leaving them as they were. */
static unsigned char *stash[8];

static void on_alarm(int sig) {
    (void)sig;
    int saved = errno;
    unsigned k = (unsigned)handled % 8, tag = 0xa0 + k;
    if (stash[k])
        check_free(stash[k], tag);
    stash[k] = make(k % 2 ? 64 : 48, tag);
    handled++;
    errno = saved;
}

static int run_signal(void) {
    if (strcmp(mode_now(), "percpu") != 0) {
        fprintf(stderr, "test_percpu signal: thread caches are not async-signal-safe (skipped)\n");
        return 77;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    /* warm: the lists of the two classes hold blocks, so that the
     * handler's calls stay on the fast paths (a slow path takes locks) */
    void *warm[64];
    for (int i = 0; i < 64; i++)
        warm[i] = malloc(i % 2 ? 64 : 48);
    for (int i = 0; i < 64; i++)
        free(warm[i]);
    struct itimerval it = {{0, 50}, {0, 50}};
    setitimer(ITIMER_REAL, &it, NULL);
    for (long i = 0; i < 20000000 && handled < 20000; i++) {
        unsigned char *p = make(i % 2 ? 64 : 48, (unsigned)i);
        check_free(p, (unsigned)i);
    }
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    for (unsigned k = 0; k < 8; k++)
        if (stash[k])
            check_free(stash[k], 0xa0 + k);
    fprintf(stderr, "signal: %d handlers ran\n", (int)handled);
    CHECK(handled > 100);
    return corrupt ? 1 : CHECK_DONE();
}

/* ---- fork from a threaded program ---- */

static volatile int stop;

static void *fork_worker(void *arg) {
    unsigned id = (unsigned)(uintptr_t)arg;
    while (!stop) {
        unsigned char *p[32];
        for (unsigned i = 0; i < 32; i++)
            p[i] = make(size_of(id * 32 + i), id + i);
        for (unsigned i = 0; i < 32; i++)
            check_free(p[i], id + i);
    }
    return NULL;
}

static int run_fork(void) {
    pthread_t t[8];
    for (int i = 0; i < 8; i++)
        pthread_create(&t[i], NULL, fork_worker, (void *)(uintptr_t)i);
    int bad = 0;
    for (int f = 0; f < 40; f++) {
        pid_t pid = fork();
        if (pid == 0) { /* the child allocates at once, from caches it inherited */
            unsigned char *p[256];
            for (unsigned i = 0; i < 256; i++)
                p[i] = make(size_of(i), i);
            for (unsigned i = 0; i < 256; i++)
                check_free(p[i], i);
            _exit(corrupt ? 1 : 0);
        }
        int status = 0;
        if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
            WEXITSTATUS(status) != 0)
            bad++;
    }
    stop = 1;
    for (int i = 0; i < 8; i++)
        pthread_join(t[i], NULL);
    CHECK_EQ_U(bad, 0);
    return corrupt ? 1 : CHECK_DONE();
}

/* ---- threads that exit while their CPU's cache holds their blocks ---- */

static void *exit_worker(void *arg) {
    (void)arg;
    unsigned char *p[500];
    for (unsigned i = 0; i < 500; i++)
        p[i] = make(96, i);
    for (unsigned i = 0; i < 500; i++)
        check_free(p[i], i);
    return NULL;
}

static int run_exit(void) {
    for (int w = 0; w < 50; w++) {
        pthread_t t[4];
        for (int i = 0; i < 4; i++)
            pthread_create(&t[i], NULL, exit_worker, NULL);
        for (int i = 0; i < 4; i++)
            pthread_join(t[i], NULL);
        /* the blocks the threads left in the caches serve this thread */
        unsigned char *p[500];
        for (unsigned i = 0; i < 500; i++)
            p[i] = make(96, i + 7);
        for (unsigned i = 0; i < 500; i++)
            check_free(p[i], i + 7);
    }
    alloy_thread_flush();
    alloy_stats_t st = {.size = sizeof st};
    CHECK(alloy_stats_read(&st) == 0);
    CHECK_EQ_U(st.tcache_bytes, 0);
    CHECK(st.threads_live <= 1);
    return corrupt ? 1 : CHECK_DONE();
}

/* ---- caches drained while their CPUs' threads run their sequences ---- */

static void *drain_worker(void *arg) {
    unsigned id = (unsigned)(uintptr_t)arg;
    unsigned char *p[8];
    while (!stop) {
        for (unsigned i = 0; i < 8; i++)
            p[i] = make(64, id + i);
        for (unsigned i = 0; i < 8; i++)
            check_free(p[i], id + i);
    }
    return NULL;
}

static int run_drain(void) {
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        if (pthread_create(&t[i], NULL, drain_worker, (void *)(uintptr_t)i) != 0)
            return 1;
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    unsigned drains = 0;
    do {
        alloy_thread_flush(); /* per CPU: stops, fences and drains every cache */
        drains++;
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while (now.tv_sec - start.tv_sec < 3);
    stop = 1;
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    fprintf(stderr, "%u drains\n", drains);
    CHECK(drains > 0);
    alloy_thread_flush();
    alloy_stats_t st = {.size = sizeof st};
    CHECK(alloy_stats_read(&st) == 0);
    CHECK_EQ_U(st.tcache_bytes, 0);
    return corrupt ? 1 : CHECK_DONE();
}

/* The process's resident set, in KiB (-1 when it cannot be read). */
static long resident_kib(void) {
    long total = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f || fscanf(f, "%ld %ld", &total, &resident) != 2)
        resident = -1;
    if (f)
        fclose(f);
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* The resident set's growth over N blocks of SIZE bytes, each written once
 * (its first byte), as a program would: their own pages, and what the cache
 * touched besides (the marks of the objects it holds, its slots). */
static int run_touch(int classes) {
    /* one class: 4000 blocks of 1 KiB, within 80 KiB of their bytes;
     * 32 classes: 100 blocks of each of 16, 32, ... 512 bytes, within
     * 416 KiB (their 31 first spans, carves, and the lists' slots, which
     * share pages: with a page of slots per list, 455-511 KiB; now
     * 311-379) */
    enum { MAX = 4000 };
    int per = classes == 1 ? MAX : 100;
    long slack_kib = classes == 1 ? 80 : 416;
    static unsigned char *blocks[MAX];
    if (classes < 1 || classes * per > MAX)
        return 2;
    if (strcmp(mode_now(), "percpu") != 0) {
        fprintf(stderr, "test_percpu touch: thread caches run here (skipped)\n");
        return 77;
    }
    /* on one CPU: a thread that moved would set up a second cache */
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu() >= 0 ? sched_getcpu() : 0, &one);
    sched_setaffinity(0, sizeof one, &one);
    free(malloc(1024)); /* the cache set up, and the 1 KiB class's first span */
    resident_kib();     /* the first read sets the C library's stream up */
    long before = resident_kib(), own = 0;
    for (int k = 0, i = 0; k < classes; k++)
        for (int j = 0; j < per; j++, i++) {
            size_t size = classes == 1 ? 1024 : 16 * (size_t)(k + 1);
            blocks[i] = malloc(size);
            CHECK(blocks[i] != NULL);
            blocks[i][0] = 1;
            own += (long)size;
        }
    long grew = resident_kib() - before;
    own /= 1024;
    fprintf(stderr, "%d classes, %d blocks each: resident +%ld KiB, %ld KiB of them theirs\n",
            classes, per, grew, own);
    CHECK(before > 0 && grew <= own + slack_kib);
    for (int i = 0; i < classes * per; i++)
        free(blocks[i]);
    return CHECK_DONE();
}

/* ---- a thread with an explicit default heap: its mallocs miss ---- */

static int run_heap(void) {
    enum { N = 64, SIZE = 40 };
    void *mine[N], *got[N];
    for (int i = 0; i < N; i++) /* heap 0's blocks, in the CPU's cache (or the thread's) */
        mine[i] = malloc(SIZE);
    for (int i = 0; i < N; i++)
        free(mine[i]);
    alloy_heap_t *h = alloy_heap_create();
    CHECK(h != NULL);
    if (!h)
        return CHECK_DONE();
    alloy_stats_t before = {.size = sizeof before}, after = {.size = sizeof after};
    CHECK(alloy_heap_stats_read(alloy_heap_id(h), &before) == 0);
    CHECK(alloy_heap_set_default(h) == 0);
    for (int i = 0; i < N; i++)
        got[i] = malloc(SIZE);
    CHECK(alloy_heap_stats_read(alloy_heap_id(h), &after) == 0);
    fprintf(stderr, "mode %s: the explicit heap's bytes %zu -> %zu\n", mode_now(), before.allocated,
            after.allocated);
    CHECK(after.allocated >= before.allocated + N * SIZE);
    int reused = 0;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            reused += got[i] == mine[j];
    CHECK_EQ_U(reused, 0);
    for (int i = 0; i < N; i++)
        free(got[i]);
    CHECK(alloy_heap_set_default(NULL) == 0);
    CHECK(alloy_heap_destroy(h) == 0);
    return CHECK_DONE();
}

/* ---- a block freed twice, its copies leaving by two ways ---- */

static int run_twice(void) {
    if (strcmp(mode_now(), "percpu") != 0)
        return 77;
    void *p = malloc(64), *q = malloc(64), *more[64];
    for (int i = 0; i < 64; i++)
        more[i] = malloc(64);
    free(p);
    free(q);
    free(p); /* the list holds p, q, p: its fast path checks the alignment only */
    for (int i = 0; i < 64; i++) /* overflows */
        free(more[i]);
    alloy_purge(); /* the CPU's cache flushed, then every batch to the spans */
    fprintf(stderr, "test_percpu twice: the double free was not caught\n");
    return 3;
}

/* The forked workloads: their exit status. */
static int run_child(int argc, char **argv) {
    if (!strcmp(argv[1], "migrate"))
        return run_migrate(argc > 2 ? atoi(argv[2]) : 64);
    if (!strcmp(argv[1], "signal"))
        return run_signal();
    if (!strcmp(argv[1], "fork"))
        return run_fork();
    if (!strcmp(argv[1], "exit"))
        return run_exit();
    if (!strcmp(argv[1], "drain"))
        return run_drain();
    return 2;
}

int main(int argc, char **argv) {
    if (argc < 2)
        return 2;
    if (!strcmp(argv[1], "mode")) {
        /* auto: per-CPU where the C library registered rseq and the kernel
         * fills mm_cid (src/rseq.h), else thread caches */
        const char *want = argc > 2 ? argv[2] : "auto", *why = NULL;
        if (!strcmp(want, "auto"))
            want =
                rseq_registered() && getauxval(AT_RSEQ_FEATURE_SIZE_) >= 28 ? "percpu" : "thread";
        size_t len = sizeof why;
        alloy_ctl("percpu.why", &why, &len, NULL, 0);
        fprintf(stderr, "mode %s (%s)\n", mode_now(), why ? why : "");
        CHECK(!strcmp(mode_now(), want));
        CHECK(!strcmp(want, "percpu") ? why && !*why : why && *why);
        return CHECK_DONE();
    }
    cpu_set_t set;
    sched_getaffinity(0, sizeof set, &set);
    ncpus = CPU_COUNT(&set) > 0 ? CPU_COUNT(&set) : 1;
    free(malloc(1)); /* initialised before the child is forked */
    if (!strcmp(argv[1], "touch"))
        return run_touch(argc > 2 ? atoi(argv[2]) : 1);
    if (!strcmp(argv[1], "heap"))
        return run_heap();
    if (!strcmp(argv[1], "twice"))
        return run_twice();
    /* a third argument "percpu": the run means nothing with thread caches
     * (the flavour whose sequences are not armed): skipped */
    if (argc > 3 && !strcmp(argv[3], "percpu") && strcmp(mode_now(), "percpu") != 0) {
        fprintf(stderr, "test_percpu %s: thread caches run here (skipped)\n", argv[1]);
        return 77;
    }
    /* a torn sequence shows only when a preemption or a signal lands in
     * it: the flavour whose sequences are not armed runs its workload up to
     * TRIES times (tests/threads/CMakeLists.txt), so that a quiet machine
     * still shows it */
    int tries = argc > 4 ? atoi(argv[4]) : 1, status = 0;
    for (int k = 0; k < tries; k++) {
        pid_t pid = fork();
        if (pid == 0)
            _exit(run_child(argc, argv));
        if (pid < 0 || waitpid(pid, &status, 0) != pid)
            return 2;
        if (!WIFEXITED(status) || (WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 77))
            break;
    }
    if (WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 77))
        return WEXITSTATUS(status);
    fprintf(stderr, "test_percpu %s (%s): per-CPU lists corrupted (%s %d)\n", argv[1], mode_now(),
            WIFSIGNALED(status) ? "signal" : "exit status",
            WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    return 1;
}
