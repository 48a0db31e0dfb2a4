/* SPDX-License-Identifier: MIT */
/* mc_rng.h - the random numbers of seed 000's pricer, bit-for-bit as g++'s
 * libstdc++ produces them:
 *
 *   - std::mt19937_64 (MT19937-64, seeded with the standard's
 *     initialisation; the 10000th output for the default seed 5489 is
 *     9981545732273789042, which tests/hot/hot_test_mc_rng.c checks);
 *   - std::generate_canonical<double, 53> as libstdc++ writes it: one 64-bit
 *     draw, converted to double, divided by 2^64, and clamped to the largest
 *     double below 1 when the rounding reached 1;
 *   - std::normal_distribution<double>::operator() as libstdc++ writes it:
 *     Marsaglia's polar method that makes two deviates per accepted pair,
 *     returns y * mult and saves x * mult for the next call, then scales by
 *     stddev and adds the mean.
 *
 * Everything is written in the same order of floating-point operations as
 * libstdc++, so with the same compiler flags (no -ffast-math, no FMA
 * contraction) the doubles are identical.  Ideas only; no code copied.
 */
#ifndef MC_RNG_H
#define MC_RNG_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#define MC_MT_N 312
#define MC_MT_M 156

typedef struct mc_mt64 {
    uint64_t state[MC_MT_N];
    unsigned index; /* next word of state to temper; MC_MT_N: regenerate */
} mc_mt64_t;

static inline void mc_mt64_seed(mc_mt64_t *g, uint64_t seed) {
    g->state[0] = seed;
    for (unsigned i = 1; i < MC_MT_N; i++) {
        uint64_t prev = g->state[i - 1];
        g->state[i] = 6364136223846793005ULL * (prev ^ (prev >> 62)) + i;
    }
    g->index = MC_MT_N;
}

/* Twist all 312 words: word i mixes words i, i+1 and i+156 (mod 312). */
static __attribute__((noinline, unused)) void mc_mt64_regenerate(mc_mt64_t *g) {
    const uint64_t upper = ~(uint64_t)0 << 31, lower = ~upper;
    const uint64_t matrix = 0xB5026F5AA96619E9ULL;
    uint64_t *s = g->state;
    unsigned i = 0;
    for (; i < MC_MT_N - MC_MT_M; i++) {
        uint64_t y = (s[i] & upper) | (s[i + 1] & lower);
        s[i] = s[i + MC_MT_M] ^ (y >> 1) ^ ((y & 1) ? matrix : 0);
    }
    for (; i < MC_MT_N - 1; i++) {
        uint64_t y = (s[i] & upper) | (s[i + 1] & lower);
        s[i] = s[i + MC_MT_M - MC_MT_N] ^ (y >> 1) ^ ((y & 1) ? matrix : 0);
    }
    uint64_t y = (s[MC_MT_N - 1] & upper) | (s[0] & lower);
    s[MC_MT_N - 1] = s[MC_MT_M - 1] ^ (y >> 1) ^ ((y & 1) ? matrix : 0);
    g->index = 0;
}

static inline uint64_t mc_mt64_next(mc_mt64_t *g) {
    if (g->index >= MC_MT_N)
        mc_mt64_regenerate(g);
    uint64_t z = g->state[g->index++];
    z ^= (z >> 29) & 0x5555555555555555ULL;
    z ^= (z << 17) & 0x71D67FFFEDA60000ULL;
    z ^= (z << 37) & 0xFFF7EEE000000000ULL;
    z ^= z >> 43;
    return z;
}

/* libstdc++'s generate_canonical<double, 53>(mt19937_64&). */
static inline double mc_canonical(mc_mt64_t *g) {
    double sum = 0.0, tmp = 1.0;
    sum += (double)mc_mt64_next(g) * tmp;
    tmp *= 18446744073709551616.0; /* r = max - min + 1 = 2^64 */
    double ret = sum / tmp;
    if (ret >= 1.0)
        ret = nextafter(1.0, 0.0);
    return ret;
}

/* std::normal_distribution<double>: its state is the saved second deviate. */
typedef struct mc_normal {
    double mean, stddev;
    double saved;
    bool saved_available;
} mc_normal_t;

static inline mc_normal_t mc_normal_make(double mean, double stddev) {
    mc_normal_t d = {mean, stddev, 0.0, false};
    return d;
}

static inline double mc_normal_next(mc_normal_t *d, mc_mt64_t *g) {
    double ret;
    if (d->saved_available) {
        d->saved_available = false;
        ret = d->saved;
    } else {
        double x, y, r2;
        do {
            x = 2.0 * mc_canonical(g) - 1.0;
            y = 2.0 * mc_canonical(g) - 1.0;
            r2 = x * x + y * y;
        } while (r2 > 1.0 || r2 == 0.0);
        const double mult = sqrt(-2 * log(r2) / r2);
        d->saved = x * mult;
        d->saved_available = true;
        ret = y * mult;
    }
    return ret * d->stddev + d->mean;
}

#endif
