/* SPDX-License-Identifier: MIT */
/* test_numa.c - NUMA awareness on fake topologies (docs/NUMA.md).
 *
 * Linked against the NUMA test flavour (liballoy_numatest*.a), whose
 * topology module reads $ALLOY_TEST_SYSFS_ROOT (tests/numa/sysfs/<name>)
 * instead of /sys.  The fixtures map the two CPUs every machine here has
 * (0 and 1) to different nodes, so that moving a thread between them with
 * sched_setaffinity is a real move: getcpu reports the real CPU.
 *
 *   test_numa map NODES IDS         numa.nodes is NODES, heap i is on node IDS[i] (a,b,...)
 *   test_numa map NODES IDS percpu  the same where per-CPU caches run (exit 77, skipped,
 *                                   where thread caches do)
 *   test_numa bind CPU:NODE...      a thread started on CPU binds to a heap of NODE,
 *                                   and its blocks come from that heap
 *   test_numa spread CPU FIRST N    N threads alive at once on CPU take the N heaps
 *                                   FIRST .. FIRST+N-1 of its node, one each
 *   test_numa move A:NA B:NB        a thread moved from CPU A to CPU B moves to a heap
 *                                   of NB within two checks; one sighting of a node is
 *                                   not enough; a chosen heap stays; a block freed on
 *                                   another node goes back to its own heap
 *   test_numa mbind ok|fail|real    every mbind names the node of the heap that owns the
 *                                   range, and every block was placed (ok); the first
 *                                   failure warns once and stops placement (fail); the
 *                                   real system call places a node-0 block (real)
 *   test_numa fallback TEXT         one warning, containing TEXT; a single node; no mbind
 *   test_numa off                   a single node, no warning, no mbind
 *
 * stderr is captured from before alloy initialises (a constructor that runs
 * before the library's), so that warnings printed at initialisation can be
 * counted; it is replayed at the end.  The main thread is pinned to CPU 0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "alloy.h"
#include "alloy/ctl.h"
#include "alloy/heap.h"
#include "check.h"
#include "ctl_read.h"
#include "heap.h"
#include "init.h"
#include "os.h"
#include "pagemap.h"
#include "tcache.h"
#include "topology.h"

#define LOG_CAP 4096

static ay_os_bind_rec_t bind_log[LOG_CAP];
static unsigned bind_count;
static int saved_stderr = -1, capture_fd = -1;
static bool init_before_capture;

/* Before alloy's own constructors (default priority): capture stderr, pin
 * to CPU 0, and record mbinds as the mode asks (read from /proc, as argv is
 * not passed to constructors portably). */
static char mode_arg[64];

static void read_mode(void) {
    char buf[512];
    long n = ay_os_read_file("/proc/self/cmdline", buf, sizeof buf);
    size_t a = n > 0 ? strlen(buf) + 1 : 0, m = 0; /* argv[1] is at a */
    for (const char *p = buf + a; a && (long)(a + m) < n && m < sizeof mode_arg - 1; m++)
        mode_arg[m] = p[m] ? p[m] : ' '; /* argv[1] argv[2] ..., spaced */
    mode_arg[m] = 0;
}

__attribute__((constructor(101))) static void before_alloy(void) {
    init_before_capture = __atomic_load_n(&ay_init_state, __ATOMIC_ACQUIRE) != 0;
    saved_stderr = dup(2);
    capture_fd = memfd_create("stderr", 0);
    if (capture_fd >= 0)
        dup2(capture_fd, 2);
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(0, &set);
    sched_setaffinity(0, sizeof set, &set);
    read_mode();
    int result = 0;
    if (!strncmp(mode_arg, "mbind fail", 10))
        result = -EPERM;
    else if (!strncmp(mode_arg, "mbind real", 10))
        result = AY_OS_BIND_REAL;
    ay_os_trace_binds(bind_log, LOG_CAP, &bind_count, result);
}

/* What alloy wrote on stderr so far. */
static const char *captured(void) {
    static char text[65536];
    ssize_t n = capture_fd >= 0 ? pread(capture_fd, text, sizeof text - 1, 0) : 0;
    text[n > 0 ? n : 0] = 0;
    return text;
}

