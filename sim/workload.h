/* SPDX-License-Identifier: MIT */
/* workload.h - the five request traces the simulator and the real-allocator
 * harness both replay.
 *
 * A trace is a stream of alloc(slot, size) / free(slot) operations produced
 * from a seed alone: the generator never looks at allocator state, so every
 * policy (and the real liballoy) sees exactly the same operations for the
 * same (workload, seed).  That is the pairing.  Each trace keeps an FNV-1a
 * digest of what it produced, which the sweep records so that pairing can be
 * checked from the CSV.
 *
 * Invariants: a slot is freed only while live, allocated only while dead;
 * the number of live slots never exceeds sim_trace_max_live().
 */
#ifndef ALLOY_SIM_WORKLOAD_H
#define ALLOY_SIM_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "rng.h"

typedef enum sim_workload {
    SIM_WL_UNIFORM_RAW = 0, /* raw sizes uniform on 1..256 KiB */
    SIM_WL_UNIFORM_CLASS,   /* size classes uniform over the 208 */
    SIM_WL_HOTSPOT,         /* 80% of requests to 20% (42) of the classes */
    SIM_WL_UNDERFILL,       /* 80% of requests to the 80 classes clip underfills */
    SIM_WL_SAT384,          /* bursts of 384-byte objects, allocated then freed FIFO */
    SIM_WL_COUNT
} sim_workload_t;

typedef enum sim_op_kind { SIM_OP_ALLOC = 0, SIM_OP_FREE = 1 } sim_op_kind_t;

typedef struct sim_op {
    uint32_t kind; /* sim_op_kind_t */
    uint32_t slot; /* which live object, 0 .. max_live-1 */
    uint32_t size; /* bytes requested (alloc only; 0 for free) */
} sim_op_t;

typedef struct sim_trace_params {
    uint32_t warmup_ops;   /* ops before measuring starts */
    uint32_t measure_ops;  /* ops measured */
    uint32_t sample_every; /* a sample point every this many ops */
    uint32_t live;         /* mean live objects (mean burst height for sat384) */
} sim_trace_params_t;

typedef struct sim_trace {
    sim_workload_t wl;
    sim_rng_t rng;
    sim_trace_params_t p;
    uint32_t max_live; /* slots */
    uint32_t *live;    /* live slots, in no particular order */
    uint32_t *where;   /* slot -> index in live[] */
    uint32_t nlive;
    uint32_t *dead; /* stack of dead slots */
    uint32_t ndead;
    uint32_t hot[208];
    uint32_t nhot; /* classes in hot[] */
    uint32_t cold[208];
    uint32_t ncold;          /* classes in cold[] */
    int freeing;             /* sat384: 1 while draining the burst */
    uint64_t nalloc, nfreed; /* sat384: ops of each kind so far (ring order) */
    uint32_t hi, lo;         /* sat384: current burst height and drain floor */
    uint64_t hash;           /* FNV-1a over every op produced */
} sim_trace_t;

/* "uniform_raw", "uniform_class", "hotspot", "underfill", "sat384". */
const char *sim_workload_name(sim_workload_t wl);
/* Returns 0 and sets *out, or -1 for an unknown name. */
int sim_workload_parse(const char *s, sim_workload_t *out);

/* The defaults used by the sweep for workload wl. */
sim_trace_params_t sim_trace_default_params(sim_workload_t wl);

/* Total ops of a trace (warm-up plus measured). */
uint64_t sim_trace_total_ops(const sim_trace_params_t *p);

/* 0 on success, -1 when out of memory or p is malformed. */
int sim_trace_init(sim_trace_t *t, sim_workload_t wl, uint64_t seed, const sim_trace_params_t *p);
void sim_trace_next(sim_trace_t *t, sim_op_t *op);
void sim_trace_destroy(sim_trace_t *t);

#endif
