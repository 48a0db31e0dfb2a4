/* SPDX-License-Identifier: MIT */
/* test_heap_churn.c - explicit heaps created, filled with large blocks (half
 * of them freed, so that their page heaps hold dirty free spans) and
 * destroyed, over and over, while another thread does something that walks
 * every heap:
 *   none        nothing (the control case)
 *   stats       alloy_stats_read and stats.heaps.<i>.allocated by name
 *   purge       alloy_purge()
 *   ctl-purge   alloy_ctl("heap.<i>.purge") for every id that exists
 *   background  nothing itself; ctest sets ALLOY_CONF=background_thread:true,
 *               decay_ms:1, so the background thread purges every 10 ms
 * Usage: test_heap_churn MODE [seconds]  (1).  The process must neither
 * crash nor trip the debug flavour's checks; the automatic heaps keep
 * working throughout (their blocks are checked), and at the end the counters
 * add up.  Only the alloy_* names are called. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "alloy.h"
#include "alloy/ctl.h"
#include "alloy/heap.h"
#include "check.h"

static volatile int stop;
static const char *mode;
static unsigned long walks;

static void *walker(void *arg) {
    while (!stop) {
        if (!strcmp(mode, "stats")) {
            alloy_stats_t s = {.size = sizeof s};
            alloy_stats_read(&s);
            for (unsigned i = 0; i < 16; i++) {
                char name[48];
                uint64_t v;
                size_t len = sizeof v;
                snprintf(name, sizeof name, "stats.heaps.%u.allocated", i);
                alloy_ctl(name, &v, &len, NULL, 0);
            }
        } else if (!strcmp(mode, "purge")) {
            alloy_purge();
        } else if (!strcmp(mode, "ctl-purge")) {
            for (unsigned i = 0; i < 16; i++) {
                char name[32];
                snprintf(name, sizeof name, "heap.%u.purge", i);
                alloy_ctl(name, NULL, NULL, NULL, 0); /* ENOENT for ids not in use */
            }
        } else {
            usleep(1000);
        }
        __atomic_add_fetch(&walks, 1, __ATOMIC_RELAXED);
    }
    return arg;
}

/* Heaps created and destroyed at the least: the run lasts `seconds` or
 * until this many rounds, whichever is later (it used to stop at the time,
 * and a check that it had done more than 10 rounds failed on a loaded
 * machine). */
#define MIN_ROUNDS 20

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    mode = argc > 1 ? argv[1] : "none";
    double seconds = argc > 2 ? atof(argv[2]) : 1.0;
    alarm((unsigned)seconds + 60);
    pthread_t t;
    pthread_create(&t, NULL, walker, NULL); /* (which allocates its TLS) */
    alloy_thread_flush();
    alloy_stats_t s0 = {.size = sizeof s0}; /* the walker allocates nothing */
    CHECK(alloy_stats_read(&s0) == 0);
    double end = now_s() + seconds;
    unsigned long rounds = 0; /* at least MIN_ROUNDS, however slow the machine */
    int bad = 0;
    while (now_s() < end || rounds < MIN_ROUNDS) {
        alloy_heap_t *h = alloy_heap_create();
        CHECK(h != NULL);
        if (!h)
            break;
        void *p[64];
        for (int i = 0; i < 64; i++)
            p[i] = alloy_heap_malloc(h, 300000 + (size_t)(i % 5) * 4096);
        for (int i = 0; i < 64; i += 2)
            alloy_heap_free(h, p[i]); /* dirty free spans in h's page heap */
        CHECK(alloy_heap_destroy(h) == 0);
        unsigned char *q[16]; /* and the automatic heaps still work */
        for (int i = 0; i < 16; i++) {
            q[i] = alloy_malloc(300000 + (size_t)i * 4096);
            memset(q[i], i + 1, 300000);
        }
        for (int i = 0; i < 16; i++) {
            bad += q[i][0] != i + 1 || q[i][299999] != i + 1;
            alloy_free(q[i]);
        }
        rounds++;
    }
    stop = 1;
    pthread_join(t, NULL);
    CHECK_EQ_U(bad, 0);

    alloy_thread_flush();
    alloy_stats_t s = {.size = sizeof s};
    CHECK(alloy_stats_read(&s) == 0);
    CHECK(s.allocated <= s.active && s.active <= s.resident && s.resident <= s.mapped);
    CHECK_EQ_U(s.allocated, s0.allocated);
    CHECK_EQ_U(s.large_allocated, 0);
    fprintf(stderr, "%s: %lu heaps created and destroyed, %lu walks\n", mode, rounds, walks);
    return CHECK_DONE();
}
