#!/usr/bin/env bash
# validate.sh - the model against the real liballoy: every workload, clip and
# guard, one seed, a shortened trace.  Every counter the model reports
# (slow-path calls, short fetches, objects fetched and released, spans,
# mean cached bytes) must equal the real allocator's for the same trace.
# Usage: validate.sh ALLOY_SIM TMPDIR
set -u
sim=$1
tmp=$2
rm -rf "$tmp" && mkdir -p "$tmp"
"$sim" validate --out "$tmp" --seeds 1 --warmup 10000 --ops 60000 --no-progress || exit 1
rows=$(awk -F, 'NR > 1' "$tmp/validation.csv" | wc -l)
exact=$(awk -F, 'NR > 1 && $NF == 1' "$tmp/validation.csv" | wc -l)
echo "validate.sh: $exact of $rows runs agree exactly"
if [ "$rows" != 10 ] || [ "$exact" != "$rows" ]; then
    column -s, -t "$tmp/validation.csv" >&2
    exit 1
fi
