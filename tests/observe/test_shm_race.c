/* SPDX-License-Identifier: MIT */
/* test_shm_race.c - the live snapshot's seqlock (src/shm.c): a writer and
 * readers at once, in one process, so that ThreadSanitizer sees both sides
 * (tests/sanitize runs it in the thread flavour; tests/observe in the
 * release build).
 *
 *   test_shm_race pattern N   a writer publishes snapshots whose every
 *                             word is the same number, while two readers
 *                             copy them: a copy with two different words
 *                             is a torn snapshot, and fails the test.  The
 *                             writer publishes N at least, and goes on
 *                             until each reader has made MIN_COPIES
 *                             consistent copies of two snapshots or more
 *                             while it writes (a reader that copied nothing
 *                             checked nothing): fails when they have not
 *                             after a minute.
 *   test_shm_race live N      with stats_shm:true: the library's own
 *                             writer (the background thread, every
 *                             timeline_ms) against two readers of its
 *                             segment while two threads allocate, until it
 *                             published N more; each copy's sequence number
 *                             never goes back, alloy's resident bytes are
 *                             at most what it mapped, and the breakdown of
 *                             the active bytes (in use, thread caches,
 *                             central caches, span tails) adds up to
 *                             `active` within a quarter of it (the counters
 *                             are read while threads allocate); each reader
 *                             must have made MIN_COPIES copies.
 *
 * Exit status 0, or 1 with a message.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shm.h"
#include "timeline.h"

#define MIN_COPIES 20 /* consistent copies each reader must make */
/* How far the live breakdown may stray from `active`: a quarter of it and
 * LIVE_SLACK (the counters are read one after another while two threads
 * allocate and free about half a MiB each; the breakdown seen is within
 * 20 KiB of `active`, when it is not exact). */
#ifndef LIVE_SLACK
#define LIVE_SLACK ((uint64_t)256 << 10)
#endif

static ay_shm_seg_t seg; /* the pattern's segment (in memory: no file) */
static const ay_shm_seg_t *live_seg;
static unsigned rounds;
static int done, failures;
static uint64_t reader_copies[2], reader_distinct[2]; /* (atomic) */

/* Have both readers made MIN_COPIES copies, of two snapshots or more? */
static int readers_satisfied(void) {
    for (int i = 0; i < 2; i++)
        if (__atomic_load_n(&reader_copies[i], __ATOMIC_RELAXED) < MIN_COPIES ||
            __atomic_load_n(&reader_distinct[i], __ATOMIC_RELAXED) < 2)
            return 0;
    return 1;
}

/* After the run: each reader's copies, and a failure when too few. */
static void check_copies(const char *what) {
    for (int i = 0; i < 2; i++) {
        printf("%s reader %d: %llu consistent copies of %llu snapshots\n", what, i,
               (unsigned long long)reader_copies[i], (unsigned long long)reader_distinct[i]);
        if (reader_copies[i] < MIN_COPIES || reader_distinct[i] < 2) {
            fprintf(stderr,
                    "%s reader %d made %llu consistent copies of %llu snapshots "
                    "(want %d copies, of 2 snapshots or more)\n",
                    what, i, (unsigned long long)reader_copies[i],
                    (unsigned long long)reader_distinct[i], MIN_COPIES);
            failures++;
        }
    }
}

static void *pattern_reader(void *arg) {
    int me = (int)(intptr_t)arg;
    ay_snap_t s;
    uint64_t copies = 0, last = 0, distinct = 0;
    while (!__atomic_load_n(&done, __ATOMIC_ACQUIRE)) {
        if (ay_shm_read(&seg, &s, 100) != 0)
            continue; /* always being written: try again */
        const uint64_t *w = (const uint64_t *)&s;
        for (size_t i = 1; i < AY_SNAP_WORDS; i++) {
            if (w[i] != w[0]) {
                fprintf(stderr, "torn snapshot: word %zu is %llu, word 0 is %llu\n", i,
                        (unsigned long long)w[i], (unsigned long long)w[0]);
                __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
                return NULL;
            }
        }
        if (w[0] < last) {
            fprintf(stderr, "snapshot went back from %llu to %llu\n", (unsigned long long)last,
                    (unsigned long long)w[0]);
            __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
            return NULL;
        }
        distinct += w[0] != last;
        last = w[0];
        copies++;
        __atomic_store_n(&reader_copies[me], copies, __ATOMIC_RELAXED);
        __atomic_store_n(&reader_distinct[me], distinct, __ATOMIC_RELAXED);
    }
    return NULL;
}

