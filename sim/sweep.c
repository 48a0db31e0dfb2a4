/* SPDX-License-Identifier: MIT */
/* sweep.c - the parallel sweep.  See sweep.h.
 *
 * Workers take run indices from one atomic counter and write only their own
 * result slot.  The main thread waits, drawing a progress line on stderr
 * when asked to (the caller asks only when stderr is a terminal).  The first
 * failure (lowest run index among those that failed) stops the sweep.
 */
#include "sweep.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct sweep_shared {
    sim_sweep_t *sw;
    atomic_size_t next;    /* next run index to hand out */
    atomic_size_t done;    /* runs finished */
    atomic_size_t current; /* a run recently started, for the progress line */
    atomic_int abort;
    pthread_mutex_t lock; /* guards the failure fields */
    size_t fail_index;
    char fail_msg[2048];
} sweep_shared_t;

double sim_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

size_t sim_sweep_index(const sim_sweep_t *sw, unsigned w, unsigned c, unsigned s) {
    return ((size_t)w * sw->nconfigs + c) * sw->nseeds + s;
}

static void sweep_spec(const sim_sweep_t *sw, size_t i, sim_run_spec_t *spec) {
    unsigned s = (unsigned)(i % sw->nseeds);
    unsigned c = (unsigned)((i / sw->nseeds) % sw->nconfigs);
    unsigned w = (unsigned)(i / sw->nseeds / sw->nconfigs);
    memset(spec, 0, sizeof *spec);
    spec->wl = sw->wls[w];
    spec->seed = sw->seed_base + s;
    spec->cfg = sim_grid_config(&sw->grid, c);
    spec->tp = sw->tp[spec->wl];
    spec->fault_at = sw->fault_at;
}

void sim_sweep_replay_cmd(const sim_run_spec_t *spec, char *buf, size_t len) {
    char k[16];
    sim_grid_threshold_str(spec->cfg.k_halves, k, sizeof k);
    snprintf(buf, len,
             "alloy-sim run --workload %s --policy %s --threshold %s --budget %u --cap %u "
             "--seed %" PRIu64 " --warmup %u --ops %u --live %u --sample-every %u",
             sim_workload_name(spec->wl), ay_policy_name(spec->cfg.bp.policy), k,
             spec->cfg.bp.byte_budget, spec->cfg.bp.object_cap, spec->seed, spec->tp.warmup_ops,
             spec->tp.measure_ops, spec->tp.live, spec->tp.sample_every);
}

static void *sweep_worker(void *arg) {
    sweep_shared_t *sh = arg;
    sim_sweep_t *sw = sh->sw;
    char err[512];
    for (;;) {
        if (atomic_load(&sh->abort))
            break;
        size_t i = atomic_fetch_add(&sh->next, 1);
        if (i >= sw->nruns)
            break;
        atomic_store(&sh->current, i);
        sim_run_spec_t spec;
        sweep_spec(sw, i, &spec);
        if (sim_model_run(&spec, &sw->results[i], err, sizeof err)) {
            char cfg[96], replay[512];
            sim_grid_config_name(&spec.cfg, cfg, sizeof cfg);
            sim_sweep_replay_cmd(&spec, replay, sizeof replay);
            pthread_mutex_lock(&sh->lock);
            if (i < sh->fail_index) {
                sh->fail_index = i;
                snprintf(sh->fail_msg, sizeof sh->fail_msg,
                         "run failed: workload=%s config=%s seed=%" PRIu64 ": %s\n"
                         "  replay with: %s",
                         sim_workload_name(spec.wl), cfg, spec.seed, err, replay);
            }
            pthread_mutex_unlock(&sh->lock);
            atomic_store(&sh->abort, 1);
        }
        atomic_fetch_add(&sh->done, 1);
    }
    return NULL;
}

static void progress_fmt_time(double s, char *buf, size_t len) {
    long t = (long)(s + 0.5);
    snprintf(buf, len, "%ld:%02ld", t / 60, t % 60);
}

void sim_progress_show(const char *label, size_t done, size_t total, double elapsed,
                       const char *current) {
    char el[32], left[32];
    progress_fmt_time(elapsed, el, sizeof el);
    if (done > 0 && done < total)
        progress_fmt_time(elapsed * (double)(total - done) / (double)done, left, sizeof left);
    else
        snprintf(left, sizeof left, done ? "0:00" : "?");
    fprintf(stderr, "\r\033[K%s: %zu/%zu (%.1f%%)  elapsed %s  left ~%s  %s", label, done, total,
            total ? 100.0 * (double)done / (double)total : 100.0, el, left, current ? current : "");
    fflush(stderr);
}

void sim_progress_clear(void) {
    fprintf(stderr, "\r\033[K");
    fflush(stderr);
}

int sim_sweep_execute(sim_sweep_t *sw, char *err, size_t errlen) {
    sw->nconfigs = sim_grid_size(&sw->grid);
    sw->nruns = (size_t)sw->nwl * sw->nconfigs * sw->nseeds;
    sw->results = calloc(sw->nruns ? sw->nruns : 1, sizeof *sw->results);
    if (!sw->results) {
        snprintf(err, errlen, "out of memory for %zu results", sw->nruns);
        return -1;
    }
    sweep_shared_t sh;
    memset(&sh, 0, sizeof sh);
    sh.sw = sw;
    atomic_init(&sh.next, 0);
    atomic_init(&sh.done, 0);
    atomic_init(&sh.current, 0);
    atomic_init(&sh.abort, 0);
    pthread_mutex_init(&sh.lock, NULL);
    sh.fail_index = SIZE_MAX;

    unsigned jobs = sw->jobs ? sw->jobs : 1;
    pthread_t *tids = calloc(jobs, sizeof *tids);
    if (!tids) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    unsigned started = 0;
    for (; started < jobs; started++)
        if (pthread_create(&tids[started], NULL, sweep_worker, &sh))
            break;
    if (started == 0) {
        sweep_worker(&sh); /* no threads at all: run inline */
    } else if (sw->progress) {
        double t0 = sim_now();
        struct timespec nap = {0, 250 * 1000 * 1000};
        while (atomic_load(&sh.done) < sw->nruns && !atomic_load(&sh.abort)) {
            size_t cur = atomic_load(&sh.current);
            sim_run_spec_t spec;
            char cfg[96], what[160];
            sweep_spec(sw, cur < sw->nruns ? cur : 0, &spec);
            sim_grid_config_name(&spec.cfg, cfg, sizeof cfg);
            snprintf(what, sizeof what, "running %s %s seed %" PRIu64, sim_workload_name(spec.wl),
                     cfg, spec.seed);
            sim_progress_show(sw->label ? sw->label : "sweep", atomic_load(&sh.done), sw->nruns,
                              sim_now() - t0, what);
            nanosleep(&nap, NULL);
        }
        sim_progress_clear();
    }
    for (unsigned j = 0; j < started; j++)
        pthread_join(tids[j], NULL);
    free(tids);
    pthread_mutex_destroy(&sh.lock);
    if (sh.fail_index != SIZE_MAX) {
        snprintf(err, errlen, "%s", sh.fail_msg);
        return -1;
    }
    return 0;
}

void sim_sweep_destroy(sim_sweep_t *sw) {
    free(sw->results);
    sw->results = NULL;
}