/* Lines of the captured stderr that start with "alloy: " and contain what. */
static unsigned warnings(const char *what) {
    unsigned n = 0;
    for (const char *l = captured(); *l;) {
        const char *end = strchr(l, '\n');
        size_t len = end ? (size_t)(end - l) : strlen(l);
        if (len > 7 && !memcmp(l, "alloy: ", 7)) {
            char line[512];
            size_t k = len < sizeof line - 1 ? len : sizeof line - 1;
            memcpy(line, l, k);
            line[k] = 0;
            n += strstr(line, what) != NULL;
        }
        l += len + (end != NULL);
    }
    return n;
}

static int finish(void) {
    const char *text = captured();
    fflush(stderr);
    dup2(saved_stderr, 2);
    fputs(text, stderr);
    return CHECK_DONE();
}

/* ---- small helpers over alloy_ctl ---- */

static unsigned heap_node(unsigned id) {
    char name[64];
    snprintf(name, sizeof name, "stats.heaps.%u.node", id);
    return rd_uns(name);
}

/* Objects released to heap id's central caches (its spans). */
static uint64_t heap_released(unsigned id) {
    char name[64];
    snprintf(name, sizeof name, "stats.heaps.%u.objects_released", id);
    return rd_u64(name);
}

static unsigned thread_node(void) { return rd_uns("thread.node"); }
static unsigned thread_heap(void) { return rd_uns("thread.heap"); }

/* The id of the heap that owns block p. */
static unsigned block_heap(const void *p) {
    ay_span_t *s = ay_pagemap_span(p);
    CHECK(s != NULL);
    return s ? ay_span_heap(s)->id : ~0u;
}

/* Run the calling thread on cpu only, and wait until it is there. */
static void pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    CHECK(sched_setaffinity(0, sizeof set, &set) == 0);
    for (int i = 0; i < 1000 && sched_getcpu() != cpu; i++)
        sched_yield();
    CHECK(sched_getcpu() == cpu);
}

/* Slow-path events of one event() call: a miss (a refill), and in the debug
 * flavour, where every free takes the slow path, the free too. */
#ifdef DEBUG_FLAVOUR
#define EVENTS_PER_CALL 2
#else
#define EVENTS_PER_CALL 1
#endif

/* A slow-path event: an empty list, then a miss (a refill). */
static void event(void) {
    alloy_ctl("thread.tcache.flush", NULL, NULL, NULL, 0);
    free(malloc(16));
}

/* At least n slow-path events, and fewer than n + EVENTS_PER_CALL. */
static void events(unsigned n) {
    for (unsigned i = 0; i < n; i += EVENTS_PER_CALL)
        event();
}

/* A thread started on cpu (its first malloc is in fn). */
static pthread_t start_on(int cpu, void *(*fn)(void *), void *arg) {
    pthread_attr_t attr;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_attr_init(&attr);
    pthread_attr_setaffinity_np(&attr, sizeof set, &set);
    pthread_t t;
    CHECK(pthread_create(&t, &attr, fn, arg) == 0);
    pthread_attr_destroy(&attr);
    return t;
}

/* "a:b" -> a, b */
static void pair(const char *s, int *a, int *b) { CHECK(sscanf(s, "%d:%d", a, b) == 2); }

static bool have_two_cpus(void) {
    if (sysconf(_SC_NPROCESSORS_ONLN) >= 2)
        return true;
    fprintf(stderr, "test_numa: this machine has one CPU; the test needs two (skipped)\n");
    return false;
}

/* ---- map ---- */

static void test_map(unsigned nodes, const char *ids) {
    CHECK_EQ_U(rd_uns("numa.nodes"), nodes);
    CHECK(rd_bool("opt.numa") == (nodes > 1));
    char list[256];
    snprintf(list, sizeof list, "%s", ids);
    unsigned n = 0;
    for (char *save, *tok = strtok_r(list, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save), n++) {
        unsigned want = (unsigned)atoi(tok), have = heap_node(n);
        if (have != want)
            fprintf(stderr, "heap %u: node %u, want %u\n", n, have, want);
        CHECK_EQ_U(have, want);
    }
    CHECK_EQ_U(rd_uns("opt.heaps"), n);
    CHECK_EQ_U(rd_uns("heaps.count"), n);
    CHECK_EQ_U(warnings(""), 0);
}

