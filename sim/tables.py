#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""tables.py - the reproduction's tables, in Markdown, from a sweep directory.

Usage: /usr/bin/python3 sim/tables.py DIR [VALIDATION_DIR [BENCH_DIR]]

Prints Table 1 (clip vs guard per workload at the main configuration),
the headline paired statistics, the pow2 ablation, Table 2 (return
thresholds under clip), and, when given, the real-allocator agreement
(validation.csv) and the clip-vs-guard timing medians (bench_summary.csv).
Reads only what alloy-sim wrote; the numbers in docs/PAPER-REPRODUCTION.md
are this script's output.
"""
import csv
import os
import sys

MIB = 1024.0 * 1024.0
WL = ["uniform_raw", "uniform_class", "hotspot", "underfill", "sat384"]
MAIN = "k2/b262144/c1024"


def read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def summ(rows, wl, policy, k="2"):
    for r in rows:
        if (r["workload"], r["policy"], r["threshold"], r["budget"], r["cap"]) == (
                wl, policy, k, "262144", "1024"):
            return r
    return None


def pair(rows, comp, wl, metric, base=None):
    base = base or "clip/" + MAIN
    for r in rows:
        if (r["comparison"], r["workload"], r["metric"], r["base_config"]) == (comp, wl, metric, base):
            return r
    return None


def f(x, nd=1):
    return "{:,.{}f}".format(float(x), nd)


def main():
    d = sys.argv[1]
    s = read(os.path.join(d, "model_summary.csv"))
    p = read(os.path.join(d, "paired_comparison.csv"))
    print("### Table 1: clip vs guard at the main configuration (2n, 256 KiB, 1024), mean of 10 seeds\n")
    print("| workload | clip slow-path | guard slow-path | paired change (95% CI) | clip cache MiB | guard cache MiB | short fetches clip -> guard |")
    print("|---|---:|---:|---|---:|---:|---|")
    for w in WL:
        c, g = summ(s, w, "clip"), summ(s, w, "guard")
        if not c or not g:
            continue
        pr = pair(p, "guard_vs_clip", w, "slow_path_calls")
        ch = "%+.2f%% (%+.2f to %+.2f)" % (float(pr["rel_change_pct"]), float(pr["rel_ci95_lo_pct"]),
                                         float(pr["rel_ci95_hi_pct"]))
        print("| %s | %s | %s | %s | %.2f | %.2f | %s -> %s |" % (
            w, f(c["slow_path_calls_mean"]), f(g["slow_path_calls_mean"]), ch,
            float(c["mean_cached_bytes_mean"]) / MIB, float(g["mean_cached_bytes_mean"]) / MIB,
            f(c["short_fetches_mean"]), f(g["short_fetches_mean"])))
    print("\n### Paired statistics, guard vs clip (Holm across the 5 workloads)\n")
    print("| workload | metric | mean diff (95% CI) | rel. change % (95% CI) | p | p Holm | d_z |")
    print("|---|---|---|---|---:|---:|---:|")
    for w in WL:
        for m in ["slow_path_calls", "short_fetches", "objects_moved", "mean_cached_bytes",
                  "final_committed_bytes"]:
            r = pair(p, "guard_vs_clip", w, m)
            if not r:
                continue
            scale = MIB if "bytes" in m else 1.0
            unit = " MiB" if "bytes" in m else ""
            print("| %s | %s | %+.3f%s (%+.3f to %+.3f) | %s (%s to %s) | %s | %s | %s |" % (
                w, m, float(r["mean_diff"]) / scale, unit, float(r["diff_ci95_lo"]) / scale,
                float(r["diff_ci95_hi"]) / scale, r["rel_change_pct"], r["rel_ci95_lo_pct"],
                r["rel_ci95_hi_pct"], r["p"], r["p_holm"], r["d_z"]))
    print("\n### Ablation: pow2 vs clip (main configuration)\n")
    print("| workload | slow-path change % (95% CI) | mean cache change % (95% CI) | p Holm (slow-path) |")
    print("|---|---|---|---:|")
    for w in WL:
        a, b = pair(p, "pow2_vs_clip", w, "slow_path_calls"), pair(p, "pow2_vs_clip", w, "mean_cached_bytes")
        if a and b:
            print("| %s | %+.2f (%+.2f to %+.2f) | %+.2f (%+.2f to %+.2f) | %s |" % (
                w, float(a["rel_change_pct"]), float(a["rel_ci95_lo_pct"]), float(a["rel_ci95_hi_pct"]),
                float(b["rel_change_pct"]), float(b["rel_ci95_lo_pct"]), float(b["rel_ci95_hi_pct"]),
                a["p_holm"]))
    print("\n### Table 2: return threshold under clip (256 KiB, 1024), mean of 10 seeds\n")
    print("| workload | 1.5n slow | 2n slow | 3n slow | 4n slow | 1.5n cache MiB | 2n cache MiB | 3n cache MiB | 4n cache MiB |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for w in WL:
        rs = [summ(s, w, "clip", k) for k in ["1.5", "2", "3", "4"]]
        if None in rs:
            continue
        print("| %s | %s | %.2f | %.2f | %.2f | %.2f |" % (
            w, " | ".join(f(r["slow_path_calls_mean"]) for r in rs),
            *[float(r["mean_cached_bytes_mean"]) / MIB for r in rs]))
    print("\n3n against 2n, clip (paired):\n")
    for w in WL:
        a = pair(p, "k3_vs_k2", w, "slow_path_calls")
        b = pair(p, "k3_vs_k2", w, "mean_cached_bytes")
        c = pair(p, "k1.5_vs_k2", w, "slow_path_calls")
        if a and b and c:
            print("- %s: 3n %+.2f%% slow-path, %+.2f MiB cache; 1.5n %+.2f%% slow-path" % (
                w, float(a["rel_change_pct"]), float(b["mean_diff"]) / MIB, float(c["rel_change_pct"])))
    if len(sys.argv) > 2:
        v = read(os.path.join(sys.argv[2], "validation.csv"))
        print("\n### Real allocator vs model (same trace, same parameters)\n")
        print("| workload | runs | all counters equal | model slow-path (clip/guard) | real slow-path (clip/guard) | committed: real active+free vs model |")
        print("|---|---:|---:|---|---|---|")
        for w in WL:
            rs = [r for r in v if r["workload"] == w]
            if not rs:
                continue
            ex = sum(int(r["exact"]) for r in rs)

            def mean(key, pol):
                xs = [float(r[key]) for r in rs if r["policy"] == pol]
                return sum(xs) / len(xs)
            dev = [(float(r["real_final_active_plus_free_bytes"]) - float(r["model_final_committed_bytes"]))
                   / float(r["model_final_committed_bytes"]) * 100 for r in rs]
            print("| %s | %d | %d | %s / %s | %s / %s | %+.2f%% (%+.2f to %+.2f) |" % (
                w, len(rs), ex, f(mean("model_slow_path_calls", "clip")), f(mean("model_slow_path_calls", "guard")),
                f(mean("real_slow_path_calls", "clip")), f(mean("real_slow_path_calls", "guard")),
                sum(dev) / len(dev), min(dev), max(dev)))
    if len(sys.argv) > 3:
        b = read(os.path.join(sys.argv[3], "bench_summary.csv"))
        print("\n### Real allocator: clip vs guard, wall clock / lock contention / RSS (medians of interleaved runs)\n")
        print("| heaps | workload | threads | policy | reps | median wall s (min-max) | contended central locks | max RSS MiB | slow-path calls | short fetches |")
        print("|---|---|---:|---|---:|---|---:|---:|---:|---:|")
        for r in b:
            print("| %s | %s | %s | %s | %s | %.3f (%.3f-%.3f) | %s | %.1f | %s | %s |" % (
                r.get("heaps", "default"), r["workload"], r["threads"], r["policy"], r["reps"], float(r["median_wall_seconds"]),
                float(r["min_wall_seconds"]), float(r["max_wall_seconds"]), r["median_central_lock_contended"],
                float(r["median_max_rss_kib"]) / 1024, f(r["median_slow_path_calls"], 0),
                f(r["median_short_fetches"], 0)))
        pp = os.path.join(sys.argv[3], "bench_paired.csv")
        if os.path.exists(pp):
            print("\nPaired per repetition (guard wall / clip wall of back-to-back runs):\n")
            print("| heaps | workload | threads | reps | median guard/clip | min-max | reps where guard was faster |")
            print("|---|---|---:|---:|---:|---|---:|")
            for r in read(pp):
                print("| %s | %s | %s | %s | %.3f | %.3f-%.3f | %s |" % (
                    r.get("heaps", "default"), r["workload"], r["threads"], r["reps"], float(r["median_guard_over_clip_wall"]),
                    float(r["min_ratio"]), float(r["max_ratio"]), r["reps_guard_faster"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
