#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# prof-cost.sh - what heap profiling costs (docs/PROFILING.md):
#  1. instructions per malloc+free pair, counted by callgrind as
#     fastpath-instructions.sh counts them (the difference between runs of
#     1.1 M and 0.1 M pairs, less the loop's own 10), for 64- and 4096-byte
#     pairs, with liballoy.so (profiling compiled in, off) and
#     liballoy_prof.so (the same library with prof:true, the default rate);
#  2. with --suite, the benchmark suite in short mode with the two
#     interleaved, and the geometric mean of profiling-on over profiling-off
#     across its time and throughput metrics (medians; the CPU-timed
#     workloads, which load on the machine disturbs least, also alone).
# Usage: prof-cost.sh [build dir] [--suite]
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(cd "${1:-build}" && pwd)
suite=${2:-}
[ -f "$build/liballoy_prof.so" ] || cmake --build "$build" --target alloy_prof >/dev/null
for size in 64 4096; do
  for lib in liballoy.so liballoy_prof.so; do
    printf '%-17s %4s-byte pairs: %s instructions per pair\n' "$lib" "$size" \
      "$(tools/pair-instructions.sh "$build/$lib" "$size")"
  done
done
[ "$suite" = --suite ] || exit 0
out=$build/bench-results/prof-cost
python3 bench/run.py --build-dir "$build" --mode short --no-charts --quiet --out "$out" \
  --allocators "alloy,alloy-prof=$build/liballoy_prof.so"
python3 - "$out/summary.md" <<'PY'
import math, re, sys
rows = []
for line in open(sys.argv[1]):
    if line.startswith('### Details'):
        break
    m = re.match(r'\| (\w+) \| (\S+) \| (per op \(ns\)|time \(m?s\)|throughput \(M ops/s\) ↑) \| '
                 r'([\d.]+) \(.*?\) \| ([\d.]+) \(', line)
    if m:
        wl, case, metric, off, on = m.groups()
        r = float(on) / float(off) if 'throughput' not in metric else float(off) / float(on)
        rows.append((wl, case, r))
def geo(v):
    return math.exp(sum(math.log(x) for x in v) / len(v))
cpu = [r for wl, _, r in rows if wl in ('sizes', 'frag', 'realloc', 'large')]
for wl, case, r in rows:
    print(f'{wl:12} {case:18} on/off {r:.3f}')
print(f'geomean on/off over {len(rows)} metrics: {geo([r for *_, r in rows]):.3f}; '
      f'CPU-timed workloads ({len(cpu)}): {geo(cpu):.3f}')
PY
