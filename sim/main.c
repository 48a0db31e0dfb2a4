/* SPDX-License-Identifier: MIT */
/* main.c - alloy-sim's command line: geometry, run, sweep, validate, bench.
 *
 *   alloy-sim geometry --out DIR       bucket_geometry.csv + underfill counts
 *   alloy-sim run [knobs]              one run, one CSV row on stdout
 *   alloy-sim sweep --out DIR [grid]   the 12,000-run sweep and every output
 *   alloy-sim validate --out DIR       model against the real liballoy counters
 *   alloy-sim bench --out DIR          real clip vs guard: wall clock, locks, RSS
 *
 * Invariants: every option is checked before any work starts (an unknown
 * flag, workload or policy, a malformed grid or an unwritable output
 * directory exits with status 2 and a message); CSVs go to files, never to
 * stderr, and progress goes to stderr only when it is a terminal.
 * Exit status: 0 success, 1 a run failed (conservation), 2 bad usage.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grid.h"
#include "model.h"
#include "real_driver.h"
#include "report.h"
#include "sweep.h"

#ifndef SIM_SOURCE_DIR
#define SIM_SOURCE_DIR "sim"
#endif
/* Where an installed alloy-sim keeps figures.py, relative to the directory
 * of its own executable (libexec/alloy-sim -> share/alloy-sim). */
#ifndef SIM_DATA_DIR_REL
#define SIM_DATA_DIR_REL "../../share/alloy-sim"
#endif

typedef struct main_opts {
    const char *cmd;
    const char *out;
    const char *real; /* path of alloy-sim-real */
    sim_grid_t grid;
    sim_workload_t wls[SIM_WL_COUNT];
    unsigned nwl;
    unsigned nseeds;
    uint64_t seed_base;
    uint64_t seed; /* run */
    unsigned jobs;
    int progress; /* -1 auto */
    int figures;  /* -1 auto (on for sweep) */
    uint64_t fault_at;
    uint32_t warmup, ops, live, sample_every; /* 0 = workload default */
    unsigned reps;                            /* bench repetitions */
    uint32_t threads_max;                     /* bench */
    uint32_t heaps;                           /* bench: ALLOY_CONF heaps:N, 0 = default */
    uint64_t tcache_max; /* validate, bench: thread-cache byte limit; 0 = none */
    int tcache_max_set;  /* --tcache-max-bytes given */
    unsigned diverge;    /* validate: SIM_DIVERGE_* (test-only) */
    int no_clock;        /* validate: liballoy under decay_ms:-1, the model without a clock */
    int percpu;          /* validate: per-CPU caches (the model's one, liballoy's on one CPU) */
} main_opts_t;

static void main_usage(FILE *f) {
    fprintf(
        f,
        "usage: alloy-sim COMMAND [options]\n"
        "commands:\n"
        "  geometry  --out DIR                 write bucket_geometry.csv, print underfill counts\n"
        "  run       [knobs] [--seed N]        one model run; a CSV row on stdout\n"
        "  sweep     --out DIR [grid] [knobs]  the full sweep: CSVs, figures, manifest.sha256\n"
        "  validate  --out DIR [knobs]         the model against the real liballoy "
        "(validation.csv)\n"
        "  bench     --out DIR [--reps N]      real clip vs guard, 1 and 2 threads (bench.csv)\n"
        "grid (comma-separated lists; a single value for `run`):\n"
        "  --policy clip,guard,pow2  --threshold 1.5,2,3,4  --budget 64K,...,1M  --cap "
        "256,...,2048\n"
        "  --workloads uniform_raw,uniform_class,hotspot,underfill,sat384   (run: --workload W)\n"
        "  --seeds N (10)  --seed-base N (1)  --seed N (run)\n"
        "knobs: --warmup N --ops N (measured) --live N --sample-every N\n"
        "other: --jobs N (all cores)  --progress|--no-progress  --figures|--no-figures\n"
        "       --real PATH (alloy-sim-real, default: next to alloy-sim)  --reps N (bench, 5)\n"
        "       --threads N (bench: 1..N, 2)  --heaps N (bench: ALLOY_CONF heaps:N)\n"
        "       --tcache-max-bytes N (validate: 256K, bench: none) the thread caches' byte limit,\n"
        "         for the model and liballoy alike (0: none)\n"
        "       --fault-at OP (test hook: leak one cached object after op OP)\n"
        "       --no-clock (validate: liballoy under decay_ms:-1, and a model without the rules\n"
        "         on the clock; by default both share the model's clock, op i at 1000 + i / 100 "
        "ms)\n"
        "       --percpu (validate: a per-CPU cache, in the model and in liballoy, which must\n"
        "         be a build with them, as the default is, run on one CPU)\n"
        "       --diverge overflow-growth|scavenge|fullness|geometry|transfer|idle|steal|budget\n"
        "         (test hook, validate: the model breaks that rule of alloy's, so that validation\n"
        "         must fail; steal and budget are the per-CPU cache's, with --percpu)\n");
}