/* ---- bind ---- */

typedef struct bind_arg {
    int cpu, node;
    unsigned heap;           /* written last, with release: the thread is bound */
    pthread_barrier_t *hold; /* wait here before exiting (spread), or NULL */
    /* what the thread saw, checked by the main thread after the join (the
     * checks are not thread-safe) */
    int cpu_seen;
    unsigned thread_node, heap_node, small_heap, large_heap;
} bind_arg_t;

/* Without CHECK (not thread-safe): a name's value, or ~0u. */
static unsigned quiet_uns(const char *fmt, unsigned i) {
    char name[64];
    unsigned v = ~0u;
    size_t len = sizeof v;
    snprintf(name, sizeof name, fmt, i);
    return alloy_ctl(name, &v, &len, NULL, 0) == 0 ? v : ~0u;
}

static unsigned quiet_block_heap(const void *p) {
    ay_span_t *s = ay_pagemap_span(p);
    return s ? ay_span_heap(s)->id : ~0u;
}

static void *bind_thread(void *arg) {
    bind_arg_t *a = arg;
    void *p = malloc(64);
    a->cpu_seen = sched_getcpu();
    unsigned heap = quiet_uns("thread.heap", 0);
    a->thread_node = quiet_uns("thread.node", 0);
    a->heap_node = quiet_uns("stats.heaps.%u.node", heap);
    a->small_heap = quiet_block_heap(p);
    void *big = malloc(1 << 20); /* a large block: the page heap of the same heap */
    a->large_heap = quiet_block_heap(big);
    free(big);
    free(p);
    __atomic_store_n(&a->heap, heap, __ATOMIC_RELEASE);
    if (a->hold)
        pthread_barrier_wait(a->hold);
    return NULL;
}

static void bind_checks(const bind_arg_t *a) {
    CHECK(a->cpu_seen == a->cpu);
    CHECK_EQ_U(a->thread_node, (unsigned)a->node);
    CHECK_EQ_U(a->heap_node, (unsigned)a->node);
    CHECK_EQ_U(a->small_heap, a->heap);
    CHECK_EQ_U(a->large_heap, a->heap);
}

static void test_bind(int argc, char **argv) {
    for (int i = 0; i < argc; i++) {
        bind_arg_t a = {0};
        pair(argv[i], &a.cpu, &a.node);
        pthread_join(start_on(a.cpu, bind_thread, &a), NULL);
        bind_checks(&a);
        fprintf(stderr, "CPU %d: heap %u, node %d\n", a.cpu, a.heap, a.node);
    }
    CHECK_EQ_U(warnings(""), 0);
}

static void test_spread(int cpu, unsigned first, unsigned n) {
    bind_arg_t a[16];
    pthread_t t[16];
    pthread_barrier_t hold;
    CHECK(n <= 16);
    pthread_barrier_init(&hold, NULL, n + 1);
    unsigned node = heap_node(first);
    for (unsigned i = 0; i < n; i++) {
        a[i] = (bind_arg_t){.cpu = cpu, .node = (int)node, .hold = &hold};
        t[i] = start_on(cpu, bind_thread, &a[i]);
    }
    /* all alive: bound before the barrier, which none passes yet */
    for (unsigned i = 0; i < n; i++) {
        for (int k = 0; k < 100000 && !__atomic_load_n(&a[i].heap, __ATOMIC_ACQUIRE); k++)
            sched_yield();
    }
    pthread_barrier_wait(&hold);
    uint64_t used = 0;
    for (unsigned i = 0; i < n; i++) {
        pthread_join(t[i], NULL);
        bind_checks(&a[i]);
        CHECK(a[i].heap >= first && a[i].heap < first + n);
        if (a[i].heap >= first && a[i].heap < first + n)
            used |= 1ull << (a[i].heap - first);
    }
    CHECK_EQ_U(used, (1ull << n) - 1); /* each heap of the node once */
    pthread_barrier_destroy(&hold);
}

