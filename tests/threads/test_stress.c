/* SPDX-License-Identifier: MIT */
/* test_stress.c - threads allocate random sizes, write a pattern derived
 * from the block's address and size into it, hand a share of their blocks to
 * other threads, and check the pattern before every free: an overlap, a lost
 * write or a block handed out twice breaks some pattern.
 * Usage: test_stress [threads] [operations per thread] */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloy.h"
#include "check.h"
#include "pattern.h"

#define SLOTS 4096
#define MAILBOX 256

typedef struct {
    unsigned char *p;
    size_t size;
} block_t;

/* one mailbox per thread: others drop blocks here, the owner frees them */
static struct {
    pthread_mutex_t lock;
    block_t items[MAILBOX];
    unsigned n;
} mail[64];

static int nthreads;
static long ops;
static int corrupt;

/* The bytes of b that tag_ends wrote are intact (else corrupt is set); free b. */
static void check_and_free(block_t *b) {
    if (!tag_ends_ok(b->p, b->size, 64))
        __atomic_store_n(&corrupt, 1, __ATOMIC_RELAXED);
    free(b->p);
}

static size_t random_size(uint64_t *s) {
    uint64_t r = pattern_rng(s);
    switch (r % 16) {
    case 0: return 1024 + r % 30000;
    case 1: return (r % 64 == 0) ? 200000 + r % 1200000 : 4096 + r % 8192;
    default: return 1 + (r >> 8) % 600;
    }
}

static void *worker(void *arg) {
    int id = (int)(intptr_t)arg;
    uint64_t s = 0x9e3779b97f4a7c15ull * (uint64_t)(id + 1);
    block_t *slots = calloc(SLOTS, sizeof *slots);
    for (long i = 0; i < ops; i++) {
        unsigned k = (unsigned)(pattern_rng(&s) % SLOTS);
        if (slots[k].p) {
            if (pattern_rng(&s) % 4 == 0) { /* cross-thread free: mail it */
                int to = (int)(pattern_rng(&s) % (uint64_t)nthreads);
                pthread_mutex_lock(&mail[to].lock);
                if (mail[to].n < MAILBOX) {
                    mail[to].items[mail[to].n++] = slots[k];
                    slots[k].p = NULL;
                }
                pthread_mutex_unlock(&mail[to].lock);
            }
            if (slots[k].p)
                check_and_free(&slots[k]);
            slots[k].p = NULL;
        } else {
            slots[k].size = random_size(&s);
            slots[k].p = pattern_rng(&s) % 8 ? malloc(slots[k].size) : calloc(1, slots[k].size);
            if (!slots[k].p) {
                __atomic_store_n(&corrupt, 2, __ATOMIC_RELAXED);
                break;
            }
            tag_ends(slots[k].p, slots[k].size, 64);
        }
        if (i % 64 == 0) { /* drain my mailbox */
            pthread_mutex_lock(&mail[id].lock);
            while (mail[id].n)
                check_and_free(&mail[id].items[--mail[id].n]);
            pthread_mutex_unlock(&mail[id].lock);
        }
    }
    for (unsigned k = 0; k < SLOTS; k++)
        if (slots[k].p)
            check_and_free(&slots[k]);
    free(slots);
    return NULL;
}

int main(int argc, char **argv) {
    nthreads = argc > 1 ? atoi(argv[1]) : 4;
    ops = argc > 2 ? atol(argv[2]) : 300000;
    if (nthreads < 1 || nthreads > 64)
        nthreads = 4;
    for (int i = 0; i < nthreads; i++)
        pthread_mutex_init(&mail[i].lock, NULL);
    pthread_t t[64];
    for (int round = 0; round < 2; round++) { /* second round reuses freed memory */
        for (int i = 0; i < nthreads; i++)
            pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
        for (int i = 0; i < nthreads; i++)
            pthread_join(t[i], NULL);
        for (int i = 0; i < nthreads; i++)
            while (mail[i].n)
                check_and_free(&mail[i].items[--mail[i].n]);
    }
    CHECK_EQ_U(corrupt, 0);
    /* quiescent: nothing is live but this thread's few allocations */
    alloy_thread_flush();
    alloy_stats_t st = {.size = sizeof st};
    CHECK(alloy_stats_read(&st) == 0);
    CHECK(st.allocated <= st.active && st.active <= st.resident && st.resident <= st.mapped);
    CHECK(st.allocated < (1u << 20));
    CHECK_EQ_U(st.tcache_bytes, 0);
    return CHECK_DONE();
}
