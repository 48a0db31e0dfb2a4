/* SPDX-License-Identifier: MIT */
/* test_shm_race.c - the live snapshot's seqlock (src/shm.c): a writer and
 * readers at once, in one process, so that ThreadSanitizer sees both sides
 * (tests/sanitize runs it in the thread flavour; tests/observe in the
 * release build).
 *
 *   test_shm_race pattern N   a writer publishes N snapshots whose every
 *                             word is the same number, while two readers
 *                             copy them: a copy with two different words
 *                             is a torn snapshot, and fails the test
 *   test_shm_race live N      with stats_shm:true: the library's own
 *                             writer (the background thread, every
 *                             timeline_ms) against two readers of its
 *                             segment while two threads allocate; each
 *                             copy's sequence number never goes back and
 *                             its breakdown never exceeds what was mapped
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

static ay_shm_seg_t seg; /* the pattern's segment (in memory: no file) */
static const ay_shm_seg_t *live_seg;
static unsigned rounds;
static int done, failures;

static void *pattern_reader(void *arg) {
    ay_snap_t s;
    uint64_t copies = 0, last = 0;
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
        last = w[0];
        copies++;
    }
    printf("reader: %llu consistent copies, the last of snapshot %llu\n",
           (unsigned long long)copies, (unsigned long long)last);
    return NULL;
}

static int pattern(void) {
    pthread_t r[2];
    static ay_snap_t s;
    for (int i = 0; i < 2; i++)
        pthread_create(&r[i], NULL, pattern_reader, NULL);
    for (unsigned n = 1; n <= rounds; n++) {
        uint64_t *w = (uint64_t *)&s;
        for (size_t i = 0; i < AY_SNAP_WORDS; i++)
            w[i] = n;
        ay_shm_publish(&seg, &s);
    }
    __atomic_store_n(&done, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < 2; i++)
        pthread_join(r[i], NULL);
    return failures != 0;
}

static void *live_reader(void *arg) {
    ay_snap_t s;
    uint64_t last = 0, copies = 0;
    while (!__atomic_load_n(&done, __ATOMIC_ACQUIRE)) {
        if (ay_shm_read(live_seg, &s, 100) != 0)
            continue;
        uint64_t parts = s.allocated + s.tcache + s.central + s.span_tails + s.pageheap_free;
        if (s.seq < last || parts > s.mapped + ((uint64_t)1 << 30)) {
            fprintf(stderr, "bad live snapshot: seq %llu after %llu, parts %llu, mapped %llu\n",
                    (unsigned long long)s.seq, (unsigned long long)last, (unsigned long long)parts,
                    (unsigned long long)s.mapped);
            __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
            return NULL;
        }
        last = s.seq;
        copies++;
    }
    printf("live reader: %llu copies, up to snapshot %llu\n", (unsigned long long)copies,
           (unsigned long long)last);
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
        pthread_create(&r[i], NULL, live_reader, NULL);
        pthread_create(&a[i], NULL, allocator, NULL);
    }
    ay_snap_t s;
    while (ay_shm_read(live_seg, &s, 100) != 0)
        nanosleep(&ms, NULL);
    uint64_t first = s.seq;
    while (s.seq < first + rounds) { /* until the background thread published `rounds` more */
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
