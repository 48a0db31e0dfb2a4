#!/usr/bin/env bash
# bench.sh - the full benchmark mode: builds alloy and the workload programs,
# then reproduces seed 001's tables (§5.1 sizes, §5.2 threads, §5.3
# fragmentation) and seed 004's comparison (malloc_test 100 1000000 16, the
# web-service mix) at full scale, plus the cross-thread and realloc workloads,
# 5 interleaved runs each: about 20 minutes on 2 cores.  Progress shows on
# stderr when it is a terminal.  Results: build/bench-results/full/ (raw.csv,
# results.json, summary.md, PNG charts).  Extra arguments go to bench/run.py;
# a first argument naming a mode (smoke, short, full) replaces full.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=full
case "${1:-}" in smoke|short|full) mode=$1; shift ;; esac
tools/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" --target alloy bench_programs >/dev/null
exec /usr/bin/python3 bench/run.py --build-dir build --mode "$mode" "$@"
