/* SPDX-License-Identifier: MIT */
/* real_driver.c - `alloy-sim validate` and `alloy-sim bench`: the model
 * against the real liballoy.  See real_driver.h.
 *
 * Each real run is a fresh child process (fork + exec of alloy-sim-real) with
 * ALLOY_CONF naming the policy and the thread cache's byte limit, so clip
 * and guard never share a heap and each starts from the same empty state
 * the model starts from.  validate gives the model the same byte limit
 * (--tcache-max-bytes, 256 KiB by default: low enough that every workload
 * scavenges, and so that overflows happen while batches still grow), so
 * that every rule of the thread cache's state machine is exercised.
 * validate --percpu: the model's per-CPU cache against liballoy's, in a
 * build that has them, with the harness on one CPU (--pin), and the
 * per-CPU counters (alloy_ctl's percpu.*) compared too.
 * validate: for every (workload, seed, policy) the counters of the real run
 * and of the model run over the same trace go side by side into
 * validation.csv; `exact` says whether all counters agree, and each counter
 * that differs is named on stderr.
 * bench: timing-mode runs, interleaved (for each repetition, every cell, with
 * the policy order alternating), into bench.csv; medians into
 * bench_summary.csv, and the per-repetition guard/clip wall-clock ratio
 * (the two runs of a pair ran back to back) into bench_paired.csv.
 */
#include "real_driver.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "model.h"
#include "sweep.h"

/* tcache_total_bytes as tcache_max_bytes: the model has one thread cache
 * and its byte limit only (without it, "no limit" was 8 MiB, the total's
 * default, in liballoy, and the validation without a limit disagreed) */
#define REAL_CONF_FMT                                                                              \
    "batch_policy:%s,return_threshold:2,tcache_max_bytes:%" PRIu64 ",tcache_total_bytes:%" PRIu64
/* validate: the transfer caches' bound as the model's; with --no-clock, no
 * rules on the clock (the idle rule, decay rounds: transfer.h), as the model
 * without a clock.  Otherwise liballoy's default decay_ms, and the harness
 * runs liballoy on the model's clock (--clock: sim/real.c). */
#define REAL_VALIDATE_CONF ",transfer_bytes:%" PRIu64
#define REAL_VALIDATE_NO_CLOCK ",decay_ms:-1"
/* validate's first tier: the thread caches (whatever the build), or with
 * --percpu the per-CPU caches of a build that has them (not one configured
 * with -DALLOY_PERCPU=OFF), the harness pinned to one CPU (--pin) so that one
 * cache serves the trace, as the model's one */
#define REAL_VALIDATE_THREAD ",percpu:off"
#define REAL_VALIDATE_PERCPU ",percpu:auto"
#define REAL_MAX_FIELDS 24

