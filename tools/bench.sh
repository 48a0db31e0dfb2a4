#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench.sh - the full benchmark mode: builds alloy, the workload programs and
# the peers that Debian lacks (mimalloc 3, snmalloc, rpmalloc, built from
# source by bench/build-peers.sh, or $ALLOY_PEERS_SCRIPT, into build/peers),
# then runs every workload against all seven peers (glibc, jemalloc, TCMalloc,
# mimalloc 2 and 3, snmalloc, rpmalloc) at full scale, 5 interleaved runs
# each: the memory-pool text's tables (§5.1 sizes, §5.2 threads, §5.3
# fragmentation), the production allocator comparison's (malloc_test 100
# 1000000 16, the web-service mix; docs/PAPER-REPRODUCTION.md, "Sources"), and the
# cross-thread, realloc, large-block, hand-off, free-then-idle, Larson,
# rptest, C++ and sparse-touch workloads; 25 to 45 minutes on 2 cores (44
# with a ninth library interleaved on 2026-12-01, 29 with ten on 2026-12-03).  A peer that cannot be built is
# reported as MISSING, with the reason, and the run goes on without it.
# Progress shows on stderr when it is a terminal.  Results:
# build/bench-results/MODE/ (raw.csv, results.json, summary.md, PNG charts).
# Extra arguments go to bench/run.py; a first argument naming a mode (smoke,
# short, full) replaces full.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=full
case "${1:-}" in smoke|short|full) mode=$1; shift ;; esac
tools/install-deps.sh
echo "bench.sh: building liballoy.so, the alloy command and the workload programs into build/" \
     "(quiet; the first build takes a minute or more)" >&2
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" --target alloy alloy_cmd bench_programs >/dev/null
script=${ALLOY_PEERS_SCRIPT:-bench/build-peers.sh}
if [ -f "$script" ]; then
  echo "bench.sh: building the peers with $script (once, about 30 s)" >&2
  bash "$script" build/peers >/dev/null ||
    echo "bench.sh: $script did not build every peer; the runner reports the ones it lacks as MISSING" >&2
else
  echo "bench.sh: $script not found (set ALLOY_PEERS_SCRIPT); mimalloc3, snmalloc and" \
       "rpmalloc will be MISSING" >&2
fi
exec /usr/bin/python3 bench/run.py --build-dir build --mode "$mode" "$@"
