/* SPDX-License-Identifier: MIT */
/* test_policy.c - the pure policy module against seed 002's figures. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "policy.h"

static unsigned underfilled(ay_batch_policy_t pol) {
    ay_batch_params_t bp = ay_policy_default_params();
    bp.policy = pol;
    unsigned count = 0;
    for (unsigned c = 0; c < AY_NUM_CLASSES; c++) {
        size_t S = ay_policy_class_size(c);
        uint32_t n = ay_policy_terminal_batch(&bp, S);
        uint32_t q = ay_policy_span_objects(S, ay_policy_span_pages_for(&bp, S, n));
        CHECK(n >= 1 && n <= ay_policy_batch_limit(&bp, S));
        if (q < n)
            count++;
    }
    return count;
}

int main(void) {
    ay_batch_policy_t p0;
    /* the 208 classes, band by band */
    CHECK_EQ_U(ay_policy_class_size(0), 8);
    CHECK_EQ_U(ay_policy_class_size(15), 128);
    CHECK_EQ_U(ay_policy_class_size(16), 144);
    CHECK_EQ_U(ay_policy_class_size(71), 1024);
    CHECK_EQ_U(ay_policy_class_size(72), 1152);
    CHECK_EQ_U(ay_policy_class_size(127), 8192);
    CHECK_EQ_U(ay_policy_class_size(128), 9216);
    CHECK_EQ_U(ay_policy_class_size(183), 65536);
    CHECK_EQ_U(ay_policy_class_size(184), 73728);
    CHECK_EQ_U(ay_policy_class_size(207), 262144);
    CHECK_EQ_U(ay_policy_class_size(208), 0);

    /* classes are strictly increasing, and size_class is their inverse */
    for (unsigned c = 1; c < AY_NUM_CLASSES; c++)
        CHECK(ay_policy_class_size(c) > ay_policy_class_size(c - 1));
    for (size_t s = 1; s <= AY_MAX_SMALL_SIZE; s++) {
        unsigned c = ay_policy_size_class(s);
        if (c >= AY_NUM_CLASSES || ay_policy_class_size(c) < s ||
            (c > 0 && ay_policy_class_size(c - 1) >= s)) {
            CHECK(!"size_class is the smallest fitting class");
            break;
        }
    }
    CHECK_EQ_U(ay_policy_size_class(0), 0);
    CHECK_EQ_U(ay_policy_size_class(AY_MAX_SMALL_SIZE + 1), AY_NUM_CLASSES);
    CHECK_EQ_U(ay_policy_size_class((size_t)-1), AY_NUM_CLASSES);

    /* L(S), P(S,n), Q */
    ay_batch_params_t bp = ay_policy_default_params();
    CHECK_EQ_U(bp.policy, AY_BATCH_GUARD);
    CHECK_EQ_U(ay_policy_batch_limit(&bp, 8), 1024);
    CHECK_EQ_U(ay_policy_batch_limit(&bp, 384), 682);
    CHECK_EQ_U(ay_policy_batch_limit(&bp, 262144), 1);
    CHECK_EQ_U(ay_policy_span_pages(8, 1), 1);
    CHECK_EQ_U(ay_policy_span_pages(24, 1), 3);
    CHECK_EQ_U(ay_policy_span_pages(384, 682), 3); /* 1023 pages > 256: fallback */
    CHECK_EQ_U(ay_policy_span_pages(384, 512), 48);
    CHECK_EQ_U(ay_policy_span_objects(384, 3), 32);

    /* the 384-byte example: clip ends at 682 in a 32-object span, guard stays at 512 */
    bp.policy = AY_BATCH_CLIP;
    CHECK_EQ_U(ay_policy_terminal_batch(&bp, 384), 682);
    bp.policy = AY_BATCH_GUARD;
    CHECK_EQ_U(ay_policy_terminal_batch(&bp, 384), 512);
    bp.policy = AY_BATCH_POW2;
    CHECK_EQ_U(ay_policy_terminal_batch(&bp, 384), 512);

    /* seed 002 section 6.1: 80 underfilled classes under clip, none otherwise */
    CHECK_EQ_U(underfilled(AY_BATCH_CLIP), 80);
    CHECK_EQ_U(underfilled(AY_BATCH_GUARD), 0);
    CHECK_EQ_U(underfilled(AY_BATCH_POW2), 0);

    /* lean: guard's rule under L(S) = min(32 KiB / S, 128); no class underfills */
    bp.policy = AY_BATCH_LEAN;
    CHECK_EQ_U(ay_policy_batch_limit(&bp, 8), 128);
    CHECK_EQ_U(ay_policy_batch_limit(&bp, 384), 85);
    CHECK_EQ_U(ay_policy_batch_limit(&bp, 65536), 1);
    CHECK_EQ_U(ay_policy_terminal_batch(&bp, 8), 128);
    CHECK_EQ_U(underfilled(AY_BATCH_LEAN), 0);
    for (unsigned c = 0; c < AY_NUM_CLASSES; c++) { /* never more than guard's */
        size_t S = ay_policy_class_size(c);
        ay_batch_params_t g = ay_policy_default_params();
        uint32_t lean = ay_policy_terminal_batch(&bp, S), guard = ay_policy_terminal_batch(&g, S);
        if (lean > guard || (lean > 1 && (uint64_t)lean * S > 2 * AY_LEAN_BYTE_BUDGET)) {
            CHECK(!"lean's terminal batch is at most guard's, and about 32 KiB");
            break;
        }
    }
    CHECK(ay_policy_parse("lean", 4, &p0) == 0 && p0 == AY_BATCH_LEAN);
    CHECK(strcmp(ay_policy_name(AY_BATCH_LEAN), "lean") == 0);

    /* compact (the allocator's default): the paper's limit up to 1 KiB, a
     * sixteenth of the budget above; spans that hold the batch with at most
     * an eighth of their pages left over */
    bp.policy = AY_BATCH_COMPACT;
    CHECK_EQ_U(ay_policy_batch_limit(&bp, 8), 1024);
    CHECK_EQ_U(ay_policy_batch_limit(&bp, 1024), 256);
    CHECK_EQ_U(ay_policy_batch_limit(&bp, 1152), 14);
    CHECK_EQ_U(ay_policy_batch_limit(&bp, 65536), 1);
    CHECK_EQ_U(ay_policy_span_pages(1152, 1), 9); /* the paper's: lcm(1152, 4096) */
    CHECK_EQ_U(ay_policy_span_pages_for(&bp, 1152, 1), 2);
    CHECK_EQ_U(ay_policy_span_pages_for(&bp, 64, 1024), 16);
    CHECK_EQ_U(ay_policy_span_pages_for(&bp, 262144, 1), 64);
    CHECK_EQ_U(ay_policy_terminal_batch(&bp, 384), 682); /* its span holds it: no guard */
    CHECK_EQ_U(underfilled(AY_BATCH_COMPACT), 0);
    unsigned bad = 0;
    for (unsigned c = 0; c < AY_NUM_CLASSES; c++) {
        size_t S = ay_policy_class_size(c);
        for (uint32_t n = 1; n <= ay_policy_batch_limit(&bp, S); n++) {
            uint32_t pages = ay_policy_span_pages_for(&bp, S, n);
            size_t bytes = AY_PAGES_BYTES(pages);
            /* holds n, at most an eighth left over, and no page more than
             * that needs */
            int ok = ay_policy_span_objects(S, pages) >= n && (bytes % S) * 8 <= bytes &&
                     pages <= AY_MAX_SPAN_PAGES;
            for (uint32_t p = (uint32_t)((S * n + AY_PAGE_SIZE - 1) / AY_PAGE_SIZE);
                 ok && p < pages; p++)
                ok = (AY_PAGES_BYTES(p) % S) * 8 > AY_PAGES_BYTES(p);
            if (!ok && bad++ < 5)
                fprintf(stderr, "compact: S %zu n %u: %u pages\n", S, n, pages);
        }
        if (ay_policy_terminal_batch(&bp, S) != ay_policy_batch_limit(&bp, S) && bad++ < 5)
            fprintf(stderr, "compact: S %zu stops short of L(S)\n", S); /* no refusal */
    }
    CHECK_EQ_U(bad, 0);
    CHECK(ay_policy_parse("compact", 7, &p0) == 0 && p0 == AY_BATCH_COMPACT);
    CHECK(strcmp(ay_policy_name(AY_BATCH_COMPACT), "compact") == 0);
    bp.policy = AY_BATCH_GUARD;

    /* return threshold */
    CHECK_EQ_U(ay_policy_return_threshold(1, 4), 2);
    CHECK_EQ_U(ay_policy_return_threshold(64, 4), 128);
    CHECK_EQ_U(ay_policy_return_threshold(64, 3), 96);
    CHECK_EQ_U(ay_policy_return_threshold(64, 6), 192);
    CHECK_EQ_U(ay_policy_return_threshold(1, 3), 2);

    /* the transfer cache's rules: the idle rule (a take 10 ms ago or more:
     * 2 slots; not under decay_ms:-1) */
    CHECK_EQ_U(ay_policy_transfer_slots(1009, 1000, 1000), AY_TRANSFER_SLOTS);
    CHECK_EQ_U(ay_policy_transfer_slots(1010, 1000, 1000), AY_TRANSFER_IDLE_BATCHES);
    CHECK_EQ_U(ay_policy_transfer_slots(1010, 1000, 0), AY_TRANSFER_IDLE_BATCHES);
    CHECK_EQ_U(ay_policy_transfer_slots(5000, 1000, -1), AY_TRANSFER_SLOTS);
    /* insert: the oldest goes beyond the slots or the bound, never from an
     * empty ring */
    CHECK(!ay_policy_transfer_evicts(0, 0, 500, 100, 1000, 0, 1000));
    CHECK(!ay_policy_transfer_evicts(15, 60, 40, 100, 1005, 1000, 1000));
    CHECK(ay_policy_transfer_evicts(15, 61, 40, 100, 1005, 1000, 1000));
    CHECK(ay_policy_transfer_evicts(16, 16, 1, 100, 1005, 1000, 1000));
    CHECK(!ay_policy_transfer_evicts(1, 1, 1, 100, 1010, 1000, 1000));
    CHECK(ay_policy_transfer_evicts(2, 2, 1, 100, 1010, 1000, 1000));
    CHECK(!ay_policy_transfer_evicts(2, 2, 1, 100, 1010, 1000, -1));
    /* take: the newest; the low-water mark follows the count down only */
    CHECK_EQ_U(ay_policy_transfer_take(5), 4);
    CHECK_EQ_U(ay_policy_transfer_low(3, 2), 2);
    CHECK_EQ_U(ay_policy_transfer_low(3, 7), 3);
    /* decay: the batches below the mark, every one when all; due every
     * AY_DECAY_ROUND_MS, never under decay_ms:-1 */
    CHECK_EQ_U(ay_policy_transfer_decay(5, 2, 0).release, 2);
    CHECK_EQ_U(ay_policy_transfer_decay(5, 2, 0).low, 3);
    CHECK_EQ_U(ay_policy_transfer_decay(5, 2, 1).release, 5);
    CHECK_EQ_U(ay_policy_transfer_decay(5, 2, 1).low, 0);
    CHECK_EQ_U(ay_policy_transfer_decay(1, 3, 0).release, 1);
    CHECK_EQ_U(ay_policy_transfer_decay(1, 3, 0).low, 0);
    CHECK(!ay_policy_decay_round_due(1099, 1000, 1000));
    CHECK(ay_policy_decay_round_due(1100, 1000, 1000));
    CHECK(!ay_policy_decay_round_due(9000, 1000, -1));

    /* the per-CPU caches' capacity rule: min(list limit, slot_max) */
    CHECK_EQ_U(ay_policy_cpu_capacity(1, 4, 100), ay_policy_list_limit(1, 4));
    CHECK_EQ_U(ay_policy_cpu_capacity(1024, 4, 100), 100);
    /* need: the bytes beyond the limit that growing takes, none when it
     * fits or shrinks */
    CHECK_EQ_U(ay_policy_cpu_need(2, 10, 64, 1000, 2000), 0);
    CHECK_EQ_U(ay_policy_cpu_need(2, 10, 64, 1600, 2000), 112);
    CHECK_EQ_U(ay_policy_cpu_need(10, 2, 64, 5000, 2000), 0);
    /* grant: the slots that fit (2000 - 1800 = 200 bytes: 3 of 64), and the
     * batch cut to n * got / want; everything when it fits */
    ay_cpu_grant_t g = ay_policy_cpu_grant(8, 2, 10, 64, 1800, 2000);
    CHECK_EQ_U(g.cap, 5);
    CHECK_EQ_U(g.batch, 4);
    g = ay_policy_cpu_grant(8, 2, 10, 64, 0, 2000);
    CHECK_EQ_U(g.cap, 10);
    CHECK_EQ_U(g.batch, 8);
    g = ay_policy_cpu_grant(1, 0, 3, 64, 2000, 2000); /* nothing fits: capacity 0, batch 1 */
    CHECK_EQ_U(g.cap, 0);
    CHECK_EQ_U(g.batch, 1);
    /* the clock hand: over bin 0 and the bin that grows (2), clearing bin
     * 3's mark, to bin 4 (halved); then round again to bin 3, unmarked now */
    {
        uint32_t cap[6] = {0, 0, 8, 6, 5, 0}, batch[6] = {1, 1, 4, 3, 1, 1};
        uint8_t used[6] = {0, 0, 0, 1, 0, 0};
        unsigned hand = 0, steps = 0;
        ay_cpu_victim_t v = ay_policy_cpu_victim(cap, batch, used, 6, 2, &hand, &steps);
        CHECK_EQ_U(v.bin, 4);
        CHECK_EQ_U(v.cap, 2);
        CHECK_EQ_U(v.batch, 1);
        CHECK_EQ_U(used[3], 0);
        CHECK_EQ_U(hand, 5);
        cap[4] = v.cap;
        v = ay_policy_cpu_victim(cap, batch, used, 6, 2, &hand, &steps);
        CHECK_EQ_U(v.bin, 3);
        CHECK_EQ_U(v.cap, 3);
        CHECK_EQ_U(v.batch, 1);
        /* marked bins get a second chance: the hand clears their marks
         * and takes the first of them when it comes round again */
        used[3] = used[4] = 1;
        steps = 0;
        v = ay_policy_cpu_victim(cap, batch, used, 6, 2, &hand, &steps);
        CHECK_EQ_U(v.bin, 4);
        CHECK_EQ_U(used[3], 0);
        /* at most twice round in one steal: none when the steps run out */
        used[3] = used[4] = 1;
        steps = 10;
        v = ay_policy_cpu_victim(cap, batch, used, 6, 2, &hand, &steps);
        CHECK_EQ_U(v.bin, 0);
        CHECK_EQ_U(steps, 12);
    }
    /* the slots: each bin its list limit at the terminal batch, scaled to
     * the room, at least 2 */
    {
        uint32_t size[4] = {0, 64, 1024, 32768}, slot_max[4];
        ay_batch_params_t bp0 = ay_policy_default_params();
        uint64_t all = ay_policy_cpu_slots(&bp0, 4, size, 4, UINT64_MAX, slot_max);
        for (unsigned b = 1; b < 4; b++)
            CHECK_EQ_U(slot_max[b],
                       ay_policy_list_limit(ay_policy_terminal_batch(&bp0, size[b]), 4));
        CHECK_EQ_U(all, (uint64_t)slot_max[1] + slot_max[2] + slot_max[3]);
        CHECK(ay_policy_cpu_slots(&bp0, 4, size, 4, 100, slot_max) <= 100 + 2 * 3);
        CHECK(slot_max[3] >= 2);
    }

    /* parsing */
    ay_batch_policy_t p;
    CHECK(ay_policy_parse("clip", 4, &p) == 0 && p == AY_BATCH_CLIP);
    CHECK(ay_policy_parse("pow2", 4, &p) == 0 && p == AY_BATCH_POW2);
    CHECK(ay_policy_parse("guardx", 6, &p) == -1);
    CHECK(ay_policy_parse("gua", 3, &p) == -1);
    /* a per-CPU carve: 32 objects, or a page's worth of small ones, 256 at
     * most; a chunk: a power of two from 8, or the bin's largest capacity */
    CHECK_EQ_U(ay_policy_cpu_carve(1024), AY_CARVE_BATCH);
    CHECK_EQ_U(ay_policy_cpu_carve(64), 64);
    CHECK_EQ_U(ay_policy_cpu_carve(8), AY_POLICY_CPU_CARVE_MAX);
    CHECK_EQ_U(ay_policy_cpu_chunk(1, 2047), 8);
    CHECK_EQ_U(ay_policy_cpu_chunk(100, 2047), 128);
    CHECK_EQ_U(ay_policy_cpu_chunk(1500, 2047), 2047);
    CHECK_EQ_U(ay_policy_cpu_chunk(3, 5), 5);
    CHECK_EQ_U(ay_policy_chunk_order(8), 0);
    CHECK_EQ_U(ay_policy_chunk_order(4096), 9);
    CHECK_EQ_U(ay_policy_chunk_order(8192), AY_POLICY_CHUNK_ORDERS);
    CHECK_EQ_U(ay_policy_chunk_order(2047), AY_POLICY_CHUNK_ORDERS);
    return CHECK_DONE();
}
