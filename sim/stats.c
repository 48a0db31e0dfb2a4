/* SPDX-License-Identifier: MIT */
/* stats.c - Student's t, the paired t-test and Holm's correction.  See stats.h.
 *
 * The incomplete beta function uses the classic continued fraction evaluated
 * with the modified Lentz method, switching to the symmetry
 * I_x(a,b) = 1 - I_{1-x}(b,a) where the fraction converges slowly.  The
 * two-sided p-value is I_{df/(df+t^2)}(df/2, 1/2) directly, which keeps its
 * relative accuracy for tiny p (1e-18 and below) instead of computing 1 - cdf.
 * The quantile is found by bisection on the CDF: slow but exact to double
 * precision, and it is called a handful of times per sweep.
 */
#include "stats.h"

#include <math.h>
#include <stdlib.h>

double sim_stats_mean(const double *x, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += x[i];
    return n ? s / (double)n : 0.0;
}

double sim_stats_sd(const double *x, size_t n) {
    if (n < 2)
        return 0.0;
    double m = sim_stats_mean(x, n), s = 0;
    for (size_t i = 0; i < n; i++)
        s += (x[i] - m) * (x[i] - m);
    return sqrt(s / (double)(n - 1));
}

/* Continued fraction for I_x(a,b); valid when x < (a+1)/(a+b+2). */
static double stats_betacf(double a, double b, double x) {
    const double tiny = 1e-300, eps = 1e-16;
    double qab = a + b, qap = a + 1, qam = a - 1;
    double c = 1, d = 1 - qab * x / qap;
    if (fabs(d) < tiny)
        d = tiny;
    d = 1 / d;
    double h = d;
    for (int m = 1; m <= 1000; m++) {
        int m2 = 2 * m;
        double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1 + aa * d;
        if (fabs(d) < tiny)
            d = tiny;
        c = 1 + aa / c;
        if (fabs(c) < tiny)
            c = tiny;
        d = 1 / d;
        h *= d * c;
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1 + aa * d;
        if (fabs(d) < tiny)
            d = tiny;
        c = 1 + aa / c;
        if (fabs(c) < tiny)
            c = tiny;
        d = 1 / d;
        double del = d * c;
        h *= del;
        if (fabs(del - 1) < eps)
            break;
    }
    return h;
}

double sim_stats_betai(double a, double b, double x) {
    if (x <= 0)
        return 0;
    if (x >= 1)
        return 1;
    double lbt = lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x);
    if (x < (a + 1) / (a + b + 2))
        return exp(lbt) * stats_betacf(a, b, x) / a;
    return 1 - exp(lbt) * stats_betacf(b, a, 1 - x) / b;
}

double sim_stats_t_p2(double t, double df) {
    if (isnan(t))
        return NAN;
    if (isinf(t))
        return 0;
    return sim_stats_betai(df / 2, 0.5, df / (df + t * t));
}

double sim_stats_t_cdf(double t, double df) {
    double tail = sim_stats_t_p2(t, df) / 2; /* P(T >= |t|) */
    return t >= 0 ? 1 - tail : tail;
}

double sim_stats_t_quantile(double q, double df) {
    if (q <= 0)
        return -INFINITY;
    if (q >= 1)
        return INFINITY;
    if (q < 0.5)
        return -sim_stats_t_quantile(1 - q, df);
    double lo = 0, hi = 1;
    while (sim_stats_t_cdf(hi, df) < q)
        hi *= 2;
    for (int i = 0; i < 200 && hi - lo > 1e-15 * hi; i++) {
        double mid = (lo + hi) / 2;
        if (sim_stats_t_cdf(mid, df) < q)
            lo = mid;
        else
            hi = mid;
    }
    return (lo + hi) / 2;
}

sim_paired_t sim_stats_one_sample(const double *d, size_t n) {
    sim_paired_t r = {0};
    r.n = n;
    r.mean = sim_stats_mean(d, n);
    r.sd = sim_stats_sd(d, n);
    if (n < 2 || r.sd == 0) {
        r.ci_lo = r.ci_hi = r.mean;
        if (r.mean == 0) {
            r.t = 0;
            r.p = 1;
            r.dz = 0;
        } else {
            r.t = r.dz = r.mean > 0 ? INFINITY : -INFINITY;
            r.p = n < 2 ? NAN : 0;
        }
        return r;
    }
    double se = r.sd / sqrt((double)n), df = (double)(n - 1);
    double tq = sim_stats_t_quantile(0.975, df);
    r.ci_lo = r.mean - tq * se;
    r.ci_hi = r.mean + tq * se;
    r.t = r.mean / se;
    r.p = sim_stats_t_p2(r.t, df);
    r.dz = r.mean / r.sd;
    return r;
}

sim_paired_t sim_stats_paired(const double *a, const double *b, size_t n) {
    double *d = malloc(sizeof *d * (n ? n : 1));
    sim_paired_t r = {0};
    if (!d) {
        r.p = NAN;
        return r;
    }
    for (size_t i = 0; i < n; i++)
        d[i] = b[i] - a[i];
    r = sim_stats_one_sample(d, n);
    free(d);
    return r;
}

int sim_stats_holm(const double *p, double *adj, size_t m) {
    size_t *ord = malloc(sizeof *ord * (m ? m : 1));
    if (!ord)
        return -1;
    for (size_t i = 0; i < m; i++)
        ord[i] = i;
    /* insertion sort by p ascending, ties by index: m is 5 here */
    for (size_t i = 1; i < m; i++) {
        size_t x = ord[i], j = i;
        while (j > 0 && p[ord[j - 1]] > p[x]) {
            ord[j] = ord[j - 1];
            j--;
        }
        ord[j] = x;
    }
    double running = 0;
    for (size_t r = 0; r < m; r++) {
        double v = (double)(m - r) * p[ord[r]];
        if (v > 1)
            v = 1;
        if (isnan(p[ord[r]]))
            v = NAN;
        else if (v < running)
            v = running;
        else
            running = v;
        adj[ord[r]] = v;
    }
    free(ord);
    return 0;
}