static int main_bad(const char *fmt, const char *arg) {
    fprintf(stderr, "alloy-sim: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (see alloy-sim --help)\n");
    return 2;
}

static int main_parse_workloads(main_opts_t *o, const char *s, int single) {
    char buf[256];
    if (strlen(s) >= sizeof buf || !*s)
        return main_bad("bad workload list '%s'", s);
    snprintf(buf, sizeof buf, "%s", s);
    o->nwl = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        sim_workload_t w;
        if (sim_workload_parse(tok, &w))
            return main_bad("unknown workload '%s' (uniform_raw, uniform_class, hotspot, "
                            "underfill, sat384)",
                            tok);
        for (unsigned i = 0; i < o->nwl; i++)
            if (o->wls[i] == w)
                return main_bad("workload '%s' listed twice", tok);
        o->wls[o->nwl++] = w;
    }
    if (o->nwl == 0 || (single && o->nwl != 1) || s[strlen(s) - 1] == ',' || strstr(s, ",,"))
        return main_bad("bad workload list '%s'", s);
    return 0;
}

static int main_u32(const char *flag, const char *v, uint32_t lo, uint32_t hi, uint32_t *out) {
    if (sim_grid_parse_u32(v, lo, hi, 0, out)) {
        fprintf(stderr,
                "alloy-sim: %s wants an integer in %u..%u, got '%s' (see alloy-sim --help)\n", flag,
                lo, hi, v);
        return 2;
    }
    return 0;
}

