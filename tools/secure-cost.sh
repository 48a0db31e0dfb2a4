#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# secure-cost.sh - what the secure flavour and each of its parts cost
# (docs/HARDENING.md, "What it costs"):
#  1. builds the secure flavour with one part off at a time, into
#     BUILD/secure-cost/NAME (cmake with CMAKE_C_FLAGS): norandom
#     (-DAY_SECURE_RANDOM=0), noguards (-DAY_SECURE_GUARDS=0), and
#     checksonly (both off: the checks on every free and the checked copies
#     are what is left); the secure library itself runs twice more, with
#     settings: secure-quarantine (ALLOY_CONF=quarantine:QUARANTINE, 128k
#     unless the variable QUARANTINE says otherwise) and secure-tags
#     (secure_tags:true);
#  2. prints instructions per malloc+free pair of 64, 48 and 4096 bytes for
#     the release library, the secure one and each variant, counted by
#     callgrind as fastpath-instructions.sh counts them (the difference
#     between runs of 1.1 M and 0.1 M pairs, less the loop's own 10; exact
#     figures, not truncated), and per never-used 64-byte block, with its
#     free (fresh-instructions.sh: what carving and the random order cost);
#  3. with --suite [REPS], runs the benchmark suite in short mode with all of
#     them interleaved (REPS runs each, default 5) into BUILD/secure-cost/suite,
#     and prints each one's geometric mean of time over the release library
#     (bench/compare.py) and its peak RSS over the release library's
#     (geometric mean over the rows that report one).
# Usage: secure-cost.sh [build dir] [--suite [REPS]]
set -euo pipefail
cd "$(dirname "$0")/.."
src=$(pwd)
build=$(cd "${1:-build}" && pwd)
suite=${2:-}
reps=${3:-5}
out=$build/secure-cost
mkdir -p "$out"
variants=("norandom:-DAY_SECURE_RANDOM=0" "noguards:-DAY_SECURE_GUARDS=0"
          "checksonly:-DAY_SECURE_RANDOM=0 -DAY_SECURE_GUARDS=0")
libs=("release=$build/liballoy.so" "secure=$build/liballoy_secure.so"
      "secure-quarantine=$build/liballoy_secure.so" "secure-tags=$build/liballoy_secure.so")
# the settings of the runs that have some (the others run without ALLOY_CONF)
declare -A conf=([secure-quarantine]="quarantine:${QUARANTINE:-128k}" [secure-tags]="secure_tags:true")
for v in "${variants[@]}"; do
    name=${v%%:*} flags=${v#*:}
    cmake -S "$src" -B "$out/$name" -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_C_FLAGS=$flags" \
        >/dev/null
    cmake --build "$out/$name" --target alloy_secure -j"$(nproc)" >/dev/null
    libs+=("secure-$name=$out/$name/liballoy_secure.so")
done
if command -v valgrind >/dev/null; then
    for entry in "${libs[@]}"; do
        name=${entry%%=*} lib=${entry#*=}
        line="$name:"
        for size in 64 48 4096; do
            line+=" $(ALLOY_CONF=${conf[$name]:-} tools/pair-instructions.sh "$lib" "$size") ($size B)"
        done
        echo "$line instructions per malloc+free pair;" \
            "$(ALLOY_CONF=${conf[$name]:-} tools/fresh-instructions.sh "$build" "$lib" 64)" \
            "per fresh 64-byte block"
    done
else
    echo "secure-cost.sh: no valgrind: no instruction counts"
fi
[ "$suite" = --suite ] || exit 0
list=$(
    IFS=,
    echo "${libs[*]}"
)
conf_for=()
for name in "${!conf[@]}"; do
    conf_for+=(--conf-for "$name=${conf[$name]}")
done
bench/run.py --build-dir "$build" --mode short --reps "$reps" --no-charts --quiet \
    --out "$out/suite" --allocators "$list" "${conf_for[@]}" || true
bench/compare.py "$out/suite" --base release
/usr/bin/python3 - "$out/suite/results.json" <<'PY'
import json, math, sys
# results.json's summary: one row per (workload, case, metric), with each
# allocator's [median, min, max, runs]
rows = [r for r in json.load(open(sys.argv[1]))["summary"] if r["metric"] == "peak_rss"]
names = sorted({n for r in rows for n in r["stats"]} - {"release"})
for n in names:
    logs = [math.log(r["stats"][n][0] / r["stats"]["release"][0]) for r in rows
            if r["stats"].get(n) and r["stats"].get("release") and r["stats"]["release"][0] > 0]
    if logs:
        print("%s: peak RSS %.3fx release (geometric mean of %d rows)"
              % (n, math.exp(sum(logs) / len(logs)), len(logs)))
PY