static int real_find(const sim_real_opts_t *o, char *path, size_t len) {
    if (o->real) {
        snprintf(path, len, "%s", o->real);
    } else {
        char self[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        self[n > 0 ? n : 0] = 0;
        char *slash = strrchr(self, '/');
        if (slash)
            slash[1] = 0;
        snprintf(path, len, "%salloy-sim-real", slash ? self : "./");
    }
    if (access(path, X_OK) == 0)
        return 0;
    fprintf(stderr,
            "alloy-sim: cannot run %s (build the alloy-sim-real target, or pass "
            "--real PATH)\n",
            path);
    return -1;
}

/* Runs the harness with argv and ALLOY_CONF for policy; parses the second
 * line of its stdout into v (numbers) and hash.  validate: the settings
 * that make liballoy's run the model's (REAL_VALIDATE_CONF).  Returns 0 or
 * -1. */
static int real_spawn(const char *exe, char *const argv[], const char *policy, uint64_t tcache_max,
                      uint32_t heaps, int validate, int clock, int percpu, double *v, unsigned nv,
                      uint64_t *hash) {
    int fd[2];
    if (pipe(fd))
        return -1;
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return -1;
    }
    if (pid == 0) {
        char conf[256];
        /* no limit (0) is the largest one ALLOY_CONF accepts */
        uint64_t limit = tcache_max ? tcache_max : (uint64_t)1 << 40;
        int len = snprintf(conf, sizeof conf, REAL_CONF_FMT, policy, limit, limit);
        if (heaps && len > 0 && (size_t)len < sizeof conf)
            len += snprintf(conf + len, sizeof conf - (size_t)len, ",heaps:%u", heaps);
        if (validate && len > 0 && (size_t)len < sizeof conf)
            len += snprintf(conf + len, sizeof conf - (size_t)len, REAL_VALIDATE_CONF,
                            (uint64_t)SIM_TRANSFER_BYTES);
        if (validate && !clock && len > 0 && (size_t)len < sizeof conf)
            len += snprintf(conf + len, sizeof conf - (size_t)len, REAL_VALIDATE_NO_CLOCK);
        if (validate && len > 0 && (size_t)len < sizeof conf)
            snprintf(conf + len, sizeof conf - (size_t)len, "%s",
                     percpu ? REAL_VALIDATE_PERCPU : REAL_VALIDATE_THREAD);
        setenv("ALLOY_CONF", conf, 1);
        dup2(fd[1], STDOUT_FILENO);
        close(fd[0]);
        close(fd[1]);
        execv(exe, argv);
        _exit(127);
    }
    close(fd[1]);
    char buf[4096];
    size_t got = 0;
    ssize_t r;
    while ((r = read(fd[0], buf + got, sizeof buf - 1 - got)) > 0 || (r < 0 && errno == EINTR))
        if (r > 0)
            got += (size_t)r;
    close(fd[0]);
    buf[got] = 0;
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return -1;
    char *line = strchr(buf, '\n');
    if (!line)
        return -1;
    line++;
    for (unsigned i = 0; i < nv; i++) {
        char *end;
        v[i] = strtod(line, &end);
        if (end == line || (*end != ',' && *end != '\n'))
            return -1;
        line = end + 1;
    }
    if (hash)
        *hash = strtoull(line, NULL, 16);
    return 0;
}

static void real_trace_args(char *bufs[8], char *store, size_t each, const sim_trace_params_t *tp,
                            uint64_t seed) {
    snprintf(store + 0 * each, each, "%" PRIu64, seed);
    snprintf(store + 1 * each, each, "%u", tp->warmup_ops);
    snprintf(store + 2 * each, each, "%u", tp->measure_ops);
    snprintf(store + 3 * each, each, "%u", tp->live);
    snprintf(store + 4 * each, each, "%u", tp->sample_every);
    for (int i = 0; i < 5; i++)
        bufs[i] = store + (size_t)i * each;
}

