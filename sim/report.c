/* SPDX-License-Identifier: MIT */
/* report.c - CSV writers, the paired statistics and the manifest.  See report.h.
 *
 * Pairing: a comparison takes the same (workload, seed) under two
 * configurations that differ in one knob (policy, or return threshold) and
 * analyses the per-seed differences new - base.  Holm's correction runs
 * across the workloads of one (comparison, configuration pair, metric).
 */
#include "report.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sha256.h"
#include "stats.h"

typedef double report_get_fn(const sim_metrics_t *m);

typedef struct report_metric {
    const char *name;
    report_get_fn *get;
    int compare; /* appears in paired_comparison.csv */
} report_metric_t;

static double get_slow(const sim_metrics_t *m) { return (double)m->slow_path_calls; }
static double get_short(const sim_metrics_t *m) { return (double)m->short_fetches; }
static double get_fetched(const sim_metrics_t *m) { return (double)m->objects_fetched; }
static double get_released(const sim_metrics_t *m) { return (double)m->objects_released; }
static double get_moved(const sim_metrics_t *m) {
    return (double)(m->objects_fetched + m->objects_released);
}
static double get_spans(const sim_metrics_t *m) { return (double)m->spans_allocated; }
static double get_cached(const sim_metrics_t *m) { return m->mean_cached_bytes; }
static double get_tcache(const sim_metrics_t *m) { return m->mean_tcache_bytes; }
static double get_central(const sim_metrics_t *m) { return m->mean_central_bytes; }
static double get_pageheap(const sim_metrics_t *m) { return m->mean_pageheap_bytes; }
static double get_committed(const sim_metrics_t *m) { return (double)m->final_committed_bytes; }

static const report_metric_t report_metrics[] = {
    {"slow_path_calls", get_slow, 1},
    {"short_fetches", get_short, 1},
    {"objects_fetched", get_fetched, 0},
    {"objects_released", get_released, 0},
    {"objects_moved", get_moved, 1},
    {"spans_allocated", get_spans, 0},
    {"mean_cached_bytes", get_cached, 1},
    {"mean_tcache_bytes", get_tcache, 1},
    {"mean_central_bytes", get_central, 0},
    {"mean_pageheap_bytes", get_pageheap, 0},
    {"final_committed_bytes", get_committed, 1},
};
#define NMETRICS (sizeof report_metrics / sizeof report_metrics[0])

/* ---- files ---------------------------------------------------------------- */

static FILE *report_open(const char *dir, const char *name, char *path, size_t plen, char *err,
                         size_t errlen) {
    snprintf(path, plen, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
    return f;
}

static int report_close(FILE *f, const char *path, char *err, size_t errlen) {
    int bad = ferror(f);
    if (fclose(f) || bad) {
        snprintf(err, errlen, "error writing %s", path);
        return -1;
    }
    return 0;
}

int sim_report_prepare_dir(const char *dir, char *err, size_t errlen) {
    char buf[4096];
    if (!dir || !*dir || strlen(dir) >= sizeof buf - 32) {
        snprintf(err, errlen, "missing or overlong output directory");
        return -1;
    }
    snprintf(buf, sizeof buf, "%s", dir);
    for (char *p = buf + 1; *p; p++) { /* mkdir -p */
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(buf, 0777) && errno != EEXIST) {
            snprintf(err, errlen, "cannot create output directory %s: %s", buf, strerror(errno));
            return -1;
        }
        *p = '/';
    }
    if (mkdir(buf, 0777) && errno != EEXIST) {
        snprintf(err, errlen, "cannot create output directory %s: %s", dir, strerror(errno));
        return -1;
    }
    struct stat st;
    if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "output path %s is not a directory", dir);
        return -1;
    }
    snprintf(buf, sizeof buf, "%s/.alloy-sim-probe", dir);
    FILE *f = fopen(buf, "w");
    if (!f || fputs("probe\n", f) < 0 || fclose(f)) {
        snprintf(err, errlen, "output directory %s is not writable: %s", dir, strerror(errno));
        return -1;
    }
    unlink(buf);
    return 0;
}

/* ---- geometry ------------------------------------------------------------- */

void sim_report_underfilled(unsigned counts[3]) {
    for (unsigned p = 0; p < 3; p++) {
        ay_batch_params_t bp = ay_policy_default_params();
        bp.policy = (ay_batch_policy_t)p;
        counts[p] = 0;
        for (unsigned c = 0; c < AY_NUM_CLASSES; c++) {
            size_t S = ay_policy_class_size(c);
            uint32_t n = ay_policy_terminal_batch(&bp, S);
            if (ay_policy_span_objects(S, ay_policy_span_pages(S, n)) < n)
                counts[p]++;
        }
    }
}

