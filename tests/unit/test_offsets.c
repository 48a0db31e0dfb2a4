/* SPDX-License-Identifier: MIT */
/* test_offsets.c - the secure flavour's free fast path tells whether a
 * pointer's offset in its span is a multiple of its class size with a
 * multiply and a compare (ay_bin_offset_is_object, tcache.h): for every
 * class and every offset a span can have (below 2^20), the answer is
 * d % size == 0.
 *   all:    every class, every offset: no answer differs;
 *   broken: the same check, with one class's multiple one less than it
 *           must be (48 bytes), finds answers that differ (the mode fails
 *           when it finds none). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "tcache.h"

/* Offsets of bin b whose answer differs from d % size == 0. */
static unsigned long wrong_answers(unsigned b) {
    unsigned long wrong = 0;
    uint32_t size = ay_bin_size[b];
    for (uintptr_t d = 0; d < ((uintptr_t)1 << 20); d++)
        wrong += ay_bin_offset_is_object(b * AY_BIN_BYTES, d) != (d % size == 0);
    return wrong;
}

int main(int argc, char **argv) {
    free(malloc(1)); /* the size tables */
    if (argc == 2 && strcmp(argv[1], "broken") == 0) {
        unsigned b = ay_size_bin(48);
        CHECK(ay_bin_size[b] == 48);
        ay_bin_class[b].multiple--;
        unsigned long wrong = wrong_answers(b);
        fprintf(stderr, "offsets: 48 B with its multiple less one: %lu wrong answers\n", wrong);
        CHECK(wrong > 0);
        return CHECK_DONE();
    }
    unsigned long wrong = 0;
    for (unsigned b = 1; b < AY_NUM_BINS; b++) {
        CHECK(ay_bin_class[b].size == ay_bin_size[b]);
        wrong += wrong_answers(b);
    }
    fprintf(stderr, "offsets: %lu wrong answers in %u classes of offsets below 2^20\n", wrong,
            AY_NUM_BINS - 1);
    CHECK(wrong == 0);
    return CHECK_DONE();
}