/* ---- move ---- */

typedef struct move_arg {
    int a, na, b, nb;
    void *block; /* allocated on A, freed by another thread on B */
} move_arg_t;

static void *move_thread(void *arg) {
    move_arg_t *m = arg;
    void *keep = malloc(64); /* binds the thread, on CPU A */
    unsigned heap_a = thread_heap();
    CHECK_EQ_U(thread_node(), (unsigned)m->na);
    CHECK_EQ_U(heap_node(heap_a), (unsigned)m->na);
    CHECK_EQ_U(block_heap(keep), heap_a);

    /* the scheduler moves the thread to B: it follows within two checks */
    pin(m->b);
    uint64_t moves = rd_u64("numa.moves");
    unsigned n = 0;
    while (thread_node() == (unsigned)m->na && n < 10 * AY_NUMA_CHECK_EVENTS) {
        event();
        n++;
    }
    n *= EVENTS_PER_CALL;
    fprintf(stderr, "moved from CPU %d to CPU %d: on node %u after %u slow-path events\n", m->a,
            m->b, thread_node(), n);
    /* the first check after the move sees the new node, the second moves */
    CHECK(n > AY_NUMA_CHECK_EVENTS && n <= 2 * AY_NUMA_CHECK_EVENTS + EVENTS_PER_CALL);
    CHECK_EQ_U(rd_u64("numa.moves"), moves + 1);
    unsigned heap_b = thread_heap();
    CHECK_EQ_U(heap_node(heap_b), (unsigned)m->nb);
    CHECK(heap_b != heap_a);
    void *q = malloc(64);
    CHECK_EQ_U(block_heap(q), heap_b); /* new blocks: the new node's heap */
    free(q);

    /* a block of heap A freed here, on node B, goes back to heap A's spans,
     * not to node B's transfer cache (a batch with another node's blocks) */
    CHECK_EQ_U(block_heap(keep), heap_a);
    uint64_t sent = heap_released(heap_a);
    free(keep);
    alloy_thread_flush();
    CHECK(heap_released(heap_a) > sent);

    /* one check on another node is not enough to move */
    ay_tcache_t *tc = ay_tcache_get();
    CHECK(tc != NULL);
    unsigned left = AY_NUMA_CHECK_EVENTS - tc->node_clock;
    pin(m->a);
    events(left); /* exactly one check, which sees node A (left < 16 events later) */
    CHECK(tc->node_pending != AY_NODE_NONE);
    pin(m->b);
    events(4 * AY_NUMA_CHECK_EVENTS);
    CHECK_EQ_U(thread_node(), (unsigned)m->nb);
    CHECK_EQ_U(rd_u64("numa.moves"), moves + 1);

    /* a thread that chose its automatic heap stays on it */
    CHECK(alloy_heap_set_default(alloy_heap_from_id(heap_b)) == 0);
    pin(m->a);
    events(4 * AY_NUMA_CHECK_EVENTS);
    CHECK_EQ_U(thread_heap(), heap_b);
    CHECK_EQ_U(rd_u64("numa.moves"), moves + 1);
    return NULL;
}

static void *alloc_thread(void *arg) {
    move_arg_t *m = arg;
    m->block = malloc(256);
    CHECK_EQ_U(thread_node(), (unsigned)m->na);
    return NULL;
}

static void *free_thread(void *arg) {
    move_arg_t *m = arg;
    unsigned owner = block_heap(m->block);
    CHECK_EQ_U(heap_node(owner), (unsigned)m->na);
    free(malloc(16)); /* bind this thread: on node B */
    CHECK_EQ_U(thread_node(), (unsigned)m->nb);
    uint64_t sent = heap_released(owner);
    free(m->block);
    alloy_thread_flush();
    CHECK(heap_released(owner) > sent); /* back to its own heap, on node A */
    return NULL;
}

