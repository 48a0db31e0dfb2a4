/* SPDX-License-Identifier: MIT */
/* model.h - the discrete-event model of alloy's three tiers (seed 002, §5 and
 * Appendix A): one thread cache, a central cache per class that knows which
 * span every object belongs to (with, when cfg.transfer_bytes is set, the
 * class's transfer cache of whole batches, as liballoy's: src/transfer.h),
 * and a page heap of 256-page system blocks.  With cfg.percpu the first tier
 * is one per-CPU cache (src/cpucache.c) instead, whose capacity rule is
 * policy.h's too (ay_policy_cpu_*): model.c, "the per-CPU cache".
 *
 * All policy decisions (size classes, L(S), span pages, capacity, batch
 * growth, return threshold) and the thread cache's whole state machine
 * (what a miss, an overflow and a scavenge do, and when the byte limit is
 * checked) are calls into src/policy.c, the module the allocator ships;
 * this file only moves objects and pages around.
 *
 * Conservation, checked at every sample point:
 *   committed = live bytes (at class sizes) + thread-cache bytes
 *             + central free-object bytes (transfer caches included)
 *             + span tail bytes + page-heap free bytes
 * A violation ends the run with an error naming the op at which it was seen.
 */
#ifndef ALLOY_SIM_MODEL_H
#define ALLOY_SIM_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "policy.h"
#include "workload.h"

/* Test-only switches that make the model break one of alloy's rules, so
 * that `alloy-sim validate` can be shown to fail when the two drift apart. */
enum {
    SIM_DIVERGE_OVERFLOW_GROWTH = 1, /* an overflow gives back n but keeps the batch */
    SIM_DIVERGE_SCAVENGE = 2,        /* the byte limit is never checked */
    SIM_DIVERGE_FULLNESS = 4,        /* a fetch takes the first span, not the fullest */
    SIM_DIVERGE_GEOMETRY = 8,        /* spans are the paper's P(S,n) whatever the policy */
    SIM_DIVERGE_TRANSFER = 16,       /* no transfer cache: batches go straight to their spans */
    SIM_DIVERGE_IDLE = 32,           /* no idle rule: an idle transfer cache keeps every slot */
    SIM_DIVERGE_STEAL =
        64, /* per-CPU: growth beyond the byte limit takes nothing from other bins */
    SIM_DIVERGE_BUDGET = 128, /* per-CPU: a bin's capacity is not cut to the byte limit */
};

/* The model's clock, which `validate` gives liballoy too (its harness,
 * sim/real.c, sets liballoy's test clock to it before each op: src/os.h,
 * ay_os_clock_set): op i of a trace (0 first, warm-up included) runs at
 * sim_clock_ms(i) ms.  So the rules that run on the clock (the transfer
 * caches' idle rule, AY_TRANSFER_IDLE_MS, and their decay rounds, every
 * AY_DECAY_ROUND_MS: policy.h) fire at the same op in both, whatever
 * the machine's speed.  SIM_OPS_PER_MS is far fewer ops than liballoy
 * serves in a ms, so that a trace of validate's length sees both rules
 * fire; it starts past AY_DECAY_ROUND_MS, as a real clock does, so that
 * a transfer cache never taken from is idle and the first decay round is due. */
#define SIM_OPS_PER_MS 100u
#define SIM_CLOCK_START_MS 1000u
static inline uint64_t sim_clock_ms(uint64_t op) {
    return SIM_CLOCK_START_MS + op / SIM_OPS_PER_MS;
}

/* The transfer caches' bound that `validate` gives liballoy and the model
 * (liballoy's default, transfer_bytes:512k). */
#define SIM_TRANSFER_BYTES (512u << 10)
/* The largest request liballoy serves from its size classes (src/tcache.h,
 * AY_MAX_BINNED_SIZE): `validate` leaves larger ones out of the model, as
 * they are page-heap blocks there (a figure that drifted would make
 * validate fail). */
#define SIM_BINNED_MAX (32u << 10)

typedef struct sim_config {
    ay_batch_params_t bp;      /* policy, byte budget, object cap */
    uint32_t k_halves;         /* return threshold k*n, k in halves (3, 4, 6, 8) */
    uint64_t tcache_max_bytes; /* the thread cache's byte limit; 0: none (the paper's model) */
    uint64_t transfer_bytes;   /* a class's transfer cache at most; 0: none (the paper's model) */
    unsigned diverge;          /* SIM_DIVERGE_* bits; 0 outside tests */
    int clock;                 /* the rules on the clock apply (op i at sim_clock_ms(i)), as in
                                  liballoy under any decay_ms but -1; 0: never, as under
                                  decay_ms:-1 (and in the paper's model) */
    int percpu;                /* the first tier is one per-CPU cache (src/cpucache.c), not a
                                  thread cache: see model.c */
    uint64_t binned_max;       /* requests above it are not modelled: liballoy serves them from
                                  its page heap (tcache.h, AY_MAX_BINNED_SIZE); 0: every class,
                                  the paper's model */
} sim_config_t;

typedef struct sim_run_spec {
    sim_workload_t wl;
    uint64_t seed;
    sim_config_t cfg;
    sim_trace_params_t tp;
    uint64_t fault_at; /* test hook: leak one cached object after this op; 0 = never */
} sim_run_spec_t;

/* Counters cover the measured ops only; means are over measured sample points. */
typedef struct sim_metrics {
    uint64_t slow_path_calls;   /* thread-cache misses */
    uint64_t short_fetches;     /* central fetches returning fewer than asked */
    uint64_t objects_fetched;   /* central -> thread cache */
    uint64_t objects_released;  /* thread cache -> central */
    uint64_t spans_allocated;   /* spans the central caches took */
    uint64_t spans_freed;       /* spans given back to the page heap */
    uint64_t overflows;         /* lists that reached their limit and gave back */
    uint64_t scavenges;         /* byte-limit checks that found the cache too big */
    uint64_t moves;             /* per-CPU: capacity the clock hand took from a bin */
    double mean_cached_bytes;   /* thread cache + central (free objects, span tails) */
    double mean_tcache_bytes;   /* the thread cache alone */
    double mean_central_bytes;  /* free objects and span tails in central */
    double mean_pageheap_bytes; /* free pages in the page heap */
    uint64_t final_committed_bytes;
    uint64_t final_live_bytes;
    uint64_t samples;    /* conservation checks performed (all phases) */
    uint64_t trace_hash; /* digest of the op stream replayed */
} sim_metrics_t;

/* Replays spec's trace through the model.  Returns 0, or -1 with a message in
 * err (conservation violated, or out of memory). */
int sim_model_run(const sim_run_spec_t *spec, sim_metrics_t *out, char *err, size_t errlen);

#endif
