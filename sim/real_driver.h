/* SPDX-License-Identifier: MIT */
/* real_driver.h - drives the real liballoy through the alloy-sim-real
 * harness (sim/real.c) in child processes, one per policy, with ALLOY_CONF
 * set, and compares its counters with the model's for the same trace
 * (`validate`), or times clip against guard with interleaved runs (`bench`).
 */
#ifndef ALLOY_SIM_REAL_DRIVER_H
#define ALLOY_SIM_REAL_DRIVER_H

#include <stdint.h>

#include "workload.h"

typedef struct sim_real_opts {
    const char *out;  /* output directory (already checked writable) */
    const char *real; /* path of alloy-sim-real; NULL: next to /proc/self/exe */
    sim_workload_t wls[SIM_WL_COUNT];
    unsigned nwl;
    unsigned nseeds;
    uint64_t seed_base;
    unsigned reps;             /* bench: interleaved repetitions per cell */
    uint32_t threads_max;      /* bench: 1..threads_max threads */
    uint32_t heaps;            /* bench: ALLOY_CONF heaps:N; 0 = liballoy's default */
    uint64_t tcache_max_bytes; /* the thread caches' byte limit, for the model and liballoy */
    unsigned diverge;          /* validate: SIM_DIVERGE_* (test-only: the model breaks a rule) */
    int clock;                 /* validate: the model's clock drives both (model.h, sim_clock_ms),
                                  under liballoy's default decay_ms; 0: decay_ms:-1 and no clock */
    int percpu;                /* validate: a per-CPU cache in the model, and liballoy's per-CPU
                                  caches (a build with them) on one CPU */
    int progress;
    sim_trace_params_t tp[SIM_WL_COUNT];
} sim_real_opts_t;

/* Both return a process exit status: 0, 1 (a run failed), 2 (bad setup). */
int sim_real_validate(const sim_real_opts_t *o);
int sim_real_bench(const sim_real_opts_t *o);

#endif
