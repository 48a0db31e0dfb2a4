#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""figures.py - the paper's four figures from an alloy-sim sweep directory.

Usage: /usr/bin/python3 sim/figures.py DIR

Reads DIR/bucket_geometry.csv, DIR/model_summary.csv and
DIR/paired_comparison.csv (written by `alloy-sim sweep`) and writes
  fig1_capacity_ratio.png     capacity ratio Q/n of the terminal batch, per class
  fig2_paired_change.png      paired change against clip, per workload (95% CI)
  fig3_search_space_sat384.png  the grid's configurations on the 384-byte workload
  fig4_threshold_tradeoff.png slow-path calls against cached bytes, by threshold
Invariant: the PNGs depend only on the CSVs (no timestamps in the metadata),
so the manifest is stable across reruns.  Uses Debian's python3-matplotlib.
"""
import csv
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

MAIN = ("2", "262144", "1024")  # threshold, budget, cap of the paper's main configuration
WORKLOADS = ["uniform_raw", "uniform_class", "hotspot", "underfill", "sat384"]
MIB = 1024.0 * 1024.0


def read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def save(fig, out, name):
    fig.tight_layout()
    fig.savefig(os.path.join(out, name), dpi=110, metadata={"Software": None})
    plt.close(fig)


def fig1(out, geo):
    fig, ax = plt.subplots(figsize=(8, 4.2))
    size = [int(r["size"]) for r in geo]
    clip = [float(r["clip_capacity_ratio"]) for r in geo]
    guard = [float(r["guard_capacity_ratio"]) for r in geo]
    bad = [i for i, r in enumerate(geo) if r["clip_underfilled"] == "1"]
    ok = [i for i, r in enumerate(geo) if r["clip_underfilled"] != "1"]
    ax.scatter([size[i] for i in ok], [clip[i] for i in ok], s=12, c="0.55", label="clip, Q >= n")
    ax.scatter([size[i] for i in bad], [clip[i] for i in bad], s=14, c="red",
               label="clip, Q < n (%d classes)" % len(bad))
    ax.scatter(size, guard, s=10, marker="x", c="tab:blue", label="guard (all Q >= n)")
    ax.axhline(1.0, color="black", lw=0.8, ls="--")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xlabel("class size S (bytes)")
    ax.set_ylabel("capacity ratio Q(S, n) / n at the terminal batch")
    ax.set_title("Figure 1: terminal batch vs span capacity, 208 classes")
    ax.legend(fontsize=8, loc="upper left")
    save(fig, out, "fig1_capacity_ratio.png")


def fnum(s):
    try:
        v = float(s)
    except ValueError:
        return float("nan")
    return v


def fig2(out, paired):
    metrics = [("slow_path_calls", "slow-path calls"), ("objects_moved", "objects moved"),
               ("mean_cached_bytes", "mean cached bytes")]
    comps = [("guard_vs_clip", "guard", "tab:blue"), ("pow2_vs_clip", "pow2", "tab:orange")]
    fig, axes = plt.subplots(1, len(metrics), figsize=(12, 4))
    for ax, (metric, label) in zip(axes, metrics):
        present = [w for w in WORKLOADS if any(r["workload"] == w for r in paired)]
        for j, (comp, name, color) in enumerate(comps):
            xs, ys, lo, hi = [], [], [], []
            for i, w in enumerate(present):
                for r in paired:
                    t, b, c = r["new_config"].split("/")[1:]
                    if (r["comparison"] == comp and r["workload"] == w and r["metric"] == metric
                            and (t[1:], b[1:], c[1:]) == MAIN):
                        m = fnum(r["rel_change_pct"])
                        if math.isnan(m):
                            continue
                        xs.append(i + (j - 0.5) * 0.38)
                        ys.append(m)
                        l, h = fnum(r["rel_ci95_lo_pct"]), fnum(r["rel_ci95_hi_pct"])
                        lo.append(0 if math.isnan(l) else m - l)
                        hi.append(0 if math.isnan(h) else h - m)
            if xs:
                ax.bar(xs, ys, width=0.36, color=color, label=name + " vs clip",
                       yerr=[lo, hi], capsize=3)
        ax.axhline(0, color="black", lw=0.8)
        ax.set_xticks(range(len(present)))
        ax.set_xticklabels(present, rotation=30, ha="right", fontsize=8)
        ax.set_ylabel("paired change vs clip (%)")
        ax.set_title(label, fontsize=10)
        ax.legend(fontsize=7)
    fig.suptitle("Figure 2: paired change per workload (threshold 2n, 256 KiB, 1024; 95% t CI)")
    save(fig, out, "fig2_paired_change.png")


def fig3(out, summary):
    rows = [r for r in summary if r["workload"] == "sat384"]
    fig, ax = plt.subplots(figsize=(8, 5))
    colors = {"clip": "tab:red", "guard": "tab:blue", "pow2": "tab:orange"}
    markers = {"1.5": "v", "2": "o", "3": "s", "4": "D"}
    seen = set()
    for r in rows:
        key = (r["policy"], r["threshold"])
        label = "%s, %sn" % key if key not in seen else None
        seen.add(key)
        x, y = float(r["mean_cached_bytes_mean"]) / MIB, float(r["slow_path_calls_mean"])
        color = colors.get(r["policy"], "gray")
        if r["policy"] == "guard":  # hollow and larger, so pow2 on top does not hide it
            ax.scatter(x, y, facecolors="none", edgecolors=color,
                       marker=markers.get(r["threshold"], "o"), s=60, label=label)
        else:
            ax.scatter(x, y, c=color, marker=markers.get(r["threshold"], "o"), s=18,
                       alpha=0.8, label=label)
        if (r["threshold"], r["budget"], r["cap"]) == MAIN and r["policy"] != "pow2":
            ax.annotate(r["policy"] + " (main: 2n, 256 KiB, 1024)", (x, y), fontsize=8,
                        xytext=(8, 8 if r["policy"] == "clip" else -14),
                        textcoords="offset points")
    ax.set_yscale("log")
    ax.set_xlabel("mean cached MiB (thread + central caches)")
    ax.set_ylabel("mean slow-path calls (log)")
    ax.set_title("Figure 3: sat384, %d configurations (policy x threshold x budget x cap)" % len(rows))
    ax.legend(fontsize=7, ncol=3)
    save(fig, out, "fig3_search_space_sat384.png")


def fig4(out, summary):
    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    for ax, w in zip(axes, ["uniform_raw", "uniform_class", "hotspot"]):
        pts = [r for r in summary if r["workload"] == w and r["policy"] == "clip"
               and (r["budget"], r["cap"]) == MAIN[1:]]
        pts.sort(key=lambda r: float(r["threshold"]))
        xs = [float(r["mean_cached_bytes_mean"]) / MIB for r in pts]
        ys = [float(r["slow_path_calls_mean"]) for r in pts]
        ax.plot(xs, ys, "o-", color="tab:red")
        for r, x, y in zip(pts, xs, ys):
            ax.annotate(r["threshold"] + "n", (x, y), fontsize=9, xytext=(5, 4),
                        textcoords="offset points")
        ax.set_title(w, fontsize=10)
        ax.set_xlabel("mean cached MiB")
        ax.set_ylabel("mean slow-path calls")
    fig.suptitle("Figure 4: return threshold trade-off (clip, 256 KiB, 1024)")
    save(fig, out, "fig4_threshold_tradeoff.png")


def main():
    if len(sys.argv) != 2:
        sys.stderr.write("usage: figures.py DIR\n")
        return 2
    out = sys.argv[1]
    geo = read(os.path.join(out, "bucket_geometry.csv"))
    summary = read(os.path.join(out, "model_summary.csv"))
    paired = read(os.path.join(out, "paired_comparison.csv"))
    fig1(out, geo)
    fig2(out, paired)
    fig3(out, summary)
    fig4(out, summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
