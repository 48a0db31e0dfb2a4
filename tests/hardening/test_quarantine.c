/* SPDX-License-Identifier: MIT */
/* test_quarantine.c - the secure flavour's quarantine (quarantine.h,
 * tcache.c), a setting (quarantine:BYTES, 0 by default): with it on, a
 * freed block is not handed out again before it has waited, a thread holds
 * at most BYTES there, and its batches do not make a thread's list
 * overflow; with it off, or for a class that finds no room within BYTES, a
 * freed block is handed out again by the next malloc of its class.  Reads
 * the thread's cache record, so it is built with AY_SECURE=1 against
 * liballoy_secure.a.
 *   bound:  (quarantine on) frees of every class that waits (16 B to
 *           4 KiB), 200 of each: every class that joined has a K that is
 *           a power of two from K_MIN to AY_QUARANTINE_BLOCKS, the
 *           record's `held` is what those K say (the sum of 2(K + 1) x
 *           size) and at most the setting, a class freed first reached the
 *           most K, and some class freed later did not join (the bound
 *           binds: with no bound, every class freed joins and reaches the
 *           most K);
 *   splice: (quarantine on) 100,000 malloc+free pairs of 4 KiB, one
 *           thread: its list never overflows (tcache_overflows 0), as each
 *           batch back from the quarantine holds the blocks the mallocs
 *           took since the last one (a splice that overflowed made every
 *           ninth free an overflow, and the next miss fetch the blocks
 *           back);
 *   reuse on|off: a freed 80-byte block is, with `on`, not among the next
 *           64 blocks of its size, nor, once its class is in use, handed
 *           out by the next 15 of its size while as many others are freed;
 *           with `off` (no quarantine, or one too small for the class's
 *           least share), it is the very next block of its size. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloy.h"
#include "check.h"
#include "conf.h"
#include "quarantine.h"
#include "tcache.h"

static void *volatile sink;

/* 200 frees of `size` bytes, in batches of 40, so that blocks of the class
 * rotate through the quarantine (a K of 16 rotates every 17 frees). */
static void churn(size_t size) {
    void *p[40];
    for (int round = 0; round < 5; round++) {
        for (int i = 0; i < 40; i++)
            p[i] = malloc(size);
        for (int i = 0; i < 40; i++)
            free(p[i]);
    }
}

static int bound(void) {
    static bool churned[AY_NUM_BINS];
    churn(64); /* first: its K reaches the most */
    for (size_t size = 16; size <= AY_QUARANTINE_MAX_BLOCK; size += size < 256 ? 16 : size / 8) {
        churn(size);
        churned[ay_size_bin(size)] = true;
    }
    ay_tcache_t *tc = ay_tcache_get();
    CHECK(tc && tc->quarantine);
    if (!tc || !tc->quarantine)
        return CHECK_DONE();
    const ay_quarantine_t *q = tc->quarantine;
    size_t held = 0;
    unsigned most = 0, less = 0, out = 0;
    for (unsigned b = 1; b < AY_NUM_BINS; b++) {
        uint32_t k = q->fresh[b].limit & AY_QLIST_K_MASK, size = ay_bin_size[b];
        if (ay_quarantine_k_max(size) == 0 || !q->joined[b]) {
            CHECK(k == 0 || (!churned[b] && k == AY_QUARANTINE_K_MIN));
            out += churned[b];
            continue;
        }
        CHECK(k >= AY_QUARANTINE_K_MIN && k <= AY_QUARANTINE_BLOCKS && (k & (k - 1)) == 0);
        held += 2 * (size_t)(k + 1) * size;
        most += churned[b] && k == AY_QUARANTINE_BLOCKS;
        less += churned[b] && k < AY_QUARANTINE_BLOCKS;
    }
    uint32_t k64 = q->fresh[ay_size_bin(64)].limit & AY_QLIST_K_MASK;
    fprintf(stderr,
            "quarantine: held %zu bytes (bound %zu), of the classes freed %u at K %u, %u below, "
            "%u not in; 64 B: K %u\n",
            q->held, (size_t)ay_conf.quarantine, most, AY_QUARANTINE_BLOCKS, less, out, k64);
    CHECK(q->bound == ay_conf.quarantine && q->bound > 0);
    CHECK(held == q->held);
    CHECK(q->held <= ay_conf.quarantine);
    CHECK(k64 == AY_QUARANTINE_BLOCKS);
    CHECK(out > 0);
    return CHECK_DONE();
}

static int splice(void) {
    for (int i = 0; i < 100000; i++) {
        void *p = malloc(4096);
        sink = p;
        free(p);
    }
    ay_tcache_t *tc = ay_tcache_get();
    CHECK(tc && tc->quarantine);
    if (!tc)
        return CHECK_DONE();
    fprintf(stderr, "quarantine: %llu overflows in 100000 pairs of 4 KiB\n",
            (unsigned long long)tc->overflows);
    CHECK(tc->overflows == 0);
    return CHECK_DONE();
}

static int reuse(bool on) {
    static char *b[64];
    char *p = malloc(80);
    free(p);
    b[0] = malloc(80);
    fprintf(stderr, "quarantine: a freed block %s at the next malloc of its size\n",
            b[0] == p ? "comes back" : "does not come back");
    if (!on) {
        CHECK(b[0] == p);
        free(b[0]);
        return CHECK_DONE();
    }
    /* the block just freed is not among the next 64 of its size */
    int reused = b[0] == p;
    for (int i = 1; i < 64; i++) {
        b[i] = malloc(80);
        reused |= b[i] == p;
    }
    CHECK(!reused);
    for (int i = 0; i < 64; i++)
        free(b[i]);
    /* ... nor by the next 15 of its size while as many others are freed:
     * it waits for at least K + 1 more frees of its class, and the 64 frees
     * above have doubled the class's K from 2 to 16 (quarantine.h) */
    p = malloc(80);
    free(p);
    reused = 0;
    for (int i = 0; i < 15; i++) {
        char *q = malloc(80);
        reused |= q == p;
        free(q);
    }
    CHECK(!reused);
    return CHECK_DONE();
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "bound") == 0)
        return bound();
    if (argc == 2 && strcmp(argv[1], "splice") == 0)
        return splice();
    if (argc == 3 && strcmp(argv[1], "reuse") == 0)
        return reuse(strcmp(argv[2], "on") == 0);
    fprintf(stderr, "usage: test_quarantine bound|splice|reuse on|off\n");
    return 2;
}