int sim_real_validate(const sim_real_opts_t *o) {
    char exe[PATH_MAX + 32], path[PATH_MAX + 64];
    if (real_find(o, exe, sizeof exe))
        return 2;
    snprintf(path, sizeof path, "%s/validation.csv", o->out);
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "alloy-sim: cannot write %s: %s\n", path, strerror(errno));
        return 2;
    }
    static const char *const thread_names[] = {
        "slow_path_calls",   "short_fetches",     "objects_fetched",   "objects_released",
        "spans_allocated",   "spans_freed",       "tcache_overflows",  "tcache_scavenges",
        "mean_cached_bytes", "mean_tcache_bytes", "mean_central_bytes"};
    /* where each counter is in the harness's row */
    static const unsigned thread_col[] = {0, 1, 2, 3, 4, 5, 13, 14, 6, 7, 8};
    /* --percpu: the per-CPU cache's counters (alloy_ctl's percpu.*) in place
     * of the thread cache's; its misses are the slow-path calls, and it is
     * never drained (model.c) */
    static const char *const percpu_names[] = {
        "slow_path_calls",   "short_fetches",     "objects_fetched", "objects_released",
        "spans_allocated",   "spans_freed",       "percpu_misses",   "percpu_overflows",
        "percpu_scavenges",  "percpu_moves",      "percpu_drains",   "mean_cached_bytes",
        "mean_tcache_bytes", "mean_central_bytes"};
    static const unsigned percpu_col[] = {0, 1, 2, 3, 4, 5, 16, 17, 18, 19, 20, 6, 7, 8};
    enum { NREAL = 21, REAL_CACHES = 15 };
    const char *const *names = o->percpu ? percpu_names : thread_names;
    const unsigned *real_col = o->percpu ? percpu_col : thread_col;
    const unsigned NCMP = o->percpu ? 14 : 11;
    fprintf(f, "workload,seed,policy");
    for (unsigned i = 0; i < NCMP; i++)
        fprintf(f, ",model_%s,real_%s", names[i], names[i]);
    fprintf(f, ",model_final_committed_bytes,real_final_mapped_bytes,"
               "real_final_active_plus_free_bytes,same_trace,exact\n");
    /* the paper's two and alloy's default, whose spans are its own */
    static const ay_batch_policy_t pols[] = {AY_BATCH_CLIP, AY_BATCH_GUARD, AY_BATCH_COMPACT};
    enum { NPOL = sizeof pols / sizeof pols[0] };
    size_t total = (size_t)o->nwl * o->nseeds * NPOL, done = 0, exact_runs = 0;
    double t0 = sim_now();
    int rc = 0;
    for (unsigned w = 0; w < o->nwl && !rc; w++) {
        for (unsigned s = 0; s < o->nseeds && !rc; s++) {
            for (unsigned p = 0; p < NPOL && !rc; p++) {
                ay_batch_policy_t pol = pols[p];
                sim_workload_t wl = o->wls[w];
                uint64_t seed = o->seed_base + s;
                if (o->progress) {
                    char what[128];
                    snprintf(what, sizeof what, "running %s %s seed %" PRIu64,
                             sim_workload_name(wl), ay_policy_name(pol), seed);
                    sim_progress_show("validate", done, total, sim_now() - t0, what);
                }
                /* the model */
                sim_run_spec_t spec;
                memset(&spec, 0, sizeof spec);
                spec.wl = wl;
                spec.seed = seed;
                spec.cfg.bp = ay_policy_default_params();
                spec.cfg.bp.policy = pol;
                spec.cfg.k_halves = 4;
                spec.cfg.tcache_max_bytes = o->tcache_max_bytes;
                spec.cfg.transfer_bytes = SIM_TRANSFER_BYTES;
                spec.cfg.diverge = o->diverge;
                spec.cfg.clock = o->clock;
                spec.cfg.percpu = o->percpu;
                spec.cfg.binned_max = SIM_BINNED_MAX; /* as liballoy: larger are pages */
                spec.tp = o->tp[wl];
                sim_metrics_t m;
                char err[1024];
                if (sim_model_run(&spec, &m, err, sizeof err)) {
                    fprintf(stderr, "alloy-sim: model run failed: %s\n", err);
                    rc = 1;
                    break;
                }
                /* the real allocator */
                char store[5 * 32], *ta[8];
                real_trace_args(ta, store, 32, &spec.tp, seed);
                char *argv[] = {exe,      "--workload", (char *)sim_workload_name(wl),
                                "--seed", ta[0],        "--warmup",
                                ta[1],    "--ops",      ta[2],
                                "--live", ta[3],        "--sample-every",
                                ta[4],    NULL,         NULL,
                                NULL};
                unsigned k = 13;
                if (o->clock)
                    argv[k++] = "--clock";
                if (o->percpu)
                    argv[k++] = "--pin";
                double v[REAL_MAX_FIELDS];
                uint64_t hash = 0;
                if (real_spawn(exe, argv, ay_policy_name(pol), o->tcache_max_bytes, 0, 1, o->clock,
                               o->percpu, v, NREAL, &hash)) {
                    fprintf(stderr, "alloy-sim: real run failed: %s %s seed %" PRIu64 "\n",
                            sim_workload_name(wl), ay_policy_name(pol), seed);
                    rc = 1;
                    break;
                }
                if (o->percpu && v[REAL_CACHES] != 1) {
                    fprintf(stderr,
                            "alloy-sim: validate --percpu: liballoy ran %.0f per-CPU caches, "
                            "not one (a build with -DALLOY_PERCPU=OFF, or no rseq: "
                            "alloy_ctl percpu.why)\n",
                            v[REAL_CACHES]);
                    rc = 1;
                    break;
                }
                double thread_mv[] = {(double)m.slow_path_calls, (double)m.short_fetches,
                                      (double)m.objects_fetched, (double)m.objects_released,
                                      (double)m.spans_allocated, (double)m.spans_freed,
                                      (double)m.overflows,       (double)m.scavenges,
                                      m.mean_cached_bytes,       m.mean_tcache_bytes,
                                      m.mean_central_bytes};
                double percpu_mv[] = {(double)m.slow_path_calls,
                                      (double)m.short_fetches,
                                      (double)m.objects_fetched,
                                      (double)m.objects_released,
                                      (double)m.spans_allocated,
                                      (double)m.spans_freed,
                                      (double)m.slow_path_calls,
                                      (double)m.overflows,
                                      (double)m.scavenges,
                                      (double)m.moves,
                                      0,
                                      m.mean_cached_bytes,
                                      m.mean_tcache_bytes,
                                      m.mean_central_bytes};
                const double *mv = o->percpu ? percpu_mv : thread_mv;
                int exact = hash == m.trace_hash;
                fprintf(f, "%s,%" PRIu64 ",%s", sim_workload_name(wl), seed, ay_policy_name(pol));
                for (unsigned i = 0; i < NCMP; i++) {
                    /* the harness prints 3 decimals: compare at that precision */
                    char a[64], b[64];
                    snprintf(a, sizeof a, "%.3f", mv[i]);
                    snprintf(b, sizeof b, "%.3f", v[real_col[i]]);
                    fprintf(f, ",%s,%s", a, b);
                    if (strcmp(a, b) != 0) {
                        exact = 0;
                        fprintf(stderr,
                                "alloy-sim: validate: %s %s seed %" PRIu64 ": %s differs: "
                                "model %s, real %s\n",
                                sim_workload_name(wl), ay_policy_name(pol), seed, names[i], a, b);
                    }
                }
                fprintf(f, ",%" PRIu64 ",%.0f,%.0f,%d,%d\n", m.final_committed_bytes, v[11],
                        v[9] + v[10], hash == m.trace_hash, exact);
                exact_runs += (size_t)exact;
                done++;
            }
        }
    }
    if (o->progress)
        sim_progress_clear();
    if (fclose(f) && !rc) {
        fprintf(stderr, "alloy-sim: error writing %s\n", path);
        return 2;
    }
    if (!rc)
        fprintf(stderr,
                "alloy-sim: validate: %zu of %zu real runs match the model exactly on "
                "every counter; details in %s\n",
                exact_runs, done, path);
    return rc;
}

