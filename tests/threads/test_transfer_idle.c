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
 *          2 batches after some round. */
#include <stdio.h>
#include <string.h>

#include "alloy.h"
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

int main(void) {
    unsigned c = class_of(SIZE);
    CHECK(c != ~0u);
    if (c == ~0u)
        return CHECK_DONE();
    alloy_class_stats_t s0 = class_stats(c);
    for (unsigned i = 0; i < N; i++) {
        blocks[i] = alloy_malloc(SIZE);
        CHECK(blocks[i] != NULL);
        if (blocks[i])
            memset(blocks[i], 1, SIZE);
    }
    for (unsigned i = 0; i < N; i++)
        alloy_free(blocks[i]);
    alloy_class_stats_t s = class_stats(c);
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
    return CHECK_DONE();
}
