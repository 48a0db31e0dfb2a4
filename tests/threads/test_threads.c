/* SPDX-License-Identifier: MIT */
/* test_threads.c - thread churn: thousands of short-lived threads allocate,
 * free each other's blocks and exit; their caches must go back to the
 * central caches, and the registry must not grow without bound. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alloy.h"
#include "check.h"

#define WAVES 100
#define PER_WAVE 30

static void *handoff[WAVES * PER_WAVE];

static void *worker(void *arg) {
    uintptr_t id = (uintptr_t)arg;
    void *keep[64];
    for (int i = 0; i < 64; i++) {
        keep[i] = malloc(16 + (id * 7 + (uintptr_t)i * 13) % 2000);
        memset(keep[i], (int)id, 16);
    }
    for (int i = 0; i < 63; i++)
        free(keep[i]);
    handoff[id] = keep[63]; /* freed by the next wave: a cross-thread free */
    if (id >= PER_WAVE) {
        free(handoff[id - PER_WAVE]);
        handoff[id - PER_WAVE] = NULL;
    }
    return NULL;
}

int main(void) {
    pthread_t t[PER_WAVE];
    for (int w = 0; w < WAVES; w++) {
        for (int i = 0; i < PER_WAVE; i++)
            CHECK(pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(w * PER_WAVE + i)) == 0);
        for (int i = 0; i < PER_WAVE; i++)
            pthread_join(t[i], NULL);
    }
    for (int i = 0; i < WAVES * PER_WAVE; i++)
        free(handoff[i]);
    alloy_thread_flush();
    alloy_stats_t st = {.size = sizeof st};
    CHECK(alloy_stats_read(&st) == 0);
    CHECK(st.threads_live <= 1);        /* only this thread's cache is live */
    CHECK_EQ_U(st.tcache_bytes, 0);     /* exited threads gave their caches back */
    CHECK(st.allocated < (256u << 10)); /* nothing leaked by the churn */
    return CHECK_DONE();
}
