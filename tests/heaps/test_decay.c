/* SPDX-License-Identifier: MIT */
/* test_decay.c - a process that frees most of its memory and then idles gets
 * its RSS back down.  Usage: test_decay default|background|slowpath|never
 *   default:    no settings - the dirty-page cap (max(64 MiB, 2 x active))
 *               purges at free time, so RSS falls to about 64 MiB while the
 *               program only sleeps;
 *   background: ALLOY_CONF=decay_ms:100,background_thread:true - RSS falls
 *               while the program only sleeps;
 *   slowpath:   ALLOY_CONF=decay_ms:100 - RSS falls at the next slow path;
 *   miss:       ALLOY_CONF=decay_ms:100 - RSS falls at the next slow-path
 *               event of a thread cache (a small request whose list the
 *               flush emptied: a miss, served by the span made for it
 *               before), without any page-heap call;
 *   never:      ALLOY_CONF=decay_ms:-1 - RSS stays up (the setting is obeyed,
 *               and this test could see a failure to fall);
 *   quiet:      ALLOY_CONF=decay_ms:100 - one thread allocates, another
 *               frees and exits (its blocks wait in the transfer caches),
 *               the process calls nothing for decay_ms + a round, and then
 *               the first slow-path event (one miss) gives back every
 *               batch and purges every free page (alloy's own counts,
 *               which nothing else in the process moves);
 *   quiet-background: ALLOY_CONF=decay_ms:100,background_thread:true - as
 *               quiet, and the process calls nothing at all: the background
 *               thread's rounds drain the per-CPU caches (where the freeing
 *               thread's blocks wait in per-CPU mode) and purge every free
 *               page;
 *   quiet-auto: ALLOY_CONF=decay_ms:100,background_thread:auto - as
 *               quiet-background, with no thread asked for: the first
 *               slow-path event after the first 100 ms that finds memory held
 *               starts one, which gives everything back; then, with
 *               nothing held, its rounds back off: at most 20 wake-ups in
 *               2 s (a thread at decay_ms / 4 makes 80). */
#include <dirent.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "alloy.h"
#include "alloy/ctl.h"
#include "check.h"

#define N 40000

static size_t rss_bytes(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long size = 0, res = 0;
    if (f) {
        if (fscanf(f, "%lu %lu", &size, &res) != 2)
            res = 0;
        fclose(f);
    }
    return res * (size_t)sysconf(_SC_PAGESIZE);
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

static void *blocks[N];

static uint64_t ctl(const char *name) {
    uint64_t v = 0;
    size_t len = sizeof v;
    CHECK_EQ_U(alloy_ctl(name, &v, &len, NULL, 0), 0);
    return v;
}

static void *allocate(void *arg) {
    (void)arg;
    for (int i = 0; i < N; i++) { /* ~40 MiB of 16-2,048-byte blocks, touched */
        size_t size = 16 + (size_t)(i * 7919 % 2033);
        blocks[i] = malloc(size);
        memset(blocks[i], 1, size);
    }
    return NULL;
}

static void *release(void *arg) {
    (void)arg;
    for (int i = 0; i < N; i++)
        free(blocks[i]);
    return NULL;
}

static void run_thread(void *(*f)(void *)) {
    pthread_t t;
    CHECK(pthread_create(&t, NULL, f, NULL) == 0);
    CHECK(pthread_join(t, NULL) == 0);
}

static int quiet(void) {
    /* this thread's cache is live: the other threads' batches go to the
     * transfer caches */
    free(malloc(24));
    run_thread(allocate);
    run_thread(release);
    uint64_t held = ctl("stats.central_bytes") + ctl("stats.pageheap_free_bytes");
    sleep_ms(300);      /* decay_ms (100) + a round (100), and more */
    free(malloc(3000)); /* a class this thread never used: a miss */
    uint64_t central = ctl("stats.central_bytes"), dirty = ctl("stats.pageheap_free_bytes");
    fprintf(stderr,
            "quiet: central + free pages %llu KiB, after the quiet spell and one miss: "
            "central %llu KiB, unpurged free pages %llu KiB\n",
            (unsigned long long)held >> 10, (unsigned long long)central >> 10,
            (unsigned long long)dirty >> 10);
    CHECK(held > (8u << 20));
    CHECK_EQ_U(dirty, 0);
    CHECK(central < (1u << 20));
    return CHECK_DONE();
}

static int quiet_background(void) {
    free(malloc(24));
    run_thread(allocate);
    run_thread(release);
    uint64_t held =
        ctl("percpu.bytes") + ctl("stats.central_bytes") + ctl("stats.pageheap_free_bytes");
    sleep_ms(600); /* decay_ms (100) + rounds of the background thread */
    uint64_t cached = ctl("percpu.bytes"), dirty = ctl("stats.pageheap_free_bytes");
    fprintf(stderr,
            "quiet-background: per-CPU + central + free pages %llu KiB, after the quiet "
            "spell: per-CPU caches %llu KiB, unpurged free pages %llu KiB\n",
            (unsigned long long)held >> 10, (unsigned long long)cached >> 10,
            (unsigned long long)dirty >> 10);
    CHECK(held > (8u << 20));
    CHECK(cached < (64u << 10));
    CHECK_EQ_U(dirty, 0);
    return CHECK_DONE();
}

/* The voluntary context switches of every thread of the process but the
 * calling one (the background thread's wake-ups). */
static long others_wakeups(void) {
    char path[64], line[128];
    long total = 0;
    DIR *d = opendir("/proc/self/task");
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] == '.' || atol(e->d_name) == (long)syscall(SYS_gettid))
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%.20s/status", e->d_name);
        FILE *f = fopen(path, "r");
        while (f && fgets(line, sizeof line, f))
            if (!strncmp(line, "voluntary_ctxt_switches:", 24))
                total += atol(line + 24);
        if (f)
            fclose(f);
    }
    if (d)
        closedir(d);
    return total;
}

