/* SPDX-License-Identifier: MIT */
/* test_ctl_race.c - alloy_ctl writes racing with allocation.  Worker
 * threads allocate, write patterns, pass blocks to each other and free them
 * (checking the patterns), flush their caches and read counters, while the
 * main thread flips decay_ms, batch_policy (clip/guard/pow2) and
 * background_thread, flushes its cache, bumps the epoch, purges, binds to
 * other heaps and creates and destroys heaps.  Afterwards nothing is
 * corrupt, the last value written is the one read, and, with every block
 * freed, the counters add up: allocated <= active <= resident <= mapped,
 * allocated + cached + central bytes <= active, totals = sums over heaps,
 * and allocated is back where it started.  Only the alloy_* names. */
#include <pthread.h>
#include <stdbool.h>
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
#include "pattern.h"

#define NT 3
#define SLOTS 512
#define MAILBOX 128
#define MiB ((size_t)1 << 20)
#define MIN_OPS 50000

typedef struct {
    unsigned char *p;
    size_t size;
} block_t;

static struct {
    pthread_mutex_t lock;
    block_t items[MAILBOX];
    unsigned n;
} mail[NT];

static volatile int stop;
static int corrupt, failed;
static unsigned long ops_done;

/* The bytes of b that tag_ends wrote are intact (else corrupt is set); free b. */
static void check_and_free(block_t *b) {
    if (!tag_ends_ok(b->p, b->size, 32))
        __atomic_store_n(&corrupt, 1, __ATOMIC_RELAXED);
    alloy_free(b->p);
    b->p = NULL;
}

static size_t random_size(uint64_t *s) {
    uint64_t r = pattern_rng(s);
    switch (r % 32) {
    case 0: return 256 * 1024 + 1 + r % (700 * 1024); /* large */
    case 1:
        return r % 8 == 0 ? MiB + 1 + r % (3 * MiB) : 8192 + r % 60000; /* sometimes a direct map */
    case 2:
    case 3: return 1024 + r % 8000;
    default: return 1 + (r >> 8) % 1024;
    }
}

static void *worker(void *arg) {
    int id = (int)(intptr_t)arg;
    uint64_t s = 0x9e3779b97f4a7c15ull * (uint64_t)(id + 1);
    static __thread block_t slots[SLOTS];
    for (unsigned long i = 0; !stop; i++) {
        unsigned k = (unsigned)(pattern_rng(&s) % SLOTS);
        if (slots[k].p) {
            if (pattern_rng(&s) % 4 == 0) { /* hand it to another thread */
                int to = (int)(pattern_rng(&s) % NT);
                pthread_mutex_lock(&mail[to].lock);
                if (mail[to].n < MAILBOX) {
                    mail[to].items[mail[to].n++] = slots[k];
                    slots[k].p = NULL;
                }
                pthread_mutex_unlock(&mail[to].lock);
            }
            if (slots[k].p)
                check_and_free(&slots[k]);
        } else {
            slots[k].size = random_size(&s);
            slots[k].p =
                pattern_rng(&s) % 8 ? alloy_malloc(slots[k].size) : alloy_calloc(1, slots[k].size);
            if (!slots[k].p) {
                __atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
                break;
            }
            tag_ends(slots[k].p, slots[k].size, 32);
        }
        if (i % 64 == 0) {
            pthread_mutex_lock(&mail[id].lock);
            while (mail[id].n)
                check_and_free(&mail[id].items[--mail[id].n]);
            pthread_mutex_unlock(&mail[id].lock);
        }
        if (i % 1024 == 0) {
            if (alloy_ctl("thread.tcache.flush", NULL, NULL, NULL, 0) != 0)
                __atomic_store_n(&failed, 2, __ATOMIC_RELAXED);
            uint64_t v;
            size_t len = sizeof v;
            if (alloy_ctl("stats.allocated", &v, &len, NULL, 0) != 0 ||
                alloy_ctl("stats.classes.31.allocated", &v, &len, NULL, 0) != 0)
                __atomic_store_n(&failed, 3, __ATOMIC_RELAXED);
        }
        __atomic_add_fetch(&ops_done, 1, __ATOMIC_RELAXED);
    }
    for (unsigned k = 0; k < SLOTS; k++)
        if (slots[k].p)
            check_and_free(&slots[k]);
    return NULL;
}

