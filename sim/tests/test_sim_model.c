/* SPDX-License-Identifier: MIT */
/* test_sim_model.c - the model's promises: the geometry counts, conservation
 * on a short run of every workload and policy, pairing (one trace per seed,
 * whatever the policy), clip == guard where no clipped terminal is reached,
 * guard's effect where it is, and a leak being caught. */
#include <string.h>

#include "check.h"
#include "model.h"
#include "report.h"

static sim_run_spec_t spec_for(sim_workload_t wl, ay_batch_policy_t pol, uint64_t seed) {
    sim_run_spec_t s;
    memset(&s, 0, sizeof s);
    s.wl = wl;
    s.seed = seed;
    s.cfg.bp = ay_policy_default_params();
    s.cfg.bp.policy = pol;
    s.cfg.k_halves = 4;
    s.tp = sim_trace_default_params(wl);
    s.tp.warmup_ops = 2000;
    s.tp.measure_ops = 30000;
    s.tp.sample_every = 97; /* odd on purpose: samples land mid-burst */
    if (wl != SIM_WL_SAT384)
        s.tp.live = 400;
    return s;
}

static int metrics_equal(const sim_metrics_t *a, const sim_metrics_t *b) {
    return a->slow_path_calls == b->slow_path_calls && a->short_fetches == b->short_fetches &&
           a->objects_fetched == b->objects_fetched && a->objects_released == b->objects_released &&
           a->spans_allocated == b->spans_allocated && a->spans_freed == b->spans_freed &&
           a->mean_cached_bytes == b->mean_cached_bytes &&
           a->mean_tcache_bytes == b->mean_tcache_bytes &&
           a->final_committed_bytes == b->final_committed_bytes &&
           a->final_live_bytes == b->final_live_bytes && a->trace_hash == b->trace_hash;
}

int main(void) {
    char err[1024];
    sim_metrics_t m[3], again;

    /* geometry: seed 002 section 6.1 */
    unsigned counts[3];
    sim_report_underfilled(counts);
    CHECK_EQ_U(counts[AY_BATCH_CLIP], 80);
    CHECK_EQ_U(counts[AY_BATCH_GUARD], 0);
    CHECK_EQ_U(counts[AY_BATCH_POW2], 0);

    for (unsigned w = 0; w < SIM_WL_COUNT; w++) {
        for (unsigned p = 0; p < 3; p++) {
            /* conservation holds at every sample point of every workload */
            sim_run_spec_t s = spec_for((sim_workload_t)w, (ay_batch_policy_t)p, 7);
            int rc = sim_model_run(&s, &m[p], err, sizeof err);
            if (rc)
                fprintf(stderr, "%s/%s: %s\n", sim_workload_name(s.wl),
                        ay_policy_name(s.cfg.bp.policy), err);
            CHECK(rc == 0);
            CHECK(m[p].samples >= 32000 / 97);
            CHECK(m[p].slow_path_calls > 0);
            CHECK(m[p].objects_fetched >= m[p].slow_path_calls - m[p].short_fetches);
        }
        /* pairing: the same seed is the same trace under every policy ... */
        CHECK(m[0].trace_hash == m[1].trace_hash);
        CHECK(m[0].trace_hash == m[2].trace_hash);
        /* ... and it is the generator's own stream, untouched by the model */
        sim_run_spec_t s = spec_for((sim_workload_t)w, AY_BATCH_CLIP, 7);
        sim_trace_t t;
        CHECK(sim_trace_init(&t, s.wl, s.seed, &s.tp) == 0);
        for (uint64_t i = 0; i < sim_trace_total_ops(&s.tp); i++) {
            sim_op_t op;
            sim_trace_next(&t, &op);
        }
        CHECK(t.hash == m[0].trace_hash);
        sim_trace_destroy(&t);
        /* a different seed is a different trace */
        sim_run_spec_t s8 = spec_for((sim_workload_t)w, AY_BATCH_CLIP, 8);
        CHECK(sim_model_run(&s8, &again, err, sizeof err) == 0);
        CHECK(again.trace_hash != m[0].trace_hash);
        /* and a run is deterministic */
        CHECK(sim_model_run(&s, &again, err, sizeof err) == 0);
        CHECK(metrics_equal(&again, &m[0]));
    }

    /* uniform size classes never reach a clipped terminal: guard == clip */
    for (uint64_t seed = 1; seed <= 3; seed++) {
        sim_run_spec_t sc = spec_for(SIM_WL_UNIFORM_CLASS, AY_BATCH_CLIP, seed);
        sim_run_spec_t sg = spec_for(SIM_WL_UNIFORM_CLASS, AY_BATCH_GUARD, seed);
        CHECK(sim_model_run(&sc, &m[0], err, sizeof err) == 0);
        CHECK(sim_model_run(&sg, &m[1], err, sizeof err) == 0);
        CHECK(metrics_equal(&m[0], &m[1]));
    }

    /* sat384 does: clip ends at 682 in 32-object spans, guard at 512 in 512 */
    {
        sim_run_spec_t sc = spec_for(SIM_WL_SAT384, AY_BATCH_CLIP, 3);
        sim_run_spec_t sg = spec_for(SIM_WL_SAT384, AY_BATCH_GUARD, 3);
        CHECK(sim_model_run(&sc, &m[0], err, sizeof err) == 0);
        CHECK(sim_model_run(&sg, &m[1], err, sizeof err) == 0);
        CHECK(m[0].short_fetches > 0);
        CHECK(m[1].short_fetches == 0);
        CHECK(m[1].slow_path_calls * 4 < m[0].slow_path_calls);
    }

    /* a leaked object breaks conservation and the run says where */
    {
        sim_run_spec_t s = spec_for(SIM_WL_UNIFORM_CLASS, AY_BATCH_GUARD, 1);
        s.fault_at = 5000;
        CHECK(sim_model_run(&s, &m[0], err, sizeof err) == -1);
        CHECK(strstr(err, "conservation violated after op 5044") != NULL); /* next sample */
    }
    return CHECK_DONE();
}
