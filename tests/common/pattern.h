/* SPDX-License-Identifier: MIT */
/* pattern.h - block contents that differ per block (seed) and per offset, for
 * tests that move data: byte i of a block with seed s is
 * pattern[(i + 7919 s) mod PERIOD].  PERIOD is prime, so a block copied to the
 * wrong offset does not match; pattern[] is doubled so that any run of up to
 * PERIOD bytes is contiguous, and fill and check are memcpy and memcmp (the
 * tests move hundreds of MiB).  Call make_pattern() first. */
#ifndef ALLOY_TEST_PATTERN_H
#define ALLOY_TEST_PATTERN_H
#include <stddef.h>
#include <string.h>

#define PERIOD 65521
static unsigned char pattern[2 * PERIOD];

static void make_pattern(void) {
    for (size_t i = 0; i < PERIOD; i++)
        pattern[i] = pattern[i + PERIOD] =
            (unsigned char)((i * 131u) ^ (i >> 7) ^ (i >> 13) ^ 0x5a);
}

static size_t phase(size_t i, unsigned seed) { return (i + (size_t)seed * 7919u) % PERIOD; }

/* Bytes [from, to) of block p, as seed gives them. */
static void fill(unsigned char *p, size_t from, size_t to, unsigned seed) {
    for (size_t i = from; i < to;) {
        size_t n = to - i < PERIOD ? to - i : PERIOD;
        memcpy(p + i, pattern + phase(i, seed), n);
        i += n;
    }
}

/* The first offset in [0, n) whose byte is wrong, or n. */
static size_t first_bad(const unsigned char *p, size_t n, unsigned seed) {
    for (size_t i = 0; i < n;) {
        size_t len = n - i < PERIOD ? n - i : PERIOD;
        const unsigned char *want = pattern + phase(i, seed);
        if (memcmp(p + i, want, len) != 0)
            for (size_t k = 0; k < len; k++)
                if (p[i + k] != want[k])
                    return i + k;
        i += len;
    }
    return n;
}

#endif
