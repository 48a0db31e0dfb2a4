/* SPDX-License-Identifier: MIT */
/* grid.c - the sweep's parameter grid and its parsers.  See grid.h.
 * Parsers reject empty items, trailing junk, out-of-range values and
 * duplicates, so a malformed grid never reaches the sweep. */
#include "grid.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sim_grid_default(sim_grid_t *g) {
    static const uint32_t ks[] = {3, 4, 6, 8};
    static const uint32_t budgets[] = {64u << 10, 128u << 10, 256u << 10, 512u << 10, 1024u << 10};
    static const uint32_t caps[] = {256, 512, 1024, 2048};
    memset(g, 0, sizeof *g);
    g->policies[0] = AY_BATCH_CLIP;
    g->policies[1] = AY_BATCH_GUARD;
    g->policies[2] = AY_BATCH_POW2;
    g->npolicies = 3;
    memcpy(g->k_halves, ks, sizeof ks);
    g->nk = 4;
    memcpy(g->budgets, budgets, sizeof budgets);
    g->nbudgets = 5;
    memcpy(g->caps, caps, sizeof caps);
    g->ncaps = 4;
}

unsigned sim_grid_size(const sim_grid_t *g) {
    return g->npolicies * g->nk * g->nbudgets * g->ncaps;
}

sim_config_t sim_grid_config(const sim_grid_t *g, unsigned idx) {
    sim_config_t c;
    memset(&c, 0, sizeof c); /* no byte limit, no divergence: the sweep's model */
    unsigned ic = idx % g->ncaps;
    idx /= g->ncaps;
    unsigned ib = idx % g->nbudgets;
    idx /= g->nbudgets;
    unsigned ik = idx % g->nk;
    idx /= g->nk;
    c.bp.policy = g->policies[idx];
    c.bp.byte_budget = g->budgets[ib];
    c.bp.object_cap = g->caps[ic];
    c.k_halves = g->k_halves[ik];
    return c;
}

static int grid_index(const uint32_t *v, unsigned n, uint32_t x) {
    for (unsigned i = 0; i < n; i++)
        if (v[i] == x)
            return (int)i;
    return -1;
}

int sim_grid_find(const sim_grid_t *g, const sim_config_t *cfg) {
    int ip = -1;
    for (unsigned i = 0; i < g->npolicies; i++)
        if (g->policies[i] == cfg->bp.policy)
            ip = (int)i;
    int ik = grid_index(g->k_halves, g->nk, cfg->k_halves);
    int ib = grid_index(g->budgets, g->nbudgets, cfg->bp.byte_budget);
    int ic = grid_index(g->caps, g->ncaps, cfg->bp.object_cap);
    if (ip < 0 || ik < 0 || ib < 0 || ic < 0)
        return -1;
    return ((ip * (int)g->nk + ik) * (int)g->nbudgets + ib) * (int)g->ncaps + ic;
}

void sim_grid_threshold_str(uint32_t k_halves, char *buf, size_t len) {
    if (k_halves % 2)
        snprintf(buf, len, "%u.5", k_halves / 2);
    else
        snprintf(buf, len, "%u", k_halves / 2);
}

void sim_grid_config_name(const sim_config_t *cfg, char *buf, size_t len) {
    char k[16];
    sim_grid_threshold_str(cfg->k_halves, k, sizeof k);
    snprintf(buf, len, "%s/k%s/b%u/c%u", ay_policy_name(cfg->bp.policy), k, cfg->bp.byte_budget,
             cfg->bp.object_cap);
}

int sim_grid_parse_threshold(const char *s, uint32_t *k_halves) {
    /* k in [1.5, 8] in steps of 0.5: "2", "1.5", "3.0" */
    char *end;
    errno = 0;
    unsigned long whole = strtoul(s, &end, 10);
    if (end == s || errno || *s == '-' || *s == '+')
        return -1;
    unsigned half = 0;
    if (*end == '.') {
        if (strcmp(end, ".5") == 0)
            half = 1;
        else if (strcmp(end, ".0") != 0)
            return -1;
    } else if (*end) {
        return -1;
    }
    if (whole > 8)
        return -1;
    uint32_t kh = (uint32_t)whole * 2 + half;
    if (kh < 3 || kh > 16)
        return -1;
    *k_halves = kh;
    return 0;
}

