#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# cli.sh - alloy-sim's command line: bad input is rejected before any work
# with a clear message, a broken run names its seed and configuration and
# can be replayed, and the single-run and geometry commands print what they
# promise.  Usage: cli.sh ALLOY_SIM TMPDIR
set -u
sim=$1
tmp=$2
rm -rf "$tmp" && mkdir -p "$tmp"
fails=0

# expect STATUS PATTERN CMD... : CMD exits with STATUS and its stderr matches PATTERN
expect() {
    local want=$1 pat=$2
    shift 2
    "$@" >"$tmp/out" 2>"$tmp/err"
    local got=$?
    if [ "$got" != "$want" ] || ! grep -qE -- "$pat" "$tmp/err"; then
        echo "FAIL: $* -> status $got (want $want), stderr:" >&2
        cat "$tmp/err" >&2
        fails=$((fails + 1))
    fi
}

small=(--seeds 1 --warmup 0 --ops 3000 --no-figures --no-progress)
expect 2 "usage" "$sim"
expect 2 "unknown command 'swep'" "$sim" swep --out "$tmp/o"
expect 2 "unknown workload 'nope'" "$sim" sweep --out "$tmp/o" --workloads uniform_class,nope
expect 2 "bad policy.*'fast'" "$sim" sweep --out "$tmp/o" --policy clip,fast
expect 2 "unknown option '--frobnicate'" "$sim" sweep --out "$tmp/o" --frobnicate 1
expect 2 "bad threshold.*'2.25'" "$sim" sweep --out "$tmp/o" --threshold 2,2.25
expect 2 "bad budget.*'0'" "$sim" sweep --out "$tmp/o" --budget 0
expect 2 "malformed cap.* list" "$sim" sweep --out "$tmp/o" --cap 1,,2
expect 2 "bad budget.*'64K'" "$sim" sweep --out "$tmp/o" --budget 64K,64K
expect 2 "empty policy.* list" "$sim" sweep --out "$tmp/o" --policy ""
expect 2 "--seeds wants an integer" "$sim" sweep --out "$tmp/o" --seeds ten
expect 2 "needs a value" "$sim" sweep --out "$tmp/o" --seeds
expect 2 "needs --out" "$sim" sweep --seeds 1
expect 2 "run needs --workload" "$sim" run --policy clip
expect 2 "one value per knob" "$sim" run --workload sat384 --policy clip,guard

# an output directory that cannot be written fails before any work starts
touch "$tmp/afile"
expect 2 "cannot create output directory" "$sim" sweep --out "$tmp/afile/sub" "${small[@]}"
expect 2 "not a directory|cannot create" "$sim" sweep --out "$tmp/afile" "${small[@]}"
expect 2 "cannot create output directory" "$sim" geometry --out /proc/alloy-sim-no-such-dir
[ -e "$tmp/afile/sub" ] && { echo "FAIL: wrote under a file" >&2; fails=$((fails + 1)); }

# a run that breaks conservation names workload, config and seed, and replays
expect 1 "workload=uniform_class config=guard/k2/b262144/c1024 seed=1: conservation violated" \
    "$sim" sweep --out "$tmp/fault" "${small[@]}" --workloads uniform_class --policy guard \
    --threshold 2 --budget 256K --cap 1024 --fault-at 1500
replay=$(sed -n 's/^  replay with: alloy-sim //p' "$tmp/err")
if [ -z "$replay" ]; then
    echo "FAIL: no replay command" >&2
    fails=$((fails + 1))
else
    # shellcheck disable=SC2086
    expect 1 "conservation violated after op 2000" "$sim" $replay --fault-at 1500
    # shellcheck disable=SC2086
    "$sim" $replay >"$tmp/replay.csv" 2>"$tmp/err" ||
        { echo "FAIL: clean replay failed" >&2; fails=$((fails + 1)); }
fi
[ -e "$tmp/fault/model_runs.csv" ] && { echo "FAIL: wrote CSVs after a failed run" >&2; fails=$((fails + 1)); }

# run: a header and one row, nothing on stderr
"$sim" run --workload sat384 --policy guard --seed 3 --ops 20000 >"$tmp/run.csv" 2>"$tmp/err"
if [ "$(wc -l <"$tmp/run.csv")" != 2 ] || [ -s "$tmp/err" ] ||
    ! grep -q '^sat384,guard/k2/b262144/c1024,guard,2,262144,1024,3,' "$tmp/run.csv"; then
    echo "FAIL: run output" >&2
    cat "$tmp/run.csv" "$tmp/err" >&2
    fails=$((fails + 1))
fi

# progress goes to stderr only when it is a terminal: none here
"$sim" sweep --out "$tmp/quiet" --policy clip --threshold 2 --budget 256K --cap 1024 \
    --workloads sat384 --seeds 2 --ops 2000 --no-figures 2>"$tmp/err" >"$tmp/out"
if grep -q $'\r' "$tmp/err" || [ -s "$tmp/out" ] || [ "$(wc -l <"$tmp/err")" != 1 ]; then
    echo "FAIL: progress or noise without a terminal" >&2
    fails=$((fails + 1))
fi

# geometry: the paper's counts and one row per class
"$sim" geometry --out "$tmp/geo" >"$tmp/geo.txt" 2>"$tmp/err"
if ! grep -q "clip=80 guard=0 pow2=0" "$tmp/geo.txt" ||
    [ "$(wc -l <"$tmp/geo/bucket_geometry.csv")" != 209 ] ||
    [ "$(awk -F, 'NR > 1 && $8 == 1' "$tmp/geo/bucket_geometry.csv" | wc -l)" != 80 ]; then
    echo "FAIL: geometry" >&2
    cat "$tmp/geo.txt" >&2
    fails=$((fails + 1))
fi

echo "cli.sh: $fails failure(s)"
[ "$fails" = 0 ]