static int quiet_auto(void) {
    free(malloc(24));
    sleep_ms(150); /* past its first 100 ms: a program this young gets no thread */
    run_thread(allocate);
    run_thread(release);
    uint64_t held =
        ctl("percpu.bytes") + ctl("stats.central_bytes") + ctl("stats.pageheap_free_bytes");
    sleep_ms(600); /* decay_ms (100) + rounds of the thread */
    uint64_t cached = ctl("percpu.bytes"), dirty = ctl("stats.pageheap_free_bytes");
    bool on = false;
    size_t len = sizeof on;
    CHECK_EQ_U(alloy_ctl("background_thread", &on, &len, NULL, 0), 0);
    sleep_ms(500); /* the rounds back off */
    long before = others_wakeups();
    sleep_ms(2000);
    long wakeups = others_wakeups() - before;
    fprintf(stderr,
            "quiet-auto: per-CPU + central + free pages %llu KiB, after the quiet spell: "
            "per-CPU caches %llu KiB, unpurged free pages %llu KiB; thread %s, %ld wake-ups "
            "in 2 s\n",
            (unsigned long long)held >> 10, (unsigned long long)cached >> 10,
            (unsigned long long)dirty >> 10, on ? "running" : "none", wakeups);
    CHECK(held > (8u << 20));
    CHECK(on);
    CHECK(cached < (64u << 10));
    CHECK_EQ_U(dirty, 0);
    CHECK(wakeups <= 20);
    return CHECK_DONE();
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "background";
    if (!strcmp(mode, "quiet"))
        return quiet();
    if (!strcmp(mode, "quiet-background"))
        return quiet_background();
    if (!strcmp(mode, "quiet-auto"))
        return quiet_auto();
    size_t base = rss_bytes();
    for (int i = 0; i < N; i++) { /* ~300 MiB of 1-15 KiB blocks, touched */
        blocks[i] = malloc(1024 + (size_t)(i % 15) * 1024);
        memset(blocks[i], 1, 1024 + (size_t)(i % 15) * 1024);
    }
    size_t peak = rss_bytes();
    CHECK(peak > base + (200u << 20));
    /* spans for the misses below, so that they need no page-heap call */
    for (int t = 0; t < 30; t++)
        free(malloc(16 + (size_t)t * 16));
    for (int i = 0; i < N; i++)
        free(blocks[i]);
    alloy_thread_flush();
    size_t low = peak;
    size_t bound = base + (strcmp(mode, "default") ? 48u << 20 : 80u << 20);
    for (int t = 0; t < 30 && low > bound; t++) { /* up to 3 s */
        sleep_ms(100);
        if (!strcmp(mode, "slowpath"))
            free(malloc(2u << 20)); /* a page-heap slow path */
        if (!strcmp(mode, "miss"))
            free(malloc(16 + (size_t)t * 16)); /* its list is empty (flushed): a miss */
        size_t r = rss_bytes();
        low = r < low ? r : low;
    }
    fprintf(stderr, "%s: rss base %zu MiB, peak %zu MiB, after idling %zu MiB\n", mode, base >> 20,
            peak >> 20, low >> 20);
    if (!strcmp(mode, "never"))
        CHECK(low > peak / 2);
    else
        CHECK(low < bound);
    return CHECK_DONE();
}
