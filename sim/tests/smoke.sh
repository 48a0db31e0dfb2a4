#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# smoke.sh - the CI smoke sweep: a reduced grid (3 policies x 2 thresholds at
# the default budget and cap), 5 workloads, 2 seeds, run with 1 and with 2
# workers.  The CSVs must be byte-identical, have the right shapes, show the
# paper's qualitative result (guard == clip on the ordinary workloads, fewer
# slow-path calls on sat384), and the manifest must verify.
# Usage: smoke.sh ALLOY_SIM TMPDIR
set -u
sim=$1
tmp=$2
rm -rf "$tmp" && mkdir -p "$tmp"
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

grid=(--policy clip,guard,pow2 --threshold 1.5,2 --budget 256K --cap 1024 --seeds 2 --no-progress)
"$sim" sweep --out "$tmp/j1" "${grid[@]}" --jobs 1 --no-figures 2>"$tmp/err1" || fail "sweep -j1: $(cat "$tmp/err1")"
"$sim" sweep --out "$tmp/j2" "${grid[@]}" --jobs 2 2>"$tmp/err2" || fail "sweep -j2: $(cat "$tmp/err2")"

for f in bucket_geometry.csv model_runs.csv model_summary.csv paired_comparison.csv; do
    cmp -s "$tmp/j1/$f" "$tmp/j2/$f" || fail "$f differs between 1 and 2 workers"
done
# 6 configurations x 5 workloads x 2 seeds
[ "$(wc -l <"$tmp/j1/model_runs.csv")" = 61 ] || fail "model_runs.csv rows"
[ "$(wc -l <"$tmp/j1/model_summary.csv")" = 31 ] || fail "model_summary.csv rows"
# (guard, pow2) vs clip at 2 thresholds + 1.5 vs 2 for 3 policies = 7 pairs x 6 metrics x 5 workloads
[ "$(wc -l <"$tmp/j1/paired_comparison.csv")" = 211 ] || fail "paired_comparison.csv rows"
# pairing: every configuration replayed the same trace for a (workload, seed)
[ "$(awk -F, 'NR > 1 { print $1, $7, $NF }' "$tmp/j1/model_runs.csv" | sort -u | wc -l)" = 10 ] ||
    fail "trace hashes differ across configurations"
# guard vs clip at 2n: zero change on the three ordinary workloads, a cut on sat384
awk -F, '$1 == "guard_vs_clip" && $2 ~ /k2\// && $5 == "slow_path_calls"' \
    "$tmp/j1/paired_comparison.csv" >"$tmp/g.csv"
for w in uniform_raw uniform_class hotspot; do
    grep -q "^guard_vs_clip,[^,]*,[^,]*,$w,slow_path_calls,2,[^,]*,[^,]*,0," "$tmp/g.csv" ||
        fail "guard changed $w"
done
awk -F, '$4 == "sat384" && $12 < -50 { ok = 1 } END { exit !ok }' "$tmp/g.csv" ||
    fail "guard did not cut sat384 slow-path calls by half"
(cd "$tmp/j2" && sha256sum -c --quiet manifest.sha256) || fail "manifest does not verify"
if /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
    for i in 1 2 3 4; do
        ls "$tmp/j2"/fig${i}_*.png >/dev/null 2>&1 || fail "figure $i missing"
    done
    grep -q "fig1_" "$tmp/j2/manifest.sha256" || fail "figures not in the manifest"
fi
echo "smoke.sh: $fails failure(s)"
[ "$fails" = 0 ]
