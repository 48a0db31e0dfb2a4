/* SPDX-License-Identifier: MIT */
/* workload.c - the five request traces.  See workload.h.
 *
 * Ordinary workloads (uniform_raw, uniform_class, hotspot, underfill) keep a
 * live population that hovers around p.live: each op allocates with
 * probability 1 - nlive / (2 * live) and otherwise frees a uniformly chosen
 * live object, so the population is a restoring random walk on
 * [0, 2 * live] with mean `live` (an Ehrenfest urn); it starts empty, so
 * the warm-up fills it.
 * sat384 allocates 384-byte objects up to a random height in
 * [live/2, 3live/2], then frees them oldest first (a queue drained in order)
 * down to a random floor in [0, live/8], and repeats.  Frees in allocation
 * order empty whole spans, so the central cache is usually empty when the
 * next burst misses: every refill then takes a new span sized for the
 * terminal batch, which is exactly where clip and guard differ.
 *
 * Invariant: the op stream depends only on (workload, seed, params).
 * The slot tables are mmap'ed, not malloc'ed: alloy-sim-real links liballoy
 * as the process malloc, and the generator must not add requests of its own
 * to the trace the allocator sees.
 */
#include "workload.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "policy.h"

static const char *const workload_names[SIM_WL_COUNT] = {
    "uniform_raw", "uniform_class", "hotspot", "underfill", "sat384",
};

const char *sim_workload_name(sim_workload_t wl) {
    return (unsigned)wl < SIM_WL_COUNT ? workload_names[wl] : "?";
}

int sim_workload_parse(const char *s, sim_workload_t *out) {
    for (unsigned i = 0; i < SIM_WL_COUNT; i++) {
        if (strcmp(s, workload_names[i]) == 0) {
            *out = (sim_workload_t)i;
            return 0;
        }
    }
    return -1;
}

sim_trace_params_t sim_trace_default_params(sim_workload_t wl) {
    sim_trace_params_t p = {50000, 200000, 1000, 2000};
    if (wl == SIM_WL_SAT384)
        p.live = 4096;
    else if (wl == SIM_WL_UNDERFILL)
        p.live = 16000; /* enough objects per class to reach the terminal batch */
    return p;
}

uint64_t sim_trace_total_ops(const sim_trace_params_t *p) {
    return (uint64_t)p->warmup_ops + p->measure_ops;
}

/* 1 when class cls ends on a terminal batch its span cannot hold under clip
 * with the default budget and cap: the paper's 80 classes. */
static int workload_clip_underfills(unsigned cls) {
    ay_batch_params_t bp = ay_policy_default_params();
    bp.policy = AY_BATCH_CLIP;
    size_t S = ay_policy_class_size(cls);
    uint32_t n = ay_policy_terminal_batch(&bp, S);
    return ay_policy_span_objects(S, ay_policy_span_pages(S, n)) < n;
}

static void workload_pick_sets(sim_trace_t *t) {
    t->nhot = t->ncold = 0;
    if (t->wl == SIM_WL_HOTSPOT) {
        /* 42 hot classes (20% of 208, rounded up), drawn by a partial
         * Fisher-Yates shuffle from the trace's own stream */
        uint32_t perm[AY_NUM_CLASSES];
        for (unsigned i = 0; i < AY_NUM_CLASSES; i++)
            perm[i] = i;
        for (unsigned i = 0; i < 42; i++) {
            unsigned j = i + sim_rng_below(&t->rng, AY_NUM_CLASSES - i);
            uint32_t x = perm[i];
            perm[i] = perm[j];
            perm[j] = x;
        }
        for (unsigned i = 0; i < AY_NUM_CLASSES; i++) {
            if (i < 42)
                t->hot[t->nhot++] = perm[i];
            else
                t->cold[t->ncold++] = perm[i];
        }
    } else if (t->wl == SIM_WL_UNDERFILL) {
        for (unsigned c = 0; c < AY_NUM_CLASSES; c++) {
            if (workload_clip_underfills(c))
                t->hot[t->nhot++] = c;
            else
                t->cold[t->ncold++] = c;
        }
    }
}