static int main_parse(main_opts_t *o, int argc, char **argv) {
    char err[256];
    memset(o, 0, sizeof *o);
    sim_grid_default(&o->grid);
    for (unsigned i = 0; i < SIM_WL_COUNT; i++)
        o->wls[i] = (sim_workload_t)i;
    o->nwl = SIM_WL_COUNT;
    o->nseeds = 10;
    o->seed_base = 1;
    o->seed = 1;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    o->jobs = ncpu > 0 ? (unsigned)ncpu : 1;
    o->progress = -1;
    o->figures = -1;
    o->reps = 5;
    o->threads_max = 2;
    if (argc < 2) {
        main_usage(stderr);
        return 2;
    }
    o->cmd = argv[1];
    if (!strcmp(o->cmd, "--help") || !strcmp(o->cmd, "-h") || !strcmp(o->cmd, "help")) {
        main_usage(stdout);
        exit(0);
    }
    if (strcmp(o->cmd, "geometry") && strcmp(o->cmd, "run") && strcmp(o->cmd, "sweep") &&
        strcmp(o->cmd, "validate") && strcmp(o->cmd, "bench"))
        return main_bad("unknown command '%s'", o->cmd);
    int is_run = !strcmp(o->cmd, "run");
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        int flag_only = !strcmp(a, "--progress") || !strcmp(a, "--no-progress") ||
                        !strcmp(a, "--figures") || !strcmp(a, "--no-figures") ||
                        !strcmp(a, "--no-clock") || !strcmp(a, "--percpu") || !strcmp(a, "--help");
        if (!strcmp(a, "--help")) {
            main_usage(stdout);
            exit(0);
        }
        if (!flag_only && strncmp(a, "--", 2) == 0 && i + 1 >= argc)
            return main_bad("option '%s' needs a value", a);
        const char *v = flag_only ? NULL : argv[i + 1];
        uint32_t u;
        int rc = 0;
        if (!strcmp(a, "--progress"))
            o->progress = 1;
        else if (!strcmp(a, "--no-progress"))
            o->progress = 0;
        else if (!strcmp(a, "--figures"))
            o->figures = 1;
        else if (!strcmp(a, "--no-figures"))
            o->figures = 0;
        else if (!strcmp(a, "--no-clock"))
            o->no_clock = 1;
        else if (!strcmp(a, "--percpu"))
            o->percpu = 1;
        else if (!strcmp(a, "--out"))
            o->out = v;
        else if (!strcmp(a, "--real"))
            o->real = v;
        else if (!strcmp(a, "--policy") || !strcmp(a, "--policies")) {
            if (sim_grid_parse_policies(&o->grid, v, err, sizeof err))
                return main_bad("%s", err);
        } else if (!strcmp(a, "--threshold") || !strcmp(a, "--thresholds")) {
            if (sim_grid_parse_thresholds(&o->grid, v, err, sizeof err))
                return main_bad("%s", err);
        } else if (!strcmp(a, "--budget") || !strcmp(a, "--budgets")) {
            if (sim_grid_parse_budgets(&o->grid, v, err, sizeof err))
                return main_bad("%s", err);
        } else if (!strcmp(a, "--cap") || !strcmp(a, "--caps")) {
            if (sim_grid_parse_caps(&o->grid, v, err, sizeof err))
                return main_bad("%s", err);
        } else if (!strcmp(a, "--workloads") || !strcmp(a, "--workload")) {
            rc = main_parse_workloads(o, v, is_run);
        } else if (!strcmp(a, "--seeds")) {
            rc = main_u32(a, v, 1, 1000, &u);
            o->nseeds = u;
        } else if (!strcmp(a, "--seed-base") || !strcmp(a, "--seed")) {
            rc = main_u32(a, v, 0, UINT32_MAX, &u);
            if (!strcmp(a, "--seed"))
                o->seed = u;
            else
                o->seed_base = u;
        } else if (!strcmp(a, "--jobs") || !strcmp(a, "-j")) {
            rc = main_u32(a, v, 1, 256, &u);
            o->jobs = u;
        } else if (!strcmp(a, "--warmup")) {
            rc = main_u32(a, v, 0, 100000000, &o->warmup);
            if (!rc && o->warmup == 0)
                o->warmup = UINT32_MAX; /* explicit zero */
        } else if (!strcmp(a, "--ops")) {
            rc = main_u32(a, v, 1, 100000000, &o->ops);
        } else if (!strcmp(a, "--live")) {
            rc = main_u32(a, v, 1, 1000000, &o->live);
        } else if (!strcmp(a, "--sample-every")) {
            rc = main_u32(a, v, 1, 100000000, &o->sample_every);
        } else if (!strcmp(a, "--fault-at")) {
            rc = main_u32(a, v, 1, UINT32_MAX, &u);
            o->fault_at = u;
        } else if (!strcmp(a, "--reps")) {
            rc = main_u32(a, v, 1, 1000, &o->reps);
        } else if (!strcmp(a, "--heaps")) {
            rc = main_u32(a, v, 1, 128, &o->heaps);
        } else if (!strcmp(a, "--threads")) {
            rc = main_u32(a, v, 1, 64, &o->threads_max);
        } else if (!strcmp(a, "--tcache-max-bytes")) {
            if (sim_grid_parse_u32(v, 0, UINT32_MAX, 1, &u)) {
                fprintf(stderr,
                        "alloy-sim: --tcache-max-bytes wants a size (0, 64K, 2M, ...), "
                        "got '%s' (see alloy-sim --help)\n",
                        v);
                return 2;
            }
            o->tcache_max = u;
            o->tcache_max_set = 1;
        } else if (!strcmp(a, "--diverge")) {
            if (!strcmp(v, "overflow-growth"))
                o->diverge |= SIM_DIVERGE_OVERFLOW_GROWTH;
            else if (!strcmp(v, "scavenge"))
                o->diverge |= SIM_DIVERGE_SCAVENGE;
            else if (!strcmp(v, "fullness"))
                o->diverge |= SIM_DIVERGE_FULLNESS;
            else if (!strcmp(v, "geometry"))
                o->diverge |= SIM_DIVERGE_GEOMETRY;
            else if (!strcmp(v, "transfer"))
                o->diverge |= SIM_DIVERGE_TRANSFER;
            else if (!strcmp(v, "idle"))
                o->diverge |= SIM_DIVERGE_IDLE;
            else if (!strcmp(v, "steal"))
                o->diverge |= SIM_DIVERGE_STEAL;
            else if (!strcmp(v, "budget"))
                o->diverge |= SIM_DIVERGE_BUDGET;
            else
                return main_bad("--diverge wants overflow-growth, scavenge, fullness, geometry, "
                                "transfer, idle, steal or budget, got '%s'",
                                v);
        } else {
            return main_bad("unknown option '%s'", a);
        }
        if (rc)
            return rc;
        if (!flag_only)
            i++;
    }
    if (is_run && (o->grid.npolicies != 1 || o->grid.nk != 1 || o->grid.nbudgets != 1 ||
                   o->grid.ncaps != 1)) {
        /* run takes single values; default to the paper's main configuration */
        if (o->grid.npolicies == 3)
            o->grid.npolicies = 1, o->grid.policies[0] = AY_BATCH_GUARD;
        if (o->grid.nk == 4)
            o->grid.nk = 1, o->grid.k_halves[0] = 4;
        if (o->grid.nbudgets == 5)
            o->grid.nbudgets = 1, o->grid.budgets[0] = AY_DEFAULT_BYTE_BUDGET;
        if (o->grid.ncaps == 4)
            o->grid.ncaps = 1, o->grid.caps[0] = AY_DEFAULT_OBJECT_CAP;
        if (o->grid.npolicies != 1 || o->grid.nk != 1 || o->grid.nbudgets != 1 ||
            o->grid.ncaps != 1)
            return main_bad("%s", "run takes one value per knob, not a list");
    }
    if (is_run && o->nwl != 1)
        return main_bad("%s", "run needs --workload W");
    if (!is_run && !o->out)
        return main_bad("%s needs --out DIR", o->cmd);
    return 0;
}

