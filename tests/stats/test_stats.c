/* SPDX-License-Identifier: MIT */
/* test_stats.c - the counters of the paper, and the batch policy chosen with
 * ALLOY_CONF.  Usage: test_stats clip|guard|pow2|limit  (ctest sets ALLOY_CONF
 * to match: batch_policy:<p>, or tcache_max_bytes:65536 for "limit").
 *
 * The saturated 384-byte workload of seed 002: one thread keeps many 384-byte
 * objects alive and cycles them.  Under clip the batch ends at 682 objects
 * while the span for it holds 32, so fetches come back short; under guard
 * and pow2 it stops at 512, which the span holds, and no fetch is short.
 * Guard and pow2 differ on a class whose limit L(S) is not a power of two
 * and whose span holds L(S): the same workload on 3072-byte objects (L = 85)
 * takes the thread's batch to L under guard and to the largest power of two
 * below it (64) under pow2; the batch is read from the thread's own cache. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloy.h"
#include "check.h"
#include "tcache.h"

#define LIVE 20000
#define C384 31 /* class index of 384 bytes */

static void *objs[LIVE];

static void saturate(size_t size, int live) {
    for (int round = 0; round < 20; round++) {
        for (int i = 0; i < live; i++)
            objs[i] = malloc(size);
        for (int i = 0; i < live; i++)
            free(objs[i]);
    }
}

/* The batch the thread reached on 3072-byte objects: the limit under guard,
 * the largest power of two below it under pow2. */
static void check_growth(const char *mode) {
    unsigned b = ay_size_bin(3072);
    alloy_class_stats_t c = {.size = sizeof c};
    CHECK(b > 0 && alloy_class_stats_read(b - 1, &c) == 0);
    CHECK_EQ_U(c.class_size, 3072);
    saturate(3072, 2000);
    ay_tcache_t *tc = ay_tcache_get();
    CHECK(tc != NULL);
    uint32_t reached = tc->batch[b], pow2 = 1;
    while (pow2 * 2 <= c.batch_limit)
        pow2 *= 2;
    fprintf(stderr, "%s: 3072-byte batch %u (limit %u, terminal %u)\n", mode, reached,
            c.batch_limit, c.terminal_batch);
    CHECK(pow2 < c.batch_limit); /* the limit is not a power of two: the policies differ */
    CHECK_EQ_U(c.short_fetches, 0);
    if (!strcmp(mode, "guard"))
        CHECK_EQ_U(reached, c.batch_limit);
    else
        CHECK_EQ_U(reached, pow2);
    CHECK_EQ_U(c.terminal_batch, reached);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "guard";
    alloy_class_stats_t c = {.size = sizeof c};
    CHECK(alloy_class_stats_read(C384, &c) == 0);
    CHECK_EQ_U(c.class_size, 384);
    CHECK(alloy_class_stats_read(208, &c) == ENOENT);

    if (!strcmp(mode, "limit")) {
        /* many classes, many objects: the per-thread limit keeps the cache small */
        static void *many[50][400];
        for (int round = 0; round < 5; round++) {
            for (int k = 0; k < 50; k++)
                for (int i = 0; i < 400; i++)
                    many[k][i] = malloc(64 + (size_t)k * 160);
            for (int k = 0; k < 50; k++)
                for (int i = 0; i < 400; i++)
                    free(many[k][i]);
        }
        /* the limit is enforced at slow-path events: cause some with a
         * class whose own list stays small (16-byte objects) */
        static void *small[5000];
        for (int i = 0; i < 5000; i++)
            small[i] = malloc(16);
        for (int i = 0; i < 5000; i++)
            free(small[i]);
        alloy_stats_t s = {.size = sizeof s};
        CHECK(alloy_stats_read(&s) == 0);
        /* checked every 64 slow-path events or a quarter of the limit
         * fetched, so it may overshoot by what those bring in; without the
         * limit this run caches over 1 MiB */
        if (s.tcache_bytes > 4 * 65536)
            fprintf(stderr, "tcache_bytes %zu\n", s.tcache_bytes);
        CHECK(s.tcache_bytes <= 4 * 65536);
        return CHECK_DONE();
    }

    saturate(384, LIVE);
    CHECK(alloy_class_stats_read(C384, &c) == 0);
    CHECK(c.slow_path_calls > 0);
    CHECK_EQ_U(c.objects_fetched - c.objects_released, (c.tcache_bytes + c.allocated) / 384);
    if (!strcmp(mode, "clip")) {
        CHECK_EQ_U(c.batch_limit, 682);
        CHECK_EQ_U(c.terminal_batch, 682);
        CHECK(c.short_fetches > c.slow_path_calls / 2);
    } else {
        CHECK_EQ_U(c.terminal_batch, 512);
        CHECK_EQ_U(c.short_fetches, 0);
        check_growth(mode);
    }

    /* exact accounting: 1000 live 384-byte blocks are 384000 bytes */
    alloy_thread_flush();
    CHECK(alloy_class_stats_read(C384, &c) == 0);
    CHECK_EQ_U(c.allocated, 0);
    CHECK_EQ_U(c.tcache_bytes, 0);
    for (int i = 0; i < 1000; i++)
        objs[i] = malloc(384);
    CHECK(alloy_class_stats_read(C384, &c) == 0);
    CHECK_EQ_U(c.allocated, 384000);
    alloy_stats_t s = {.size = sizeof s};
    CHECK(alloy_stats_read(&s) == 0);
    CHECK_EQ_U(s.version, ALLOY_STATS_VERSION);
    CHECK_EQ_U(s.nclasses, 208);
    CHECK(s.allocated >= 384000);
    CHECK(s.allocated <= s.active && s.active <= s.resident && s.resident <= s.mapped);
    for (int i = 0; i < 1000; i++)
        free(objs[i]);

    /* a large block shows in large_allocated */
    size_t before = s.large_allocated;
    void *big = malloc(1u << 20);
    CHECK(alloy_stats_read(&s) == 0);
    CHECK_EQ_U(s.large_allocated - before, 1u << 20);
    free(big);

    /* size checks of the versioned structs */
    alloy_stats_t tiny = {.size = 4};
    CHECK(alloy_stats_read(&tiny) == EINVAL);
    CHECK(alloy_stats_read(NULL) == EINVAL);
    return CHECK_DONE();
}
