#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# profile-pmr.sh - instructions per path and per request of build/pricer_pmr
# and build/pmr_bench, for every variant, counted with callgrind (exact and
# deterministic, unlike timings on a busy machine).
#
# Each count is marginal: the difference between a run of N2 and one of N1
# paths (or requests), divided by N2 - N1, so start-up and the one-off cost
# of making a pool are left out.  Every variant runs the same kernel on the
# same random numbers, so the difference between two variants is the
# difference in what their memory resources cost.
#
# usage: examples/profile-pmr.sh [build-dir]      (default: build)
# env:   PATHS1 PATHS2 (1000 5000), REQ1 REQ2 (4 20)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
p1=${PATHS1:-1000} p2=${PATHS2:-5000}
r1=${REQ1:-4} r2=${REQ2:-20}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ir() { # Ir of one callgrind run of "$@"
  valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" "$@" >/dev/null 2>"$tmp/cg.log"
  grep -E "Collected" "$tmp/cg.log" | tail -1 | grep -oE '[0-9,]+$' | tr -d ,
}

marginal() { # name n1 n2 cmd-with-@N@ ...
  local n1=$2 n2=$3
  shift 3
  local a b
  a=$(ir "${@//@N@/$n1}")
  b=$(ir "${@//@N@/$n2}")
  awk -v a="$a" -v b="$b" -v n1="$n1" -v n2="$n2" 'BEGIN { printf "%.0f", (b - a) / (n2 - n1) }'
}

echo "pricer_pmr: instructions per path (marginal, $p1 -> $p2 paths)"
echo "| variant | Ir per path |"
echo "|---|---|"
for v in baseline arena std-arena pool std-pool sync-pool std-sync-pool; do
  echo "| $v | $(marginal "$v" "$p1" "$p2" "$build/pricer_pmr" --paths @N@ --variant "$v") |"
done
echo
echo "pmr_bench: instructions per request (marginal, $r1 -> $r2 requests)"
echo "| variant | Ir per request |"
echo "|---|---|"
for v in new-delete arena std-arena arena-reset pool std-pool sync-pool std-sync-pool; do
  echo "| $v | $(marginal "$v" "$r1" "$r2" "$build/pmr_bench" --rounds 1 --requests @N@ --variant "$v") |"
done