static sim_trace_params_t main_trace_params(const main_opts_t *o, sim_workload_t wl) {
    sim_trace_params_t p = sim_trace_default_params(wl);
    if (o->warmup)
        p.warmup_ops = o->warmup == UINT32_MAX ? 0 : o->warmup;
    if (o->ops)
        p.measure_ops = o->ops;
    if (o->live)
        p.live = o->live;
    if (o->sample_every)
        p.sample_every = o->sample_every;
    return p;
}

static int main_geometry(const main_opts_t *o) {
    char err[512];
    unsigned counts[3];
    if (sim_report_geometry(o->out, err, sizeof err)) {
        fprintf(stderr, "alloy-sim: %s\n", err);
        return 2;
    }
    sim_report_underfilled(counts);
    printf("underfilled classes (of %d): clip=%u guard=%u pow2=%u\n", AY_NUM_CLASSES, counts[0],
           counts[1], counts[2]);
    return 0;
}

static int main_run(const main_opts_t *o) {
    sim_run_spec_t spec = {0};
    sim_metrics_t m;
    char err[1024];
    spec.wl = o->wls[0];
    spec.seed = o->seed;
    spec.cfg = sim_grid_config(&o->grid, 0);
    spec.tp = main_trace_params(o, spec.wl);
    spec.fault_at = o->fault_at;
    if (sim_model_run(&spec, &m, err, sizeof err)) {
        char cfg[96];
        sim_grid_config_name(&spec.cfg, cfg, sizeof cfg);
        fprintf(stderr, "alloy-sim: run failed: workload=%s config=%s seed=%" PRIu64 ": %s\n",
                sim_workload_name(spec.wl), cfg, spec.seed, err);
        return 1;
    }
    sim_report_run_row(stdout, &spec, &m, 1);
    return 0;
}

/* figures.py: installed beside the executable's data directory
 * (SIM_DATA_DIR_REL), or in the source tree this alloy-sim was built from.
 * Writes its path into out; returns 0, or -1 when neither exists. */
static int main_figures_script(char *out, size_t cap) {
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = 0;
    char *slash = strrchr(self, '/');
    if (slash) {
        *slash = 0;
        snprintf(out, cap, "%s/%s/figures.py", self, SIM_DATA_DIR_REL);
        if (access(out, R_OK) == 0)
            return 0;
    }
    snprintf(out, cap, "%s/figures.py", SIM_SOURCE_DIR);
    return SIM_SOURCE_DIR[0] && access(out, R_OK) == 0 ? 0 : -1;
}