int sim_grid_parse_u32(const char *s, uint32_t lo, uint32_t hi, int suffixes, uint32_t *out) {
    char *end;
    errno = 0;
    if (*s < '0' || *s > '9')
        return -1;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || errno)
        return -1;
    if (suffixes && (*end == 'K' || *end == 'k')) {
        v <<= 10;
        end++;
    } else if (suffixes && (*end == 'M' || *end == 'm')) {
        v <<= 20;
        end++;
    }
    if (*end || v < lo || v > hi)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

/* Splits s at commas into items of at most 63 chars and calls one(item) on
 * each; rejects empty items and lists of more than SIM_GRID_MAX items. */
typedef int grid_item_fn(sim_grid_t *g, const char *item, unsigned i);

static int grid_parse_list(sim_grid_t *g, const char *s, const char *what, grid_item_fn *one,
                           unsigned *count, char *err, size_t errlen) {
    unsigned n = 0;
    const char *p = s;
    if (!*s) {
        snprintf(err, errlen, "empty %s list", what);
        return -1;
    }
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char item[64];
        if (len == 0 || len >= sizeof item) {
            snprintf(err, errlen, "malformed %s list '%s': empty or overlong item", what, s);
            return -1;
        }
        if (n == SIM_GRID_MAX) {
            snprintf(err, errlen, "too many values in %s list '%s' (at most %d)", what, s,
                     SIM_GRID_MAX);
            return -1;
        }
        memcpy(item, p, len);
        item[len] = 0;
        if (one(g, item, n)) {
            snprintf(err, errlen, "bad %s '%s' in '%s'", what, item, s);
            return -1;
        }
        n++;
        if (!comma)
            break;
        p = comma + 1;
    }
    *count = n;
    return 0;
}

static int grid_one_policy(sim_grid_t *g, const char *item, unsigned i) {
    ay_batch_policy_t p;
    if (ay_policy_parse(item, strlen(item), &p))
        return -1;
    for (unsigned j = 0; j < i; j++)
        if (g->policies[j] == p)
            return -1;
    g->policies[i] = p;
    return 0;
}

static int grid_one_threshold(sim_grid_t *g, const char *item, unsigned i) {
    uint32_t k;
    if (sim_grid_parse_threshold(item, &k) || grid_index(g->k_halves, i, k) >= 0)
        return -1;
    g->k_halves[i] = k;
    return 0;
}

static int grid_one_budget(sim_grid_t *g, const char *item, unsigned i) {
    uint32_t v;
    if (sim_grid_parse_u32(item, 8, 1u << 30, 1, &v) || grid_index(g->budgets, i, v) >= 0)
        return -1;
    g->budgets[i] = v;
    return 0;
}

static int grid_one_cap(sim_grid_t *g, const char *item, unsigned i) {
    uint32_t v;
    if (sim_grid_parse_u32(item, 1, 1u << 16, 0, &v) || grid_index(g->caps, i, v) >= 0)
        return -1;
    g->caps[i] = v;
    return 0;
}

int sim_grid_parse_policies(sim_grid_t *g, const char *s, char *err, size_t errlen) {
    return grid_parse_list(g, s, "policy (clip|guard|pow2)", grid_one_policy, &g->npolicies, err,
                           errlen);
}

int sim_grid_parse_thresholds(sim_grid_t *g, const char *s, char *err, size_t errlen) {
    return grid_parse_list(g, s, "threshold (1.5..8 in steps of 0.5)", grid_one_threshold, &g->nk,
                           err, errlen);
}

int sim_grid_parse_budgets(sim_grid_t *g, const char *s, char *err, size_t errlen) {
    return grid_parse_list(g, s, "budget (8..1G bytes, K/M suffix)", grid_one_budget, &g->nbudgets,
                           err, errlen);
}

int sim_grid_parse_caps(sim_grid_t *g, const char *s, char *err, size_t errlen) {
    return grid_parse_list(g, s, "cap (1..65536 objects)", grid_one_cap, &g->ncaps, err, errlen);
}