static int pattern(void) {
    pthread_t r[2];
    static ay_snap_t s;
    for (int i = 0; i < 2; i++)
        pthread_create(&r[i], NULL, pattern_reader, (void *)(intptr_t)i);
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    uint64_t n = 1;
    for (;; n++) {
        uint64_t *w = (uint64_t *)&s;
        for (size_t i = 0; i < AY_SNAP_WORDS; i++)
            w[i] = n;
        ay_shm_publish(&seg, &s);
        if (n >= rounds && (n % 1024 == 0 || n == rounds)) {
            if (readers_satisfied() || __atomic_load_n(&failures, __ATOMIC_RELAXED))
                break;
            clock_gettime(CLOCK_MONOTONIC, &now);
            if (now.tv_sec - t0.tv_sec > 60)
                break;
        }
    }
    __atomic_store_n(&done, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < 2; i++)
        pthread_join(r[i], NULL);
    printf("pattern: %llu snapshots published\n", (unsigned long long)n);
    check_copies("pattern");
    return failures != 0;
}

static void *live_reader(void *arg) {
    int me = (int)(intptr_t)arg;
    ay_snap_t s;
    uint64_t last = 0, copies = 0, distinct = 0;
    while (!__atomic_load_n(&done, __ATOMIC_ACQUIRE)) {
        if (ay_shm_read(live_seg, &s, 100) != 0)
            continue;
        uint64_t parts = s.allocated + s.tcache + s.central + s.span_tails;
        uint64_t off = parts > s.active ? parts - s.active : s.active - parts;
        if (s.seq < last || s.resident > s.mapped || off > s.active / 4 + LIVE_SLACK) {
            fprintf(stderr,
                    "bad live snapshot: seq %llu after %llu, resident %llu, mapped %llu, "
                    "in use + caches + span tails %llu, active %llu\n",
                    (unsigned long long)s.seq, (unsigned long long)last,
                    (unsigned long long)s.resident, (unsigned long long)s.mapped,
                    (unsigned long long)parts, (unsigned long long)s.active);
            __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
            return NULL;
        }
        distinct += s.seq != last;
        last = s.seq;
        copies++;
        __atomic_store_n(&reader_copies[me], copies, __ATOMIC_RELAXED);
        __atomic_store_n(&reader_distinct[me], distinct, __ATOMIC_RELAXED);
    }
    return NULL;
}

static void *allocator(void *arg) {
    void *keep[256] = {0};
    while (!__atomic_load_n(&done, __ATOMIC_ACQUIRE)) {
        for (unsigned i = 0; i < 256; i++) {
            free(keep[i]);
            keep[i] = malloc(16 + (i * 40) % 4000);
        }
    }
    for (unsigned i = 0; i < 256; i++)
        free(keep[i]);
    return NULL;
}

static int live(void) {
    struct timespec ms = {0, 1000000};
    for (unsigned waited = 0; !(live_seg = ay_timeline_segment()); waited++) {
        if (waited == 60000) { /* the first round makes it, after timeline_ms */
            fprintf(stderr, "no live snapshot after a minute: run with "
                            "ALLOY_CONF=stats_shm:true\n");
            return 1;
        }
        nanosleep(&ms, NULL);
    }
    pthread_t r[2], a[2];
    for (int i = 0; i < 2; i++) {
        pthread_create(&r[i], NULL, live_reader, (void *)(intptr_t)i);
        pthread_create(&a[i], NULL, allocator, NULL);
    }
    ay_snap_t s;
    while (ay_shm_read(live_seg, &s, 100) != 0)
        nanosleep(&ms, NULL);
    uint64_t first = s.seq;
    /* until the background thread published `rounds` more, and the readers
     * copied enough (a minute at most) */
    for (unsigned waited = 0; (s.seq < first + rounds || !readers_satisfied()) && waited < 60000 &&
                              !__atomic_load_n(&failures, __ATOMIC_RELAXED);
         waited++) {
        ay_snap_t t;
        nanosleep(&ms, NULL);
        if (ay_shm_read(live_seg, &t, 100) == 0)
            s = t;
    }
    __atomic_store_n(&done, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < 2; i++) {
        pthread_join(r[i], NULL);
        pthread_join(a[i], NULL);
    }
    printf("live: snapshots %llu to %llu\n", (unsigned long long)first, (unsigned long long)s.seq);
    check_copies("live");
    return failures != 0;
}

int main(int argc, char **argv) {
    rounds = argc > 2 ? (unsigned)atoi(argv[2]) : 1000;
    if (argc > 1 && !strcmp(argv[1], "pattern"))
        return pattern();
    if (argc > 1 && !strcmp(argv[1], "live"))
        return live();
    fprintf(stderr, "usage: test_shm_race pattern|live [N]\n");
    return 2;
}