int sim_report_geometry(const char *dir, char *err, size_t errlen) {
    char path[4200];
    FILE *f = report_open(dir, "bucket_geometry.csv", path, sizeof path, err, errlen);
    if (!f)
        return -1;
    fprintf(f, "class,size,batch_limit");
    for (unsigned p = 0; p < 3; p++) {
        const char *nm = ay_policy_name((ay_batch_policy_t)p);
        fprintf(f, ",%s_terminal,%s_pages,%s_capacity,%s_capacity_ratio,%s_underfilled", nm, nm, nm,
                nm, nm);
    }
    fputc('\n', f);
    for (unsigned c = 0; c < AY_NUM_CLASSES; c++) {
        ay_batch_params_t bp = ay_policy_default_params();
        size_t S = ay_policy_class_size(c);
        fprintf(f, "%u,%zu,%u", c, S, ay_policy_batch_limit(&bp, S));
        for (unsigned p = 0; p < 3; p++) {
            bp.policy = (ay_batch_policy_t)p;
            uint32_t n = ay_policy_terminal_batch(&bp, S);
            uint32_t pages = ay_policy_span_pages(S, n);
            uint32_t q = ay_policy_span_objects(S, pages);
            fprintf(f, ",%u,%u,%u,%.6f,%d", n, pages, q, (double)q / n, q < n);
        }
        fputc('\n', f);
    }
    return report_close(f, path, err, errlen);
}

/* ---- runs ------------------------------------------------------------------ */

static void report_config_cols(FILE *f, const sim_config_t *cfg) {
    char name[96], k[16];
    sim_grid_config_name(cfg, name, sizeof name);
    sim_grid_threshold_str(cfg->k_halves, k, sizeof k);
    fprintf(f, "%s,%s,%s,%u,%u", name, ay_policy_name(cfg->bp.policy), k, cfg->bp.byte_budget,
            cfg->bp.object_cap);
}

void sim_report_run_row(FILE *f, const sim_run_spec_t *spec, const sim_metrics_t *m, int header) {
    if (header) {
        fprintf(f, "workload,config,policy,threshold,budget,cap,seed");
        for (size_t i = 0; i < NMETRICS; i++)
            fprintf(f, ",%s", report_metrics[i].name);
        fprintf(f, ",final_live_bytes,samples,trace_hash\n");
    }
    fprintf(f, "%s,", sim_workload_name(spec->wl));
    report_config_cols(f, &spec->cfg);
    fprintf(f, ",%" PRIu64, spec->seed);
    for (size_t i = 0; i < NMETRICS; i++)
        fprintf(f, ",%.3f", report_metrics[i].get(m));
    fprintf(f, ",%" PRIu64 ",%" PRIu64 ",%016" PRIx64 "\n", m->final_live_bytes, m->samples,
            m->trace_hash);
}

int sim_report_runs(const sim_sweep_t *sw, const char *dir, char *err, size_t errlen) {
    char path[4200];
    FILE *f = report_open(dir, "model_runs.csv", path, sizeof path, err, errlen);
    if (!f)
        return -1;
    for (unsigned w = 0; w < sw->nwl; w++)
        for (unsigned c = 0; c < sw->nconfigs; c++)
            for (unsigned s = 0; s < sw->nseeds; s++) {
                sim_run_spec_t spec = {0};
                spec.wl = sw->wls[w];
                spec.seed = sw->seed_base + s;
                spec.cfg = sim_grid_config(&sw->grid, c);
                spec.tp = sw->tp[spec.wl];
                sim_report_run_row(f, &spec, &sw->results[sim_sweep_index(sw, w, c, s)],
                                   w == 0 && c == 0 && s == 0);
            }
    return report_close(f, path, err, errlen);
}

/* ---- summary --------------------------------------------------------------- */

static void report_column(const sim_sweep_t *sw, unsigned w, unsigned c, size_t metric,
                          double *out) {
    for (unsigned s = 0; s < sw->nseeds; s++)
        out[s] = report_metrics[metric].get(&sw->results[sim_sweep_index(sw, w, c, s)]);
}