static void test_move(const char *from, const char *to) {
    move_arg_t m;
    pair(from, &m.a, &m.na);
    pair(to, &m.b, &m.nb);
    CHECK(m.na != m.nb);
    pthread_join(start_on(m.a, move_thread, &m), NULL);
    pthread_join(start_on(m.a, alloc_thread, &m), NULL);
    pthread_join(start_on(m.b, free_thread, &m), NULL);
    CHECK_EQ_U(warnings(""), 0);
}

/* ---- mbind ---- */

static void *mbind_thread(void *arg) {
    void **keep = arg;
    for (int i = 0; i < 3000; i++)
        keep[i] = malloc(16 + (size_t)(i % 50) * 40); /* small: several classes, blocks */
    keep[3000] = malloc(3 << 20);                     /* a large block of its own */
    keep[3001] = malloc(40 << 20);                    /* a direct map */
    return NULL;
}

/* The log entry for the range at start of `size` bytes, or NULL. */
static const ay_os_bind_rec_t *logged(uintptr_t start, size_t size) {
    for (unsigned i = 0; i < bind_count && i < LOG_CAP; i++)
        if (bind_log[i].addr == start && bind_log[i].size == size)
            return &bind_log[i];
    return NULL;
}

static void test_mbind(const char *how) {
    static void *keep[2][3002];
    for (int cpu = 0; cpu < 2; cpu++)
        pthread_join(start_on(cpu, mbind_thread, keep[cpu]), NULL);
    alloy_heap_t *ex = alloy_heap_create(); /* created on CPU 0: node of CPU 0 */
    void *in_ex = alloy_heap_malloc(ex, 100);
    CHECK(in_ex != NULL);

    if (!strcmp(how, "fail")) {
        CHECK_EQ_U(bind_count, 1); /* placement off after the first failure */
        CHECK_EQ_U(warnings("NUMA: mbind failed (errno 1)"), 1);
        CHECK_EQ_U(warnings(""), 1);
        CHECK(rd_bool("opt.numa")); /* the heaps still follow the nodes */
    } else if (!strcmp(how, "real")) {
        /* the block mapped first was placed on node 0 by the kernel's mbind */
        CHECK(bind_count >= 1);
        CHECK_EQ_U(bind_log[0].node, 0);
        int mode = -1;
        unsigned long mask[AY_OS_MAX_NODES / 64] = {0};
        long r = syscall(SYS_get_mempolicy, &mode, mask, AY_OS_MAX_NODES + 1,
                         (void *)bind_log[0].addr, 2 /* MPOL_F_ADDR */);
        CHECK(r == 0);
        CHECK_EQ_U(mode, 1 /* MPOL_PREFERRED */);
        CHECK_EQ_U(mask[0], 1);
        /* node 1 exists only in the fake tree, unless this machine has one */
        bool node1 = access("/sys/devices/system/node/node1", F_OK) == 0;
        CHECK_EQ_U(warnings("NUMA: mbind failed"), node1 ? 0 : 1);
    } else {
        CHECK(bind_count > 0 && bind_count <= LOG_CAP);
        unsigned blocks = 0, directs = 0;
        for (unsigned id = 0; id < ay_heaps_limit; id++) {
            ay_heap_t *h = ay_heap_get(id);
            if (!h)
                continue;
            /* every block of its page heap was placed on its node */
            for (ay_span_t *b = h->pages.blocks.next; b != &h->pages.blocks; b = b->next) {
                const ay_os_bind_rec_t *r = logged(b->start, AY_PAGES_BYTES(b->npages));
                CHECK(r != NULL);
                if (r && r->node != ay_heap_node_id(h))
                    fprintf(stderr, "heap %u (node %u): block placed on node %u\n", id,
                            ay_heap_node_id(h), r->node);
                CHECK(r && r->node == ay_heap_node_id(h));
                blocks++;
            }
            for (ay_span_t *d = h->direct.list.next; d != &h->direct.list; d = d->next) {
                const ay_os_bind_rec_t *r = logged(d->start, AY_PAGES_BYTES(d->npages));
                CHECK(r && r->node == ay_heap_node_id(h));
                directs++;
            }
        }
        /* and nothing else was placed: decay_ms:-1 keeps every block mapped */
        CHECK_EQ_U(bind_count, blocks + directs);
        CHECK_EQ_U(directs, 2);
        /* both nodes were used, and so was the explicit heap */
        CHECK(block_heap(in_ex) == alloy_heap_id(ex));
        CHECK(logged((uintptr_t)ay_pagemap_span(in_ex)->block->start,
                     AY_PAGES_BYTES(ay_pagemap_span(in_ex)->block->npages)) != NULL);
        fprintf(stderr, "%u mbind calls: %u page-heap blocks, %u direct maps\n", bind_count, blocks,
                directs);
        CHECK_EQ_U(warnings(""), 0);
    }
    for (int cpu = 0; cpu < 2; cpu++)
        for (int i = 0; i < 3002; i++)
            free(keep[cpu][i]);
    alloy_heap_destroy(ex);
}

