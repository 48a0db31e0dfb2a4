/* SPDX-License-Identifier: MIT */
/* rng.h - the simulator's deterministic pseudo-random numbers.
 *
 * A splitmix64 seeder feeding a xoshiro256** generator (the published
 * algorithms by Vigna and Blackman, written from their description).  The
 * stream depends only on the seed, never on the platform or on threads:
 * that is what makes the sweep's CSVs byte-identical for any worker count.
 * Invariant: the state is never all zero (splitmix64 cannot produce four
 * zero words in a row from any seed).
 */
#ifndef ALLOY_SIM_RNG_H
#define ALLOY_SIM_RNG_H

#include <stdint.h>

typedef struct sim_rng {
    uint64_t s[4]; /* xoshiro256** state */
} sim_rng_t;

static inline uint64_t sim_rng_splitmix(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline void sim_rng_seed(sim_rng_t *r, uint64_t seed) {
    uint64_t x = seed;
    for (int i = 0; i < 4; i++)
        r->s[i] = sim_rng_splitmix(&x);
}

static inline uint64_t sim_rng_rotl(uint64_t v, int k) { return (v << k) | (v >> (64 - k)); }

static inline uint64_t sim_rng_next(sim_rng_t *r) {
    uint64_t *s = r->s;
    uint64_t result = sim_rng_rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = sim_rng_rotl(s[3], 45);
    return result;
}

/* Uniform integer in [0, bound), bound >= 1 (Lemire's multiply-shift; the
 * tiny bias of skipping the rejection step is irrelevant here and keeps the
 * number of draws per call fixed, which keeps traces easy to reason about). */
static inline uint32_t sim_rng_below(sim_rng_t *r, uint32_t bound) {
    return (uint32_t)(((sim_rng_next(r) >> 32) * (uint64_t)bound) >> 32);
}

/* Uniform double in [0, 1). */
static inline double sim_rng_unit(sim_rng_t *r) {
    return (double)(sim_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

#endif
