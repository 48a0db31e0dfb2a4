#!/usr/bin/env bash
# bench.sh - the full benchmark mode: builds alloy, then reproduces seed 001's
# tables (§5.1 sizes, §5.2 threads, §5.3 fragmentation) and seed 004's
# comparison (malloc_test 100 1000000 16, the web-service mix) at full scale,
# plus the cross-thread and realloc workloads, 5 interleaved runs each.
# Takes tens of minutes on 2 cores; progress shows on stderr when it is a
# terminal.  Results: build/bench-results/full/ (raw.csv, results.json,
# summary.md, PNG charts).  Extra arguments go to bench/run.py, and a first
# argument naming a mode (smoke, short, full) overrides full.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=full
case "${1:-}" in smoke|short|full) mode=$1; shift ;; esac
tools/install-deps.sh
tools/build.sh
exec /usr/bin/python3 bench/run.py --build-dir build --mode "$mode" "$@"
