#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# profile-pricer.sh - the allocator's share of the pricer's instructions,
# counted with callgrind (exact and deterministic, unlike timings on a busy
# machine).
#
# For each (malloc, variant) it runs the pricer twice under callgrind:
#   1. everything counted: total instructions (Ir), and Ir per path;
#   2. counting only inside the functions through which the variant gets
#      and gives back its path storage (--toggle-collect on the outermost
#      ones, so nothing is counted twice):
#        baseline  mallocres_allocate / mallocres_deallocate (+ malloc, free)
#        arena     alloy_monotonic_init / monotonic_allocate / alloy_monotonic_destroy
#        pool      poolres_allocate / poolres_deallocate
# and prints the allocator's Ir per path and its share of the total.
#
# usage: examples/profile-pricer.sh [build-dir]   (default: build)
# env:   PATHS (5000)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
paths=${PATHS:-5000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
jemalloc=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
alloy=$PWD/$build/liballoy.so

toggles() {
  case $1 in
    baseline) echo "--toggle-collect=mallocres_allocate --toggle-collect=mallocres_deallocate" ;;
    arena) echo "--toggle-collect=alloy_monotonic_init --toggle-collect=monotonic_allocate --toggle-collect=alloy_monotonic_destroy" ;;
    pool) echo "--toggle-collect=poolres_allocate --toggle-collect=poolres_deallocate" ;;
  esac
}

total_ir() { # the "I refs" summary line of a callgrind run
  grep -E "Collected|I\s+refs" "$1" | tail -1 | grep -oE '[0-9,]+$' | tr -d ,
}

printf '| malloc | variant | Ir per path (all) | Ir per path in the allocator | allocator share |\n'
printf '|---|---|---|---|---|\n'
for cfg in glibc:baseline glibc:arena glibc:pool jemalloc:baseline alloy:baseline; do
  lib=${cfg%%:*} variant=${cfg#*:}
  case $lib in glibc) pre="" ;; jemalloc) pre=$jemalloc ;; alloy) pre=$alloy ;; esac
  LD_PRELOAD=$pre valgrind --tool=callgrind --callgrind-out-file="$tmp/all.out" \
    "$build/pricer" --paths "$paths" --variant "$variant" >/dev/null 2>"$tmp/all.log"
  # shellcheck disable=SC2046
  LD_PRELOAD=$pre valgrind --tool=callgrind --collect-atstart=no $(toggles "$variant") \
    --callgrind-out-file="$tmp/alloc.out" \
    "$build/pricer" --paths "$paths" --variant "$variant" >/dev/null 2>"$tmp/alloc.log"
  all=$(total_ir "$tmp/all.log")
  alloc=$(total_ir "$tmp/alloc.log")
  awk -v lib="$lib" -v v="$variant" -v all="$all" -v al="$alloc" -v n="$paths" \
    'BEGIN { printf "| %s | %s | %.0f | %.0f | %.2f%% |\n", lib, v, all / n, al / n, 100 * al / all }'
done
