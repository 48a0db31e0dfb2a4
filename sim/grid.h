/* SPDX-License-Identifier: MIT */
/* grid.h - the parameter grid of the sweep: policy x return threshold x byte
 * budget x object cap.  The default is 3 x 4 x 5 x 4 = 240 configurations:
 *   policy     clip, guard, pow2
 *   threshold  1.5n, 2n, 3n, 4n            (k_halves 3, 4, 6, 8)
 *   budget     64, 128, 256, 512, 1024 KiB
 *   cap        256, 512, 1024, 2048 objects
 * Configuration index = ((policy * nk + k) * nbudgets + budget) * ncaps + cap,
 * so the order of the CSV rows never depends on how the sweep is scheduled.
 * Invariant: every list is non-empty, has no duplicates, and holds only
 * values the policy module accepts.
 */
#ifndef ALLOY_SIM_GRID_H
#define ALLOY_SIM_GRID_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

#define SIM_GRID_MAX 16

typedef struct sim_grid {
    ay_batch_policy_t policies[SIM_GRID_MAX];
    unsigned npolicies;
    uint32_t k_halves[SIM_GRID_MAX];
    unsigned nk;
    uint32_t budgets[SIM_GRID_MAX];
    unsigned nbudgets;
    uint32_t caps[SIM_GRID_MAX];
    unsigned ncaps;
} sim_grid_t;

void sim_grid_default(sim_grid_t *g);
unsigned sim_grid_size(const sim_grid_t *g);
/* The configuration at index idx (< sim_grid_size). */
sim_config_t sim_grid_config(const sim_grid_t *g, unsigned idx);
/* Index of cfg in g, or -1 when absent. */
int sim_grid_find(const sim_grid_t *g, const sim_config_t *cfg);
/* A stable name such as "guard/k2/b262144/c1024", written into buf. */
void sim_grid_config_name(const sim_config_t *cfg, char *buf, size_t len);
/* "1.5", "2", "3", "4" for k_halves 3, 4, 6, 8. */
void sim_grid_threshold_str(uint32_t k_halves, char *buf, size_t len);

/* Parsers for comma-separated lists; they replace the list in g.  Return 0,
 * or -1 with a message in err. */
int sim_grid_parse_policies(sim_grid_t *g, const char *s, char *err, size_t errlen);
int sim_grid_parse_thresholds(sim_grid_t *g, const char *s, char *err, size_t errlen);
int sim_grid_parse_budgets(sim_grid_t *g, const char *s, char *err, size_t errlen);
int sim_grid_parse_caps(sim_grid_t *g, const char *s, char *err, size_t errlen);

/* Single values, with the same rules as the lists. */
int sim_grid_parse_threshold(const char *s, uint32_t *k_halves);
int sim_grid_parse_u32(const char *s, uint32_t lo, uint32_t hi, int suffixes, uint32_t *out);

#endif
