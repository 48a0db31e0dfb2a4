/* SPDX-License-Identifier: MIT */
/* sweep.h - runs every (workload, configuration, seed) of a grid through the
 * model on a pool of threads, and keeps the results in a fixed order.
 *
 * Run index = (workload * nconfigs + config) * nseeds + seed, and results[i]
 * is written by exactly one worker, so the output never depends on the number
 * of workers or on scheduling.  Seeds are seed_base + 0 .. nseeds-1; every
 * configuration replays the same trace for the same (workload, seed).
 */
#ifndef ALLOY_SIM_SWEEP_H
#define ALLOY_SIM_SWEEP_H

#include <stddef.h>
#include <stdint.h>

#include "grid.h"
#include "model.h"

typedef struct sim_sweep {
    sim_grid_t grid;
    sim_workload_t wls[SIM_WL_COUNT];
    unsigned nwl;
    unsigned nseeds;
    uint64_t seed_base;
    unsigned jobs;                       /* worker threads, >= 1 */
    sim_trace_params_t tp[SIM_WL_COUNT]; /* trace parameters, by workload */
    int progress;                        /* 1: progress line on stderr */
    const char *label;                   /* what the progress line calls the job */
    uint64_t fault_at;                   /* test hook passed to every run; 0 = off */
    /* results, filled by sim_sweep_execute */
    unsigned nconfigs;
    size_t nruns;
    sim_metrics_t *results;
} sim_sweep_t;

size_t sim_sweep_index(const sim_sweep_t *sw, unsigned w, unsigned c, unsigned s);
/* Fills sw->results.  Returns 0, or -1 with err naming the failing run (its
 * workload, configuration and seed) and the command that replays it. */
int sim_sweep_execute(sim_sweep_t *sw, char *err, size_t errlen);
void sim_sweep_destroy(sim_sweep_t *sw);

/* The `alloy-sim run` command line that replays one run, written into buf. */
void sim_sweep_replay_cmd(const sim_run_spec_t *spec, char *buf, size_t len);

/* Progress line helpers (used by the sweep and the real-allocator bench). */
void sim_progress_show(const char *label, size_t done, size_t total, double elapsed,
                       const char *current);
void sim_progress_clear(void);
double sim_now(void);

#endif
