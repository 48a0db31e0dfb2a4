#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# run-pricer.sh - time seed 000's pricer under the global mallocs, interleaved.
#
# Each round runs one pricer process per malloc (glibc, jemalloc, alloy via
# LD_PRELOAD), always in that order (A B C A B C ...); each process runs the
# baseline, arena and pool variants once, in that order.  The summary gives,
# per malloc and variant, the median wall time with min and max, the arena's
# speedup over the baseline, and checks that every price printed is the
# same string.
#
# usage: examples/run-pricer.sh [build-dir]     (default: build)
# env:   PATHS (1000000), ROUNDS (5), OUT (file for the raw lines)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
paths=${PATHS:-1000000}
rounds=${ROUNDS:-5}
out=${OUT:-$build/pricer-runs.txt}
jemalloc=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
names=(glibc jemalloc alloy)
preload=("" "$jemalloc" "$PWD/$build/liballoy.so")
for i in "${!names[@]}"; do
  if [ -n "${preload[$i]}" ] && [ ! -e "${preload[$i]}" ]; then
    echo "run-pricer: ${preload[$i]} missing; skipping ${names[$i]}" >&2
    preload[$i]=MISSING
  fi
done
: >"$out"
for ((r = 1; r <= rounds; r++)); do
  for i in "${!names[@]}"; do
    [ "${preload[$i]}" = MISSING ] && continue
    LD_PRELOAD="${preload[$i]}" "$build/pricer" --paths "$paths" --runs 1 |
      grep '^run ' | sed "s/^/${names[$i]} round $r /" >>"$out"
  done
done
python3 - "$out" <<'PY'
import statistics, sys
rows, cpus = {}, {}
prices = set()
for line in open(sys.argv[1]):
    f = line.split()  # lib round R run 1 variant price P time T s cpu C s
    lib, variant, price = f[0], f[5], f[7]
    rows.setdefault((lib, variant), []).append(float(f[9]))
    cpus.setdefault((lib, variant), []).append(float(f[12]))
    prices.add(price)
libs = [l for l in ("glibc", "jemalloc", "alloy") if any(k[0] == l for k in rows)]
print("| malloc | variant | wall median s | wall min–max s | CPU median s | CPU min–max s | runs |")
print("|---|---|---|---|---|---|---|")
med, cmed = {}, {}
for lib in libs:
    for v in ("baseline", "arena", "pool"):
        ts, cs = rows.get((lib, v)), cpus.get((lib, v))
        if not ts:
            continue
        med[lib, v], cmed[lib, v] = statistics.median(ts), statistics.median(cs)
        print(f"| {lib} | {v} | {med[lib, v]:.3f} | {min(ts):.3f}–{max(ts):.3f} "
              f"| {cmed[lib, v]:.3f} | {min(cs):.3f}–{max(cs):.3f} | {len(ts)} |")
print()
for name, m in (("wall", med), ("CPU", cmed)):
    for lib in libs:
        b, a, p = m.get((lib, "baseline")), m.get((lib, "arena")), m.get((lib, "pool"))
        if b and a and p:
            print(f"{name}, {lib}: arena speedup over baseline {b / a:.3f}x "
                  f"({100 * (1 - a / b):.1f}% less time); pool {b / p:.3f}x")
    if ("glibc", "baseline") in m:
        for lib in libs[1:]:
            print(f"{name}: baseline under glibc / under {lib}: "
                  f"{m['glibc', 'baseline'] / m[lib, 'baseline']:.3f}x")
print("prices:", ", ".join(sorted(prices)), "(bit-identical)" if len(prices) == 1 else "DIFFER")
sys.exit(0 if len(prices) == 1 else 1)
PY
