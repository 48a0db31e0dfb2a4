#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# timeline-cost.sh - what the timeline and the live snapshot cost on the
# benchmark suite's time rows (docs/OBSERVING.md, "What it costs").
#
#   tools/timeline-cost.sh [ROUNDS] [OUT]      (default 8 rounds, out/timeline-cost)
#
# One copy of build/liballoy.so runs under four names, interleaved in each
# round of `bench/run.py --mode short`: base and same (the same settings: an
# A/A pair, whose ratio is the noise), tl (timeline_file:...,timeline_ms:100)
# and live (stats_shm:true,timeline_ms:100).  base and same get an
# ALLOY_CONF as long as tl's that changes nothing (prof_prefix without prof),
# because the environment's size moves the stack and, by itself, timings by
# a few percent.  The order of the four turns from round to round.  At the
# end bench/compare.py pools the runs of every round: each row's median over
# all of them, and the geometric mean of the ratios over the time rows.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-8}
out=${2:-out/timeline-cost}
mkdir -p "$out"
lib=$(realpath "$out")/liballoy.so
cp build/liballoy.so.0 "$lib" # a copy: a rebuild during the rounds changes nothing
files=$(realpath "$out")/files
pad=${files//?/x}             # as long as $files: base's and same's setting is as long as tl's
names=(base same tl live)
dirs=()
for ((r = 0; r < rounds; r++)); do
    order=""
    for ((k = 0; k < 4; k++)); do
        order+="${order:+,}${names[(r + k) % 4]}=$lib"
    done
    rm -rf "$files"
    mkdir -p "$files"
    dir="$out/round-$r"
    dirs+=("$dir")
    echo "timeline-cost: round $((r + 1)) of $rounds ($order)" >&2
    /usr/bin/python3 bench/run.py --build-dir build --mode short --no-charts --quiet --out "$dir" \
        --allocators "$order" \
        --conf-for "base=prof_prefix:$pad/%p.jsonlxx,timeline_ms:100" \
        --conf-for "same=prof_prefix:$pad/%p.jsonlxx,timeline_ms:100" \
        --conf-for "tl=timeline_file:$files/%p.jsonl,timeline_ms:100" \
        --conf-for "live=stats_shm:true,timeline_ms:100" >/dev/null
done
rm -rf "$files"
/usr/bin/python3 bench/compare.py "${dirs[@]}" --base base
/usr/bin/python3 bench/compare.py "${dirs[@]}" --base same | grep -v '^base'