/* Runs `python3 figures.py DIR`; returns its exit status (127 when missing). */
static int main_figures(const char *dir) {
    char cmd[8400], script[4200];
    if (main_figures_script(script, sizeof script)) {
        fprintf(stderr,
                "alloy-sim: figures.py not found (looked in %s beside this executable and "
                "in %s)\n",
                SIM_DATA_DIR_REL, SIM_SOURCE_DIR[0] ? SIM_SOURCE_DIR : "no source tree");
        return 127;
    }
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 '%s' '%s'", script, dir);
    if (strchr(dir, '\'') || strchr(script, '\''))
        return 127;
    int rc = system(cmd);
    return rc == -1 ? 127 : rc;
}

static int main_sweep(const main_opts_t *o) {
    sim_sweep_t sw;
    char err[2048];
    memset(&sw, 0, sizeof sw);
    sw.grid = o->grid;
    memcpy(sw.wls, o->wls, sizeof sw.wls);
    sw.nwl = o->nwl;
    sw.nseeds = o->nseeds;
    sw.seed_base = o->seed_base;
    sw.jobs = o->jobs;
    sw.fault_at = o->fault_at;
    sw.progress = o->progress >= 0 ? o->progress : isatty(STDERR_FILENO);
    for (unsigned w = 0; w < SIM_WL_COUNT; w++)
        sw.tp[w] = main_trace_params(o, (sim_workload_t)w);
    double t0 = sim_now();
    if (sim_sweep_execute(&sw, err, sizeof err)) {
        fprintf(stderr, "alloy-sim: %s\n", err);
        sim_sweep_destroy(&sw);
        return 1;
    }
    double t1 = sim_now();
    if (sim_report_geometry(o->out, err, sizeof err) ||
        sim_report_runs(&sw, o->out, err, sizeof err) ||
        sim_report_summary(&sw, o->out, err, sizeof err) ||
        sim_report_paired(&sw, o->out, err, sizeof err)) {
        fprintf(stderr, "alloy-sim: %s\n", err);
        sim_sweep_destroy(&sw);
        return 2;
    }
    if (o->figures != 0) {
        int rc = main_figures(o->out);
        if (rc)
            fprintf(stderr,
                    "alloy-sim: warning: figures.py failed (status %d); CSVs are complete\n", rc);
    }
    if (sim_report_manifest(o->out, err, sizeof err)) {
        fprintf(stderr, "alloy-sim: %s\n", err);
        sim_sweep_destroy(&sw);
        return 2;
    }
    fprintf(stderr,
            "alloy-sim: %zu runs (%u configurations x %u workloads x %u seeds) in %.1f s "
            "on %u workers; outputs in %s\n",
            sw.nruns, sw.nconfigs, sw.nwl, sw.nseeds, t1 - t0, sw.jobs, o->out);
    sim_sweep_destroy(&sw);
    return 0;
}

static int main_real(const main_opts_t *o, int bench) {
    sim_real_opts_t ro;
    memset(&ro, 0, sizeof ro);
    ro.out = o->out;
    ro.real = o->real;
    memcpy(ro.wls, o->wls, sizeof ro.wls);
    ro.nwl = o->nwl;
    ro.nseeds = o->nseeds;
    ro.seed_base = o->seed_base;
    ro.reps = o->reps;
    ro.threads_max = o->threads_max;
    ro.heaps = o->heaps;
    ro.tcache_max_bytes = o->tcache_max_set ? o->tcache_max : bench ? 0 : 256u << 10;
    ro.diverge = o->diverge;
    ro.clock = !o->no_clock;
    ro.percpu = o->percpu;
    ro.progress = o->progress >= 0 ? o->progress : isatty(STDERR_FILENO);
    for (unsigned w = 0; w < SIM_WL_COUNT; w++)
        ro.tp[w] = main_trace_params(o, (sim_workload_t)w);
    return bench ? sim_real_bench(&ro) : sim_real_validate(&ro);
}

int main(int argc, char **argv) {
    main_opts_t o;
    int rc = main_parse(&o, argc, argv);
    if (rc)
        return rc;
    if (o.out) {
        char err[4400];
        if (sim_report_prepare_dir(o.out, err, sizeof err)) {
            fprintf(stderr, "alloy-sim: %s\n", err);
            return 2;
        }
    }
    if (!strcmp(o.cmd, "geometry"))
        return main_geometry(&o);
    if (!strcmp(o.cmd, "run"))
        return main_run(&o);
    if (!strcmp(o.cmd, "sweep"))
        return main_sweep(&o);
    if (!strcmp(o.cmd, "validate"))
        return main_real(&o, 0);
    return main_real(&o, 1);
}
