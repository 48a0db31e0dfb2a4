# SPDX-License-Identifier: MIT
"""charts.py - the runner's PNG charts, drawn with matplotlib (Debian's
python3-matplotlib): ns/op by size, throughput against threads, and RSS over
time (against progress through the run) for the mixed and fragmentation
workloads, with the live bytes the program holds, and against seconds since
the free for the free-then-idle workload.  Medians are drawn with
min-max bars.  Raises ImportError when matplotlib is missing; run.py reports
that and carries on without charts.
"""
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLORS = {"glibc": "#7f7f7f", "jemalloc": "#1f77b4", "tcmalloc": "#2ca02c",
          "mimalloc": "#ff7f0e", "mimalloc3": "#8c564b", "snmalloc": "#9467bd",
          "rpmalloc": "#17becf", "alloy": "#d62728"}
# RSS-over-time panels, in order: (workload, case); those not measured are left out
RSS_PANELS = [("mixed", "mixed"), ("mixed", "small"), ("mixed", "mixed_512k"), ("frag", "frag"),
              ("frag", "reuse90"), ("idle", "free_90"), ("idle", "free_100")]
TIMED_PANELS = {"idle"}     # x axis in seconds, not progress: the idle is a span of time


def _num(case):
    return int(case.rsplit("_", 1)[1])


def _pick(rows, workload, metric):
    return [r for r in rows if r["workload"] == workload and r["metric"] == metric]


def sizes_chart(rows, names, path):
    rs = sorted(_pick(rows, "sizes", "ns_per_op"), key=lambda r: _num(r["case"]))
    if not rs:
        return False
    fig, ax = plt.subplots(figsize=(8, 4.5))
    width = 0.8 / max(1, len(names))
    for i, n in enumerate(names):
        xs, ys, lo, hi = [], [], [], []
        for j, r in enumerate(rs):
            s = r["stats"].get(n)
            if s:
                xs.append(j + (i - (len(names) - 1) / 2) * width)
                ys.append(s[0])
                lo.append(s[0] - s[1])
                hi.append(s[2] - s[0])
        ax.bar(xs, ys, width, yerr=[lo, hi], label=n, color=COLORS.get(n), capsize=2)
    ax.set_xticks(range(len(rs)))
    ax.set_xticklabels(["%d B" % _num(r["case"]) for r in rs])
    ax.set_ylabel("ns per malloc+free pair (median, min-max)")
    ax.set_title("Single-threaded malloc/free pairs by size (bench_sizes)")
    ax.legend()
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


def threads_chart(rows, names, path):
    rs = sorted(_pick(rows, "threads", "mops_per_s"), key=lambda r: _num(r["case"]))
    if not rs:
        return False
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for n in names:
        pts = [(_num(r["case"]), r["stats"][n]) for r in rs if n in r["stats"]]
        if not pts:
            continue
        xs = [p[0] for p in pts]
        ys = [p[1][0] for p in pts]
        err = [[p[1][0] - p[1][1] for p in pts], [p[1][2] - p[1][0] for p in pts]]
        ax.errorbar(xs, ys, yerr=err, marker="o", label=n, color=COLORS.get(n), capsize=3)
    ax.set_xscale("log", base=2)
    ax.set_xticks([_num(r["case"]) for r in rs])
    ax.set_xticklabels([str(_num(r["case"])) for r in rs])
    ax.set_xlabel("threads (this machine has %d CPUs)" % os.cpu_count())
    ax.set_ylabel("M malloc+free pairs per second")
    ax.set_title("64-byte pairs across threads (bench_threads)")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


def rss_chart(series, names, path):
    panels = [(w, c) for (w, c) in RSS_PANELS if any((w, c, n) in series for n in names)]
    if not panels:
        return False
    cols = min(3, len(panels))
    nrows = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(5 * cols, 4.2 * nrows), squeeze=False)
    flat = [ax for row in axes for ax in row]
    for ax in flat[len(panels):]:
        ax.set_visible(False)
    for ax, (w, c) in zip(flat, panels):
        live_drawn = False
        timed = w in TIMED_PANELS
        for n in names:
            s = series.get((w, c, n))
            if not s:
                continue
            # x is progress through the run, not seconds: the allocators run at
            # different speeds, and the live-byte curve is the same for all of
            # them.  The idle panels are the exception: there time is the point.
            if timed:
                t = [p[0] / 1000.0 for p in s]
            else:
                t = [100.0 * i / max(1, len(s) - 1) for i in range(len(s))]
            ax.plot(t, [p[1] / 1048576 for p in s], label=n, color=COLORS.get(n),
                    marker="." if timed else None)
            if not live_drawn:
                ax.plot(t, [p[2] / 1048576 for p in s], "k--", lw=1,
                        label="live bytes (%s run)" % n)
                live_drawn = True
        ax.set_xlabel("seconds since the free began" if timed
                      else "% of the run (operations done)")
        ax.set_ylabel("MiB")
        ax.set_title("RSS over time: %s/%s" % (w, c))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


def make_all(rows, series, names, out_dir):
    made = []
    for fname, ok in (("ns_by_size.png", sizes_chart(rows, names, os.path.join(out_dir, "ns_by_size.png"))),
                      ("threads.png", threads_chart(rows, names, os.path.join(out_dir, "threads.png"))),
                      ("rss_over_time.png", rss_chart(series, names, os.path.join(out_dir, "rss_over_time.png")))):
        if ok:
            made.append(os.path.join(out_dir, fname))
    return made
