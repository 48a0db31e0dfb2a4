/* SPDX-License-Identifier: MIT */
/* test_sim_stats.c - the simulator's statistics and SHA-256 against values
 * worked out by hand (closed forms for 1 and 2 degrees of freedom, printed
 * t tables, the Holm procedure done on paper) and the FIPS 180-4 examples. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "sha256.h"
#include "stats.h"

#define CHECK_NEAR(a, b, tol) CHECK(fabs((a) - (b)) <= (tol))

static void hex32(const unsigned char *d, char *out) {
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        out[2 * i] = digits[d[i] >> 4];
        out[2 * i + 1] = digits[d[i] & 15];
    }
    out[64] = 0;
}

static void check_sha(const char *msg, size_t len, const char *want) {
    sim_sha256_t c;
    unsigned char d[32];
    char hex[65];
    sim_sha256_init(&c);
    sim_sha256_update(&c, msg, len);
    sim_sha256_final(&c, d);
    hex32(d, hex);
    CHECK(strcmp(hex, want) == 0);
}

int main(void) {
    /* mean and sample sd: {2,4,4,4,5,5,7,9}: mean 5, sum of squares 32, sd sqrt(32/7) */
    double x[] = {2, 4, 4, 4, 5, 5, 7, 9};
    CHECK_NEAR(sim_stats_mean(x, 8), 5.0, 1e-15);
    CHECK_NEAR(sim_stats_sd(x, 8), sqrt(32.0 / 7.0), 1e-14);
    CHECK(sim_stats_sd(x, 1) == 0);

    /* t with 1 df is Cauchy: F(t) = 1/2 + atan(t)/pi, so F(1) = 3/4 */
    CHECK_NEAR(sim_stats_t_cdf(1.0, 1), 0.75, 1e-12);
    CHECK_NEAR(sim_stats_t_p2(1.0, 1), 0.5, 1e-12);
    CHECK_NEAR(sim_stats_t_quantile(0.975, 1), tan(M_PI * 0.475), 1e-9); /* 12.7062 */
    /* 2 df: F(t) = 1/2 + t / (2 sqrt(2 + t^2)); F(2) = 1/2 + 1/sqrt(6) */
    CHECK_NEAR(sim_stats_t_cdf(2.0, 2), 0.5 + 1 / sqrt(6.0), 1e-12);
    CHECK_NEAR(sim_stats_t_cdf(-2.0, 2), 0.5 - 1 / sqrt(6.0), 1e-12);
    /* inverse of the 2-df form: t = (2p - 1) sqrt(2 / (1 - (2p-1)^2)); p = .975 -> 4.302653 */
    CHECK_NEAR(sim_stats_t_quantile(0.975, 2), 0.95 * sqrt(2 / (1 - 0.95 * 0.95)), 1e-9);
    CHECK_NEAR(sim_stats_t_cdf(0.0, 9), 0.5, 1e-15);
    /* t tables: t(0.975; 9) = 2.262157, t(0.975; 4) = 2.776445, t(0.95; 30) = 1.697261 */
    CHECK_NEAR(sim_stats_t_quantile(0.975, 9), 2.262157, 1e-6);
    CHECK_NEAR(sim_stats_t_quantile(0.975, 4), 2.776445, 1e-6);
    CHECK_NEAR(sim_stats_t_quantile(0.95, 30), 1.697261, 1e-6);
    CHECK_NEAR(sim_stats_t_quantile(0.025, 9), -2.262157, 1e-6);
    /* the quantile and the two-sided p are inverse: p(t(0.975; 9)) = 0.05 */
    CHECK_NEAR(sim_stats_t_p2(sim_stats_t_quantile(0.975, 9), 9), 0.05, 1e-10);
    /* far tail keeps relative accuracy: with 1 df, p(t) = 1 - 2 atan(t)/pi ~ 2/(pi t) */
    double big = 1e12;
    CHECK(fabs(sim_stats_t_p2(big, 1) / (2 / (M_PI * big)) - 1) < 1e-6);
    CHECK(sim_stats_t_p2(INFINITY, 9) == 0);

    /* paired t by hand: a = 1..5, b = {2,4,5,4,7}: d = {1,2,2,0,2}, mean 1.4,
     * sd sqrt(3.2/4) = 0.894427, se 0.4, t 3.5 on 4 df, d_z = 1.4/0.894427,
     * CI 1.4 -+ 2.776445 * 0.4 = [0.289422, 2.510578], p = 0.024896 */
    double a[] = {1, 2, 3, 4, 5}, b[] = {2, 4, 5, 4, 7};
    sim_paired_t r = sim_stats_paired(a, b, 5);
    CHECK_NEAR(r.mean, 1.4, 1e-12);
    CHECK_NEAR(r.sd, sqrt(0.8), 1e-12);
    CHECK_NEAR(r.t, 3.5, 1e-12);
    CHECK_NEAR(r.dz, 1.4 / sqrt(0.8), 1e-12);
    CHECK_NEAR(r.ci_lo, 0.289422, 1e-6);
    CHECK_NEAR(r.ci_hi, 2.510578, 1e-6);
    CHECK_NEAR(r.p, 0.024896, 1e-6);
    /* the sign follows b - a */
    sim_paired_t rr = sim_stats_paired(b, a, 5);
    CHECK_NEAR(rr.t, -3.5, 1e-12);
    CHECK_NEAR(rr.p, r.p, 1e-15);
    /* degenerate: identical samples -> no change, p = 1; constant shift -> p = 0 */
    sim_paired_t z = sim_stats_paired(a, a, 5);
    CHECK(z.mean == 0 && z.p == 1 && z.dz == 0 && z.ci_lo == 0 && z.ci_hi == 0);
    double a1[] = {2, 3, 4, 5, 6};
    sim_paired_t s = sim_stats_paired(a, a1, 5);
    CHECK(s.mean == 1 && s.p == 0 && isinf(s.dz) && s.dz > 0);

    /* Holm on paper: p = {.01, .04, .03, .005, .2}, m = 5.  Sorted: .005*5 = .025,
     * .01*4 = .04, .03*3 = .09, .04*2 = .08 -> .09 (monotone), .2*1 = .2 */
    double p[] = {0.01, 0.04, 0.03, 0.005, 0.2}, adj[5];
    CHECK(sim_stats_holm(p, adj, 5) == 0);
    CHECK_NEAR(adj[0], 0.04, 1e-15);
    CHECK_NEAR(adj[1], 0.09, 1e-15);
    CHECK_NEAR(adj[2], 0.09, 1e-15);
    CHECK_NEAR(adj[3], 0.025, 1e-15);
    CHECK_NEAR(adj[4], 0.2, 1e-15);
    /* capped at 1, ties keep their order */
    double q[] = {0.5, 0.5, 0.5}, qa[3];
    CHECK(sim_stats_holm(q, qa, 3) == 0);
    CHECK(qa[0] == 1 && qa[1] == 1 && qa[2] == 1);

    /* SHA-256: FIPS 180-4 examples */
    check_sha("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    check_sha("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    check_sha(two, strlen(two), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    return CHECK_DONE();
}