/* ---- fallback, off ---- */

static void single_node(void) {
    CHECK_EQ_U(rd_uns("numa.nodes"), 1);
    CHECK(!rd_bool("opt.numa"));
    void *p = malloc(5 << 20);
    free(malloc(64));
    for (unsigned id = 0; id < rd_uns("heaps.count"); id++)
        CHECK_EQ_U(heap_node(id), 0);
    CHECK_EQ_U(thread_node(), 0);
    free(p);
    CHECK_EQ_U(bind_count, 0); /* nothing is placed on one node */
}

static void test_fallback(const char *what) {
    single_node();
    CHECK_EQ_U(warnings(""), 1);
    CHECK_EQ_U(warnings("NUMA topology: "), 1);
    if (warnings(what) != 1)
        fprintf(stderr, "want one warning containing '%s'\n", what);
    CHECK_EQ_U(warnings(what), 1);
    CHECK_EQ_U(warnings("using a single node"), 1);
}

/* Per-CPU caches run in this process (alloy_ctl's percpu.mode). */
static bool percpu_runs(void) {
    const char *m = NULL;
    size_t len = sizeof m;
    return alloy_ctl("percpu.mode", &m, &len, NULL, 0) == 0 && m && !strcmp(m, "percpu");
}

static void test_off(void) {
    single_node();
    CHECK_EQ_U(warnings(""), 0);
}

int main(int argc, char **argv) {
    CHECK(!init_before_capture); /* else warnings at initialisation were missed */
    CHECK(capture_fd >= 0);
    if (argc < 2) {
        fprintf(stderr, "usage: see the comment at the top of test_numa.c\n");
        return finish() | 2;
    }
    const char *mode = argv[1];
    if (!strcmp(mode, "map") && argc == 5 && !strcmp(argv[4], "percpu") && !percpu_runs()) {
        fprintf(stderr, "test_numa: per-CPU caches do not run here (skipped)\n");
        return 77;
    }
    if (!strcmp(mode, "map") && (argc == 4 || (argc == 5 && !strcmp(argv[4], "percpu"))))
        test_map((unsigned)atoi(argv[2]), argv[3]);
    else if (!strcmp(mode, "bind") && argc >= 3 && have_two_cpus())
        test_bind(argc - 2, argv + 2);
    else if (!strcmp(mode, "spread") && argc == 5)
        test_spread(atoi(argv[2]), (unsigned)atoi(argv[3]), (unsigned)atoi(argv[4]));
    else if (!strcmp(mode, "move") && argc == 4 && have_two_cpus())
        test_move(argv[2], argv[3]);
    else if (!strcmp(mode, "mbind") && argc == 3 && have_two_cpus())
        test_mbind(argv[2]);
    else if (!strcmp(mode, "fallback") && argc == 3)
        test_fallback(argv[2]);
    else if (!strcmp(mode, "off") && argc == 2)
        test_off();
    else if (have_two_cpus()) {
        fprintf(stderr, "test_numa: bad arguments\n");
        CHECK(0);
    }
    return finish();
}