static int stats_add_up(alloy_stats_t *t) {
    if (alloy_stats_read(t) != 0)
        return 0;
    size_t allocated = 0, active = 0, mapped = 0, tcache = 0, central = 0;
    for (unsigned id = 0; id < 256; id++) {
        alloy_stats_t h = {.size = sizeof h};
        if (alloy_heap_stats_read(id, &h) != 0)
            continue;
        if (!(h.allocated <= h.active && h.active <= h.resident && h.resident <= h.mapped &&
              h.allocated + h.tcache_bytes + h.central_bytes <= h.active))
            return 0;
        allocated += h.allocated;
        active += h.active;
        mapped += h.mapped;
        tcache += h.tcache_bytes;
        central += h.central_bytes;
    }
    return t->allocated == allocated && t->active == active && t->mapped == mapped + t->metadata &&
           t->tcache_bytes == tcache && t->central_bytes == central && t->allocated <= t->active &&
           t->active <= t->resident && t->resident <= t->mapped &&
           t->allocated + t->tcache_bytes + t->central_bytes <= t->active;
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

/* "bg-toggle": two threads turn the background thread on and off at the
 * same time.  Every call must return 0 and none may block for good (alarm
 * turns a hang into a failure); at the end it is off. */
static int toggle_errors;

static void *toggler(void *arg) {
    for (int i = 0; i < 2000; i++) {
        bool v = (i + (int)(intptr_t)arg) % 2;
        if (alloy_ctl("background_thread", NULL, NULL, &v, sizeof v) != 0)
            __atomic_add_fetch(&toggle_errors, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

static int bg_toggle(int rounds) {
    alarm(30); /* 40 rounds take about 5 s */
    for (int r = 0; r < rounds; r++) {
        pthread_t t[2];
        for (intptr_t i = 0; i < 2; i++)
            pthread_create(&t[i], NULL, toggler, (void *)i);
        for (int i = 0; i < 2; i++)
            pthread_join(t[i], NULL);
    }
    CHECK_EQ_U(toggle_errors, 0);
    bool off = false, on = true;
    size_t len = sizeof on;
    CHECK(alloy_ctl("background_thread", NULL, NULL, &off, sizeof off) == 0);
    CHECK(alloy_ctl("background_thread", &on, &len, NULL, 0) == 0 && !on);
    return CHECK_DONE();
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "bg-toggle"))
        return bg_toggle(argc > 2 ? atoi(argv[2]) : 40);
    int rounds = argc > 1 ? atoi(argv[1]) : 300;
    alloy_thread_flush();
    alloy_stats_t st = {.size = sizeof st};
    CHECK(stats_add_up(&st));
    size_t base = st.allocated;
    uint64_t epoch0 = 0, epoch = 0, one = 1;
    size_t len8 = sizeof epoch0;
    CHECK(alloy_ctl("epoch", &epoch0, &len8, NULL, 0) == 0);

    for (int i = 0; i < NT; i++)
        pthread_mutex_init(&mail[i].lock, NULL);
    pthread_t t[NT];
    for (int i = 0; i < NT; i++)
        pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);

    static const int64_t decays[] = {0, 1, 50, 1000, -1, 10};
    static const char *const policies[] = {"clip", "guard", "pow2"};
    int64_t last_decay = 1000;
    const char *last_policy = "guard";
    bool bg = false;
    int bad = 0;
    unsigned heaps = 0;
    size_t ulen = sizeof heaps;
    CHECK(alloy_ctl("heaps.count", &heaps, &ulen, NULL, 0) == 0 && heaps >= 1);
    /* at least `rounds` rounds, and on until the workers have done enough
     * operations to have raced with them (a loaded machine runs them slowly) */
    int r = 0;
    for (;
         r < rounds || (__atomic_load_n(&ops_done, __ATOMIC_RELAXED) < MIN_OPS && r < 100 * rounds);
         r++) {
        int64_t d = decays[r % 6];
        bad += alloy_ctl("decay_ms", NULL, NULL, &d, sizeof d) != 0;
        last_decay = d;
        const char *pol = policies[(r / 2) % 3];
        bad += alloy_ctl("batch_policy", NULL, NULL, &pol, sizeof pol) != 0;
        last_policy = pol;
        if (r % 5 == 0) {
            bg = !bg;
            bad += alloy_ctl("background_thread", NULL, NULL, &bg, sizeof bg) != 0;
        }
        bad += alloy_ctl("thread.tcache.flush", NULL, NULL, NULL, 0) != 0;
        bad += alloy_ctl("epoch", &epoch, &len8, &one, sizeof one) != 0;
        if (r % 7 == 0)
            bad += alloy_ctl("purge", NULL, NULL, NULL, 0) != 0;
        if (r % 11 == 0) { /* move to another automatic heap and back */
            unsigned id = (unsigned)r % heaps, zero = 0;
            bad += alloy_ctl("thread.heap", NULL, NULL, &id, sizeof id) != 0;
            void *p = alloy_malloc(100);
            alloy_free(p);
            bad += alloy_ctl("thread.heap", NULL, NULL, &zero, sizeof zero) != 0;
        }
        if (r % 13 == 0) { /* an explicit heap comes and goes */
            unsigned id = 0;
            bad += alloy_ctl("heaps.create", &id, &ulen, NULL, 0) != 0;
            alloy_heap_t *h = alloy_heap_from_id(id);
            void *p = h ? alloy_heap_malloc(h, 5000) : NULL;
            bad += p == NULL;
            char name[32];
            snprintf(name, sizeof name, "heap.%u.destroy", id);
            bad += alloy_ctl(name, NULL, NULL, NULL, 0) != 0;
        }
        uint64_t v;
        bad += alloy_ctl("stats.resident", &v, &len8, NULL, 0) != 0;
        sleep_ms(1);
    }
    stop = 1;
    for (int i = 0; i < NT; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < NT; i++)
        while (mail[i].n)
            check_and_free(&mail[i].items[--mail[i].n]);
    CHECK_EQ_U(bad, 0);
    CHECK_EQ_U(corrupt, 0);
    CHECK_EQ_U(failed, 0);
    CHECK(ops_done >= MIN_OPS);

    /* the last value written is the one read */
    int64_t decay = 0;
    size_t ilen = sizeof decay;
    CHECK(alloy_ctl("decay_ms", &decay, &ilen, NULL, 0) == 0 && decay == last_decay);
    const char *pol = NULL;
    size_t plen = sizeof pol;
    CHECK(alloy_ctl("batch_policy", &pol, &plen, NULL, 0) == 0 && pol && !strcmp(pol, last_policy));
    bool on = !bg;
    size_t blen = sizeof on;
    CHECK(alloy_ctl("background_thread", &on, &blen, NULL, 0) == 0 && on == bg);
    CHECK(alloy_ctl("epoch", &epoch, &len8, NULL, 0) == 0);
    CHECK_EQ_U(epoch, epoch0 + (uint64_t)r);
    bg = false;
    CHECK(alloy_ctl("background_thread", NULL, NULL, &bg, sizeof bg) == 0);
    CHECK(alloy_ctl("background_thread", &on, &blen, NULL, 0) == 0 && !on);

    /* quiescent, every block freed: the counters add up and come back */
    alloy_thread_flush();
    CHECK(stats_add_up(&st));
    CHECK_EQ_U(st.tcache_bytes, 0);
    CHECK_EQ_U(st.large_allocated, 0);
    if (st.allocated > base + 65536)
        fprintf(stderr, "allocated %zu, %zu before the threads\n", st.allocated, base);
    CHECK(st.allocated <= base + 65536); /* what the exited threads' TLS may keep */
    for (unsigned c = 0; c < 208; c++) {
        alloy_class_stats_t cs = {.size = sizeof cs};
        CHECK(alloy_class_stats_read(c, &cs) == 0);
        CHECK(cs.objects_released <= cs.objects_fetched);
        /* out of the central tier (spans and transfer caches): live, or in
         * thread caches */
        CHECK_EQ_U((cs.objects_fetched - cs.objects_released) * cs.class_size,
                   cs.allocated + cs.tcache_bytes);
        CHECK(cs.transfer_bytes <= cs.central_bytes);
    }
    /* and after a purge nothing dirty is left */
    alloy_purge();
    CHECK(stats_add_up(&st));
    CHECK_EQ_U(st.pageheap_free_bytes, 0);
    fprintf(stderr, "%d rounds of ctl writes, %lu allocator operations\n", r, ops_done);
    return CHECK_DONE();
}