static int real_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double real_median(double *v, unsigned n) {
    qsort(v, n, sizeof *v, real_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int sim_real_bench(const sim_real_opts_t *o) {
    char exe[PATH_MAX + 32], path[PATH_MAX + 64];
    if (real_find(o, exe, sizeof exe))
        return 2;
    unsigned nthr = o->threads_max, reps = o->reps, nwl = o->nwl;
    size_t cells = (size_t)nwl * nthr * 2, total = cells * reps;
    /* per cell: wall, contended, rss, slow, short */
    double *res = calloc(total * 5, sizeof *res);
    if (!res) {
        fprintf(stderr, "alloy-sim: out of memory\n");
        return 2;
    }
    snprintf(path, sizeof path, "%s/bench.csv", o->out);
    FILE *f = fopen(path, "w");
    if (!f) {
        free(res);
        fprintf(stderr, "alloy-sim: cannot write %s: %s\n", path, strerror(errno));
        return 2;
    }
    fprintf(f, "heaps,rep,order,workload,threads,policy,wall_seconds,slow_path_calls,"
               "short_fetches,central_lock_contended,max_rss_kib\n");
    char heaps_s[16];
    if (o->heaps)
        snprintf(heaps_s, sizeof heaps_s, "%u", o->heaps);
    else
        snprintf(heaps_s, sizeof heaps_s, "default");
    double t0 = sim_now();
    size_t done = 0;
    int rc = 0;
    for (unsigned r = 0; r < reps && !rc; r++) {
        unsigned order = 0;
        for (unsigned w = 0; w < nwl && !rc; w++) {
            for (unsigned t = 1; t <= nthr && !rc; t++) {
                for (unsigned k = 0; k < 2 && !rc; k++) {
                    /* alternate which policy goes first: ABBA across repetitions */
                    unsigned p = (k + r + w + t) % 2;
                    ay_batch_policy_t pol = p ? AY_BATCH_GUARD : AY_BATCH_CLIP;
                    sim_workload_t wl = o->wls[w];
                    if (o->progress) {
                        char what[128];
                        snprintf(what, sizeof what, "running %s %s %u thread(s), rep %u",
                                 sim_workload_name(wl), ay_policy_name(pol), t, r + 1);
                        sim_progress_show("bench", done, total, sim_now() - t0, what);
                    }
                    char store[5 * 32], *ta[8], thr[16];
                    real_trace_args(ta, store, 32, &o->tp[wl], o->seed_base);
                    snprintf(thr, sizeof thr, "%u", t);
                    char *argv[] = {exe,      "--workload", (char *)sim_workload_name(wl),
                                    "--seed", ta[0],        "--warmup",
                                    ta[1],    "--ops",      ta[2],
                                    "--live", ta[3],        "--threads",
                                    thr,      "--timing",   NULL};
                    double v[6];
                    if (real_spawn(exe, argv, ay_policy_name(pol), o->tcache_max_bytes, o->heaps, 0,
                                   0, 0, v, 6, NULL)) {
                        fprintf(stderr, "alloy-sim: real run failed: %s %s %u threads\n",
                                sim_workload_name(wl), ay_policy_name(pol), t);
                        rc = 1;
                        break;
                    }
                    fprintf(f, "%s,%u,%u,%s,%u,%s,%.6f,%.0f,%.0f,%.0f,%.0f\n", heaps_s, r + 1,
                            order++, sim_workload_name(wl), t, ay_policy_name(pol), v[0], v[1],
                            v[2], v[3], v[4]);
                    size_t cell = ((size_t)w * nthr + (t - 1)) * 2 + p;
                    double *dst = &res[(cell * reps + r) * 5];
                    dst[0] = v[0];
                    dst[1] = v[3];
                    dst[2] = v[4];
                    dst[3] = v[1];
                    dst[4] = v[2];
                    done++;
                }
            }
        }
    }
    if (o->progress)
        sim_progress_clear();
    fclose(f);
    if (!rc) {
        snprintf(path, sizeof path, "%s/bench_summary.csv", o->out);
        f = fopen(path, "w");
        if (!f) {
            free(res);
            fprintf(stderr, "alloy-sim: cannot write %s\n", path);
            return 2;
        }
        fprintf(f, "heaps,workload,threads,policy,reps,median_wall_seconds,min_wall_seconds,"
                   "max_wall_seconds,median_central_lock_contended,median_max_rss_kib,"
                   "median_slow_path_calls,median_short_fetches\n");
        double *col = malloc(sizeof *col * reps);
        for (size_t c = 0; col && c < cells; c++) {
            unsigned p = (unsigned)(c % 2), t = (unsigned)((c / 2) % nthr) + 1;
            unsigned w = (unsigned)(c / 2 / nthr);
            double med[5], lo = 0, hi = 0;
            for (unsigned m = 0; m < 5; m++) {
                for (unsigned r = 0; r < reps; r++)
                    col[r] = res[(c * reps + r) * 5 + m];
                med[m] = real_median(col, reps);
                if (m == 0) {
                    lo = col[0];
                    hi = col[reps - 1];
                }
            }
            fprintf(f, "%s,%s,%u,%s,%u,%.6f,%.6f,%.6f,%.0f,%.0f,%.0f,%.0f\n", heaps_s,
                    sim_workload_name(o->wls[w]), t, p ? "guard" : "clip", reps, med[0], lo, hi,
                    med[1], med[2], med[3], med[4]);
        }
        fclose(f);
        /* paired: guard / clip wall clock of the two runs of one repetition */
        snprintf(path, sizeof path, "%s/bench_paired.csv", o->out);
        f = fopen(path, "w");
        if (f && col) {
            fprintf(f, "heaps,workload,threads,reps,median_guard_over_clip_wall,min_ratio,"
                       "max_ratio,reps_guard_faster\n");
            for (size_t c = 0; c < cells; c += 2) {
                unsigned t = (unsigned)((c / 2) % nthr) + 1, w = (unsigned)(c / 2 / nthr);
                unsigned faster = 0;
                for (unsigned r = 0; r < reps; r++) {
                    double clip = res[(c * reps + r) * 5], guard = res[((c + 1) * reps + r) * 5];
                    col[r] = clip > 0 ? guard / clip : 0;
                    faster += guard < clip;
                }
                double med = real_median(col, reps);
                fprintf(f, "%s,%s,%u,%u,%.4f,%.4f,%.4f,%u\n", heaps_s, sim_workload_name(o->wls[w]),
                        t, reps, med, col[0], col[reps - 1], faster);
            }
            fclose(f);
        }
        free(col);
        fprintf(stderr, "alloy-sim: bench: %zu interleaved runs; medians in %s\n", done, path);
    }
    free(res);
    return rc;
}
