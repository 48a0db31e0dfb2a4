/* SPDX-License-Identifier: MIT */
/* pattern.h - block contents that differ per block and per offset.
 *
 * For tests that move data: byte i of a block with seed s is
 * pattern[(i + 7919 s) mod PERIOD].  PERIOD is prime, so a block copied to the
 * wrong offset does not match; pattern[] is doubled so that any run of up to
 * PERIOD bytes is contiguous, and fill and check are memcpy and memcmp (the
 * tests move hundreds of MiB).  Call make_pattern() first.
 *
 * For tests that hand blocks between threads: tag_ends writes the first
 * and last bytes of a block with bytes derived from its address, size and
 * offset, and tag_ends_ok tells whether they are still there; an overlap, a
 * lost write or a block handed out twice breaks them.  pattern_rng is the
 * random numbers such tests draw sizes and choices from.
 *
 * Everything here is static inline, so a test includes it whole and uses
 * what it needs. */
#ifndef ALLOY_TEST_PATTERN_H
#define ALLOY_TEST_PATTERN_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define PERIOD 65521
static unsigned char pattern[2 * PERIOD] __attribute__((unused));

static inline void make_pattern(void) {
    for (size_t i = 0; i < PERIOD; i++)
        pattern[i] = pattern[i + PERIOD] =
            (unsigned char)((i * 131u) ^ (i >> 7) ^ (i >> 13) ^ 0x5a);
}

static inline size_t phase(size_t i, unsigned seed) { return (i + (size_t)seed * 7919u) % PERIOD; }

/* Bytes [from, to) of block p, as seed gives them. */
static inline void fill(unsigned char *p, size_t from, size_t to, unsigned seed) {
    for (size_t i = from; i < to;) {
        size_t n = to - i < PERIOD ? to - i : PERIOD;
        memcpy(p + i, pattern + phase(i, seed), n);
        i += n;
    }
}

/* The first offset in [0, n) whose byte is wrong, or n. */
static inline size_t first_bad(const unsigned char *p, size_t n, unsigned seed) {
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

/* xorshift64: the next random number from state *s (not 0). */
static inline uint64_t pattern_rng(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Byte i of block p of `size` bytes, as tag_ends writes it. */
static inline unsigned char tag_byte(const unsigned char *p, size_t size, size_t i) {
    return (unsigned char)(((uintptr_t)p >> 4) ^ size ^ (i * 131));
}

/* The first and the last `ends` bytes of block p (all of it when it is
 * smaller) get their tag bytes. */
static inline void tag_ends(unsigned char *p, size_t size, size_t ends) {
    size_t n = size < ends ? size : ends;
    for (size_t i = 0; i < n; i++)
        p[i] = tag_byte(p, size, i);
    for (size_t i = size - n; i < size; i++)
        p[i] = tag_byte(p, size, i);
}

/* Whether the bytes tag_ends(p, size, ends) wrote are all still there. */
static inline bool tag_ends_ok(const unsigned char *p, size_t size, size_t ends) {
    size_t n = size < ends ? size : ends;
    for (size_t i = 0; i < n; i++)
        if (p[i] != tag_byte(p, size, i))
            return false;
    for (size_t i = size - n; i < size; i++)
        if (p[i] != tag_byte(p, size, i))
            return false;
    return true;
}

#endif