int sim_report_summary(const sim_sweep_t *sw, const char *dir, char *err, size_t errlen) {
    char path[4200];
    double *col = malloc(sizeof *col * sw->nseeds);
    FILE *f = col ? report_open(dir, "model_summary.csv", path, sizeof path, err, errlen) : NULL;
    if (!f) {
        if (!col)
            snprintf(err, errlen, "out of memory");
        free(col);
        return -1;
    }
    fprintf(f, "workload,config,policy,threshold,budget,cap,seeds");
    for (size_t i = 0; i < NMETRICS; i++)
        fprintf(f, ",%s_mean,%s_sd", report_metrics[i].name, report_metrics[i].name);
    fputc('\n', f);
    for (unsigned w = 0; w < sw->nwl; w++)
        for (unsigned c = 0; c < sw->nconfigs; c++) {
            sim_config_t cfg = sim_grid_config(&sw->grid, c);
            fprintf(f, "%s,", sim_workload_name(sw->wls[w]));
            report_config_cols(f, &cfg);
            fprintf(f, ",%u", sw->nseeds);
            for (size_t i = 0; i < NMETRICS; i++) {
                report_column(sw, w, c, i, col);
                fprintf(f, ",%.3f,%.3f", sim_stats_mean(col, sw->nseeds),
                        sim_stats_sd(col, sw->nseeds));
            }
            fputc('\n', f);
        }
    free(col);
    return report_close(f, path, err, errlen);
}

/* ---- paired comparisons ----------------------------------------------------- */

static void report_num(FILE *f, double v) {
    if (isnan(v))
        fputs(",NA", f);
    else if (isinf(v))
        fputs(v > 0 ? ",inf" : ",-inf", f);
    else
        fprintf(f, ",%.10g", v == 0 ? 0.0 : v); /* no "-0" */
}

typedef struct report_pair_row {
    sim_paired_t diff, rel;
    double base_mean, new_mean;
} report_pair_row_t;

/* One comparison (base config ib, new config in) for one metric over all
 * workloads, with Holm across the workloads. */
static int report_pair(FILE *f, const sim_sweep_t *sw, const char *label, unsigned ib, unsigned in,
                       size_t metric) {
    unsigned ns = sw->nseeds;
    double *a = malloc(sizeof *a * ns), *b = malloc(sizeof *b * ns), *r = malloc(sizeof *r * ns);
    double p[SIM_WL_COUNT], adj[SIM_WL_COUNT];
    report_pair_row_t rows[SIM_WL_COUNT];
    if (!a || !b || !r) {
        free(a);
        free(b);
        free(r);
        return -1;
    }
    for (unsigned w = 0; w < sw->nwl; w++) {
        report_column(sw, w, ib, metric, a);
        report_column(sw, w, in, metric, b);
        int rel_ok = 1;
        for (unsigned s = 0; s < ns; s++) {
            if (a[s] != 0)
                r[s] = 100.0 * (b[s] - a[s]) / a[s];
            else if (b[s] == 0)
                r[s] = 0;
            else
                rel_ok = 0;
        }
        rows[w].diff = sim_stats_paired(a, b, ns);
        if (rel_ok) {
            rows[w].rel = sim_stats_one_sample(r, ns);
        } else {
            memset(&rows[w].rel, 0, sizeof rows[w].rel);
            rows[w].rel.mean = rows[w].rel.ci_lo = rows[w].rel.ci_hi = NAN;
        }
        rows[w].base_mean = sim_stats_mean(a, ns);
        rows[w].new_mean = sim_stats_mean(b, ns);
        p[w] = rows[w].diff.p;
    }
    free(a);
    free(b);
    free(r);
    if (sim_stats_holm(p, adj, sw->nwl))
        return -1;
    sim_config_t cb = sim_grid_config(&sw->grid, ib), cn = sim_grid_config(&sw->grid, in);
    char nb[96], nn[96];
    sim_grid_config_name(&cb, nb, sizeof nb);
    sim_grid_config_name(&cn, nn, sizeof nn);
    for (unsigned w = 0; w < sw->nwl; w++) {
        const report_pair_row_t *x = &rows[w];
        fprintf(f, "%s,%s,%s,%s,%s,%u", label, nb, nn, sim_workload_name(sw->wls[w]),
                report_metrics[metric].name, ns);
        report_num(f, x->base_mean);
        report_num(f, x->new_mean);
        report_num(f, x->diff.mean);
        report_num(f, x->diff.ci_lo);
        report_num(f, x->diff.ci_hi);
        report_num(f, x->rel.mean);
        report_num(f, x->rel.ci_lo);
        report_num(f, x->rel.ci_hi);
        report_num(f, x->diff.t);
        report_num(f, x->diff.p);
        report_num(f, adj[w]);
        report_num(f, x->diff.dz);
        fputc('\n', f);
    }
    return 0;
}

