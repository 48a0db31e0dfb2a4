/* SPDX-License-Identifier: MIT */
/* test_transfer_idle.c - a transfer cache that no thread takes from holds a
 * few batches only (transfer.h, AY_TRANSFER_IDLE_BATCHES): blocks of a class
 * freed in bulk and not asked for again go back to their spans at once,
 * while a class that is taken from keeps the ring's slots.  Run with
 * ALLOY_CONF=decay_ms:100000 (no purge meanwhile; decay_ms:-1 turns the
 * rule off, as it turns off everything given back on the clock) and
 * batch_budget:16k (batches of 16 KiB at most, so that the ring's own bound,
 * transfer_bytes, is many batches).
 *   idle   2,048 blocks of 1 KiB allocated (none from a transfer cache: it
 *          is empty) and freed: at most 2 batches of the class stay in its
 *          transfer cache (before: 256 KiB of the 2 MiB freed stayed);
 *   busy   the same blocks allocated and freed 20 times over: the frees'
 *          overflows come right after takes, and the ring holds more than
 *          2 batches after some round.
 * Before both, with this thread's cache the only one live, the same blocks
 * allocated and freed insert nothing into the transfer cache: a batch goes
 * straight to its spans (tcache.c, bin_release; before: 2 MiB inserted).
 * Then a second thread makes its cache and waits, so that the two cases
 * above see the transfer caches a threaded program uses. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "alloy.h"
#include "alloy/ctl.h"
#include "check.h"

#define N 2048
#define SIZE 1024

static void *blocks[N];

static unsigned class_of(size_t size) {
    for (unsigned c = 0;; c++) {
        alloy_class_stats_t cs = {.size = sizeof cs};
        if (alloy_class_stats_read(c, &cs) != 0)
            return ~0u;
        if (cs.class_size == size)
            return c;
    }
}

static alloy_class_stats_t class_stats(unsigned c) {
    alloy_class_stats_t cs = {.size = sizeof cs};
    CHECK(alloy_class_stats_read(c, &cs) == 0);
    return cs;
}

static pthread_mutex_t peer_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t peer_cond = PTHREAD_COND_INITIALIZER;
static int peer_state; /* 1: its cache is made; 2: the test is over */

/* A second live thread cache: reading its cached bytes makes it. */
static void *peer_main(void *arg) {
    (void)arg;
    uint64_t bytes;
    size_t len = sizeof bytes;
    CHECK(alloy_ctl("thread.tcache.bytes", &bytes, &len, NULL, 0) == 0);
    pthread_mutex_lock(&peer_lock);
    peer_state = 1;
    pthread_cond_broadcast(&peer_cond);
    while (peer_state != 2)
        pthread_cond_wait(&peer_cond, &peer_lock);
    pthread_mutex_unlock(&peer_lock);
    return NULL;
}

static void alloc_free_all(void) {
    for (unsigned i = 0; i < N; i++) {
        blocks[i] = alloy_malloc(SIZE);
        CHECK(blocks[i] != NULL);
        if (blocks[i])
            memset(blocks[i], 1, SIZE);
    }
    for (unsigned i = 0; i < N; i++)
        alloy_free(blocks[i]);
}

int main(void) {
    unsigned c = class_of(SIZE);
    CHECK(c != ~0u);
    if (c == ~0u)
        return CHECK_DONE();
    alloy_class_stats_t s0 = class_stats(c);
    alloc_free_all(); /* one live thread cache */
    alloy_class_stats_t s = class_stats(c);
    printf("one thread: %llu objects inserted\n",
           (unsigned long long)(s.transfer_inserted - s0.transfer_inserted));
    CHECK(s.transfer_inserted == s0.transfer_inserted);
    CHECK(s.objects_released > s0.objects_released); /* they did go back */

    pthread_t peer;
    CHECK(pthread_create(&peer, NULL, peer_main, NULL) == 0);
    pthread_mutex_lock(&peer_lock);
    while (peer_state != 1)
        pthread_cond_wait(&peer_cond, &peer_lock);
    pthread_mutex_unlock(&peer_lock);
    s0 = class_stats(c);
    alloc_free_all(); /* two live thread caches */
    s = class_stats(c);
    size_t inserted = (size_t)(s.transfer_inserted - s0.transfer_inserted) * SIZE;
    /* one batch is at most what a thread's list gives back at a time: the
     * class's batch limit L(S) */
    size_t batch = (size_t)s.batch_limit * SIZE;
    printf("idle: %zu bytes inserted, %zu held, batch at most %zu\n", inserted, s.transfer_bytes,
           batch);
    CHECK(inserted > 4 * batch); /* many batches went through it */
    CHECK(s.transfer_bytes > 0 && s.transfer_bytes <= 2 * batch);

    size_t most = 0;
    for (unsigned round = 0; round < 20; round++) {
        for (unsigned i = 0; i < N; i++)
            CHECK((blocks[i] = alloy_malloc(SIZE)) != NULL);
        for (unsigned i = 0; i < N; i++)
            alloy_free(blocks[i]);
        s = class_stats(c);
        most = s.transfer_bytes > most ? s.transfer_bytes : most;
    }
    printf("busy: %zu bytes held at most\n", most);
    CHECK(most > 2 * batch);
    pthread_mutex_lock(&peer_lock);
    peer_state = 2;
    pthread_cond_broadcast(&peer_cond);
    pthread_mutex_unlock(&peer_lock);
    pthread_join(peer, NULL);
    return CHECK_DONE();
}
