/* SPDX-License-Identifier: MIT */
/* stats.h - the few statistics the sweep reports: mean and sample standard
 * deviation, Student's t distribution (CDF, two-sided p, quantile), the
 * paired t-test with its confidence interval and Cohen's d_z, and Holm's
 * step-down correction.
 *
 * Pure functions over arrays; no allocation except in sim_stats_holm.
 * Conventions for degenerate samples (n < 2 or zero variance):
 *   all differences zero      -> t = 0, p = 1, CI = [0, 0], d_z = 0;
 *   constant nonzero difference -> t = +-inf, p = 0, CI = [d, d], d_z = +-inf.
 */
#ifndef ALLOY_SIM_STATS_H
#define ALLOY_SIM_STATS_H

#include <stddef.h>

double sim_stats_mean(const double *x, size_t n);
/* Sample standard deviation (n - 1 in the denominator); 0 when n < 2. */
double sim_stats_sd(const double *x, size_t n);

/* Regularized incomplete beta function I_x(a, b), 0 <= x <= 1. */
double sim_stats_betai(double a, double b, double x);
/* P(T <= t) for Student's t with df degrees of freedom. */
double sim_stats_t_cdf(double t, double df);
/* P(|T| >= |t|): the two-sided p-value.  Accurate far into the tail. */
double sim_stats_t_p2(double t, double df);
/* The quantile q of Student's t (0 < q < 1), e.g. q = 0.975 for a 95% CI. */
double sim_stats_t_quantile(double q, double df);

typedef struct sim_paired {
    size_t n;
    double mean, sd;     /* of the differences */
    double ci_lo, ci_hi; /* 95% t interval of the mean difference */
    double t, p;         /* paired t statistic and two-sided p */
    double dz;           /* Cohen's d_z = mean / sd */
} sim_paired_t;

/* Paired analysis of d[i] = b[i] - a[i]. */
sim_paired_t sim_stats_paired(const double *a, const double *b, size_t n);
/* One-sample analysis of the values d[0..n) (used by sim_stats_paired). */
sim_paired_t sim_stats_one_sample(const double *d, size_t n);

/* Holm-adjusted p-values: adj[i] for p[i], monotone, capped at 1.
 * Returns 0, or -1 when out of memory. */
int sim_stats_holm(const double *p, double *adj, size_t m);

#endif
