/* SPDX-License-Identifier: MIT */
/* report.h - everything the simulator writes: bucket_geometry.csv,
 * model_runs.csv, model_summary.csv, paired_comparison.csv and
 * manifest.sha256.  Every writer produces the same bytes for the same
 * results (fixed row order, fixed number formats). */
#ifndef ALLOY_SIM_REPORT_H
#define ALLOY_SIM_REPORT_H

#include <stdio.h>

#include "sweep.h"

/* Creates dir (and its parents) when missing and proves it writable by
 * creating and removing a probe file.  Returns 0, or -1 with err set. */
int sim_report_prepare_dir(const char *dir, char *err, size_t errlen);

/* Underfilled-class counts at the default budget and cap, by policy. */
void sim_report_underfilled(unsigned counts[3]);

int sim_report_geometry(const char *dir, char *err, size_t errlen);
int sim_report_runs(const sim_sweep_t *sw, const char *dir, char *err, size_t errlen);
int sim_report_summary(const sim_sweep_t *sw, const char *dir, char *err, size_t errlen);
int sim_report_paired(const sim_sweep_t *sw, const char *dir, char *err, size_t errlen);
/* manifest.sha256 over every regular file in dir (sha256sum -c format). */
int sim_report_manifest(const char *dir, char *err, size_t errlen);

/* Writes the header and one row of a single run's metrics (for `run`). */
void sim_report_run_row(FILE *f, const sim_run_spec_t *spec, const sim_metrics_t *m, int header);

#endif