static int report_pair_all_metrics(FILE *f, const sim_sweep_t *sw, const char *label, unsigned ib,
                                   unsigned in) {
    for (size_t i = 0; i < NMETRICS; i++)
        if (report_metrics[i].compare && report_pair(f, sw, label, ib, in, i))
            return -1;
    return 0;
}

int sim_report_paired(const sim_sweep_t *sw, const char *dir, char *err, size_t errlen) {
    char path[4200];
    FILE *f = report_open(dir, "paired_comparison.csv", path, sizeof path, err, errlen);
    if (!f)
        return -1;
    fprintf(f, "comparison,base_config,new_config,workload,metric,n,base_mean,new_mean,"
               "mean_diff,diff_ci95_lo,diff_ci95_hi,rel_change_pct,rel_ci95_lo_pct,"
               "rel_ci95_hi_pct,t,p,p_holm,d_z\n");
    const sim_grid_t *g = &sw->grid;
    int rc = 0;
    /* 1. every other policy against clip, at every (threshold, budget, cap) */
    for (unsigned ip = 0; ip < g->npolicies && !rc; ip++) {
        if (g->policies[ip] == AY_BATCH_CLIP)
            continue;
        char label[32];
        snprintf(label, sizeof label, "%s_vs_clip", ay_policy_name(g->policies[ip]));
        for (unsigned c = 0; c < sw->nconfigs && !rc; c++) {
            sim_config_t cn = sim_grid_config(g, c);
            if (cn.bp.policy != g->policies[ip])
                continue;
            sim_config_t cb = cn;
            cb.bp.policy = AY_BATCH_CLIP;
            int ib = sim_grid_find(g, &cb);
            if (ib >= 0)
                rc = report_pair_all_metrics(f, sw, label, (unsigned)ib, c);
        }
    }
    /* 2. every other threshold against 2n, per policy, at the default budget and cap */
    for (unsigned c = 0; c < sw->nconfigs && !rc; c++) {
        sim_config_t cn = sim_grid_config(g, c);
        if (cn.k_halves == 4 || cn.bp.byte_budget != AY_DEFAULT_BYTE_BUDGET ||
            cn.bp.object_cap != AY_DEFAULT_OBJECT_CAP)
            continue;
        sim_config_t cb = cn;
        cb.k_halves = 4;
        int ib = sim_grid_find(g, &cb);
        if (ib < 0)
            continue;
        char label[32], k[16];
        sim_grid_threshold_str(cn.k_halves, k, sizeof k);
        snprintf(label, sizeof label, "k%s_vs_k2", k);
        rc = report_pair_all_metrics(f, sw, label, (unsigned)ib, c);
    }
    if (rc) {
        fclose(f);
        snprintf(err, errlen, "out of memory in the paired statistics");
        return -1;
    }
    return report_close(f, path, err, errlen);
}

/* ---- manifest -------------------------------------------------------------- */

static int report_cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int sim_report_manifest(const char *dir, char *err, size_t errlen) {
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(err, errlen, "cannot read %s: %s", dir, strerror(errno));
        return -1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    char path[4200];
    int rc = 0;
    while ((e = readdir(d)) != NULL) {
        struct stat st;
        if (e->d_name[0] == '.' || strcmp(e->d_name, "manifest.sha256") == 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (stat(path, &st) || !S_ISREG(st.st_mode))
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 32;
            char **nn = realloc(names, sizeof *nn * cap);
            if (!nn) {
                rc = -1;
                break;
            }
            names = nn;
        }
        if (!(names[n] = strdup(e->d_name))) {
            rc = -1;
            break;
        }
        n++;
    }
    closedir(d);
    FILE *f = NULL;
    if (!rc) {
        qsort(names, n, sizeof *names, report_cmp_str);
        f = report_open(dir, "manifest.sha256", path, sizeof path, err, errlen);
        if (!f)
            rc = -2;
    }
    for (size_t i = 0; i < n && !rc; i++) {
        char fp[4200], hex[65];
        snprintf(fp, sizeof fp, "%s/%s", dir, names[i]);
        if (sim_sha256_file(fp, hex)) {
            snprintf(err, errlen, "cannot hash %s", fp);
            rc = -2;
            break;
        }
        fprintf(f, "%s  %s\n", hex, names[i]);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    if (rc == -1)
        snprintf(err, errlen, "out of memory");
    if (f) {
        if (rc) {
            fclose(f);
            return -1;
        }
        return report_close(f, path, err, errlen);
    }
    return rc ? -1 : 0;
}
