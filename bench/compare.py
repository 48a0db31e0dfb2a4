#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""compare.py - builds of alloy against each other, from one run of run.py.

    bench/compare.py OUT_DIR [OUT_DIR...] [--base NAME] [--rows]

OUT_DIR is a run.py output directory (its results.json) in which several
builds ran interleaved, named with --allocators NAME=/path/liballoy.so.
For every allocator but the base, it prints the geometric mean, over the
time rows (the rows run.py's verdicts use: time per operation, or per run),
of that allocator's median over the base's: 1.05 means 5% slower.  --rows
also prints every row's ratio.  The same medians, so the same noise: run
interleaved, and repeat a run when a figure is close to a bound.  Given
several directories (repeated runs with the same allocators), each row's
median is taken over the runs of all of them, pooled.

Example (how the hardening's cost was measured, docs/HARDENING.md):
    bench/run.py --mode short --no-charts --out out/cmp \\
        --allocators base=../main/build/liballoy.so,alloy,secure=build/liballoy_secure.so
    bench/compare.py out/cmp --base base
"""
import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchstats as bs  # noqa: E402


def pooled(rows, loaded):
    """The rows again, each allocator's median taken over the good runs of
    every directory."""
    values = {}  # (workload, case, metric, allocator) -> [value]
    for results in loaded:
        for run in results["runs"]:
            if run.get("status") != "ok":
                continue
            for case, metrics in (run.get("results") or {}).items():
                for metric, v in metrics.items():
                    key = (run["workload"], case, metric, run["allocator"])
                    values.setdefault(key, []).append(v)
    out = []
    for r in rows:
        stats = {}
        for a in r["stats"]:
            vs = values.get((r["workload"], r["case"], r["metric"], a))
            if vs:
                stats[a] = [bs.median(vs), min(vs), max(vs), len(vs)]
        out.append(dict(r, stats=stats))
    return out


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out", nargs="+", help="run.py output directories (each holds results.json)")
    p.add_argument("--base", default="base", help="the allocator the others are divided by")
    p.add_argument("--rows", action="store_true", help="print every row's ratio too")
    args = p.parse_args(argv)
    loaded = []
    for d in args.out:
        with open(os.path.join(d, "results.json"), encoding="utf-8") as f:
            loaded.append(json.load(f))
    rows = [r for r in loaded[0]["summary"] if r.get("verdict") == "time"]
    if len(loaded) > 1:
        rows = pooled(rows, loaded)
    names = []
    for r in rows:
        for a in r["stats"]:
            if a not in names:
                names.append(a)
    if args.base not in names:
        print("compare.py: no allocator %r in %s (have: %s)" % (args.base, " ".join(args.out),
                                                                 ", ".join(names)),
              file=sys.stderr)
        return 2
    higher_better = {m for m, spec in bs.METRICS.items() if not spec[2]}
    for a in names:
        if a == args.base:
            continue
        ratios = []
        for r in rows:
            mine, base = r["stats"].get(a), r["stats"].get(args.base)
            if not mine or not base or mine[0] <= 0 or base[0] <= 0:
                continue
            x = base[0] / mine[0] if r["metric"] in higher_better else mine[0] / base[0]
            ratios.append((r, x))
        if not ratios:
            print("%s: no time row shared with %s" % (a, args.base))
            continue
        g = math.exp(sum(math.log(x) for _, x in ratios) / len(ratios))
        print("%s / %s: geomean %.3f over %d time rows (%+.1f%%)" % (a, args.base, g, len(ratios),
                                                                   (g - 1) * 100))
        if args.rows:
            for r, x in ratios:
                print("    %-12s %-18s %-14s %.3f" % (r["workload"], r["case"], r["metric"], x))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