static uint32_t *workload_map(uint32_t n) {
    void *p = mmap(NULL, sizeof(uint32_t) * n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void workload_unmap(uint32_t *p, uint32_t n) {
    if (p)
        munmap(p, sizeof(uint32_t) * n);
}

int sim_trace_init(sim_trace_t *t, sim_workload_t wl, uint64_t seed, const sim_trace_params_t *p) {
    memset(t, 0, sizeof *t);
    if ((unsigned)wl >= SIM_WL_COUNT || p->live == 0 || p->sample_every == 0 ||
        p->live > (1u << 26))
        return -1;
    t->wl = wl;
    t->p = *p;
    /* mix the workload into the seed so that workloads do not share streams */
    sim_rng_seed(&t->rng, seed * 0x100000001b3ull + (uint64_t)wl + 1);
    t->max_live = 2 * p->live;
    t->live = workload_map(t->max_live);
    t->where = workload_map(t->max_live);
    t->dead = workload_map(t->max_live);
    if (!t->live || !t->where || !t->dead) {
        sim_trace_destroy(t);
        return -1;
    }
    for (uint32_t i = 0; i < t->max_live; i++)
        t->dead[i] = t->max_live - 1 - i; /* slot 0 is handed out first */
    t->ndead = t->max_live;
    t->hash = 0xcbf29ce484222325ull;
    workload_pick_sets(t);
    return 0;
}

void sim_trace_destroy(sim_trace_t *t) {
    workload_unmap(t->live, t->max_live);
    workload_unmap(t->where, t->max_live);
    workload_unmap(t->dead, t->max_live);
    t->live = t->where = t->dead = NULL;
}

static uint32_t workload_size(sim_trace_t *t) {
    switch (t->wl) {
    case SIM_WL_UNIFORM_RAW: return 1 + sim_rng_below(&t->rng, (uint32_t)AY_MAX_SMALL_SIZE);
    case SIM_WL_UNIFORM_CLASS:
        return (uint32_t)ay_policy_class_size(sim_rng_below(&t->rng, AY_NUM_CLASSES));
    case SIM_WL_HOTSPOT:
    case SIM_WL_UNDERFILL: {
        int hot = sim_rng_below(&t->rng, 10) < 8;
        uint32_t cls = hot ? t->hot[sim_rng_below(&t->rng, t->nhot)]
                           : t->cold[sim_rng_below(&t->rng, t->ncold)];
        return (uint32_t)ay_policy_class_size(cls);
    }
    case SIM_WL_SAT384:
    default: return 384;
    }
}

static void workload_hash(sim_trace_t *t, const sim_op_t *op) {
    uint32_t w[3] = {op->kind, op->slot, op->size};
    const unsigned char *b = (const unsigned char *)w;
    for (size_t i = 0; i < sizeof w; i++) {
        t->hash ^= b[i];
        t->hash *= 0x100000001b3ull;
    }
}

void sim_trace_next(sim_trace_t *t, sim_op_t *op) {
    int alloc;
    if (t->wl == SIM_WL_SAT384) {
        /* bursts of random height: fill to hi in [live/2, 3live/2], drain
         * to lo in [0, live/8], redrawing each bound when it is reached */
        if (t->hi == 0)
            t->hi = t->p.live / 2 + sim_rng_below(&t->rng, t->p.live + 1);
        if (!t->freeing && t->nlive >= t->hi) {
            t->freeing = 1;
            t->lo = sim_rng_below(&t->rng, t->p.live / 8 + 1);
        } else if (t->freeing && t->nlive <= t->lo) {
            t->freeing = 0;
            t->hi = t->p.live / 2 + sim_rng_below(&t->rng, t->p.live + 1);
        }
        alloc = !t->freeing;
    } else if (t->nlive == 0) {
        alloc = 1;
    } else if (t->nlive >= t->max_live) {
        alloc = 0;
    } else {
        /* P(alloc) = 1 - nlive / (2 live) = (max_live - nlive) / max_live */
        alloc = sim_rng_below(&t->rng, t->max_live) >= t->nlive;
    }
    if (t->wl == SIM_WL_SAT384) {
        /* first in, first out: slots are handed out and freed in ring order */
        op->kind = alloc ? SIM_OP_ALLOC : SIM_OP_FREE;
        op->slot = (uint32_t)((alloc ? t->nalloc : t->nfreed) % t->max_live);
        op->size = alloc ? 384 : 0;
        if (alloc) {
            t->nalloc++;
            t->nlive++;
        } else {
            t->nfreed++;
            t->nlive--;
        }
    } else if (alloc) {
        uint32_t slot = t->dead[--t->ndead];
        t->where[slot] = t->nlive;
        t->live[t->nlive++] = slot;
        op->kind = SIM_OP_ALLOC;
        op->slot = slot;
        op->size = workload_size(t);
    } else {
        uint32_t i = sim_rng_below(&t->rng, t->nlive);
        uint32_t slot = t->live[i];
        uint32_t last = t->live[--t->nlive];
        t->live[i] = last;
        t->where[last] = i;
        t->dead[t->ndead++] = slot;
        op->kind = SIM_OP_FREE;
        op->slot = slot;
        op->size = 0;
    }
    workload_hash(t, op);
}
