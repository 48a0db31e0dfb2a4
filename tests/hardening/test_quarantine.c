/* SPDX-License-Identifier: MIT */
/* test_quarantine.c - the secure flavour's quarantine is bounded in bytes
 * per thread, and its batches do not make a thread's list overflow
 * (quarantine.h, tcache.c).  Reads the thread's cache record, so it is
 * built with AY_SECURE=1 against liballoy_secure.a.
 *   bound:  frees of every class that waits (16 B to 4 KiB), 200 of each:
 *           every class's K is a power of two from K_MIN to
 *           AY_QUARANTINE_BLOCKS, the record's `extra` is what those K say
 *           (the sum of 2(K - K_MIN) x size) and at most
 *           AY_QUARANTINE_THREAD_BYTES, a class freed first reached the
 *           most K, and some class freed later did not (the bound binds:
 *           with no bound, every class freed reaches the most);
 *   splice: 100,000 malloc+free pairs of 4 KiB, one thread: its list
 *           never overflows (tcache_overflows 0), as each batch back from
 *           the quarantine holds the blocks the mallocs took since the
 *           last one (a splice that overflowed made every ninth free an
 *           overflow, and the next miss fetch the blocks back). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloy.h"
#include "check.h"
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
    const ay_quarantine_t *q = tc->quarantine;
    size_t extra = 0;
    unsigned most = 0, less = 0;
    for (unsigned b = 1; b < AY_NUM_BINS; b++) {
        uint32_t k = q->fresh[b].limit & AY_QLIST_K_MASK, size = ay_bin_size[b];
        if (ay_quarantine_k_max(size) == 0) {
            CHECK(k == 0);
            continue;
        }
        CHECK(k >= AY_QUARANTINE_K_MIN && k <= AY_QUARANTINE_BLOCKS && (k & (k - 1)) == 0);
        extra += 2 * (size_t)(k - AY_QUARANTINE_K_MIN) * size;
        most += churned[b] && k == AY_QUARANTINE_BLOCKS;
        less += churned[b] && k < AY_QUARANTINE_BLOCKS;
    }
    uint32_t k64 = q->fresh[ay_size_bin(64)].limit & AY_QLIST_K_MASK;
    fprintf(stderr,
            "quarantine: extra %zu bytes (bound %zu), of the classes freed %u at K %u, %u below; "
            "64 B: K %u\n",
            q->extra, AY_QUARANTINE_THREAD_BYTES, most, AY_QUARANTINE_BLOCKS, less, k64);
    CHECK(extra == q->extra);
    CHECK(q->extra <= AY_QUARANTINE_THREAD_BYTES);
    CHECK(k64 == AY_QUARANTINE_BLOCKS);
    CHECK(less > 0);
    return CHECK_DONE();
}

static int splice(void) {
    for (int i = 0; i < 100000; i++) {
        void *p = malloc(4096);
        sink = p;
        free(p);
    }
    ay_tcache_t *tc = ay_tcache_get();
    CHECK(tc);
    fprintf(stderr, "quarantine: %llu overflows in 100000 pairs of 4 KiB\n",
            (unsigned long long)tc->overflows);
    CHECK(tc->overflows == 0);
    return CHECK_DONE();
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "bound") == 0)
        return bound();
    if (argc == 2 && strcmp(argv[1], "splice") == 0)
        return splice();
    fprintf(stderr, "usage: test_quarantine bound|splice\n");
    return 2;
}
