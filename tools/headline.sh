#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# headline.sh - the README's main job: install what is needed, build alloy
# (liballoy.so and the alloy command, build/alloy) and the benchmark's
# workload programs into build/, saying so on stderr first, and run the
# short default comparison: alloy against all seven peers, glibc, jemalloc,
# TCMalloc and mimalloc 2 (Debian's) and the strongest ones, mimalloc 3,
# snmalloc and rpmalloc, 3 interleaved runs of each workload (tools/bench.sh
# short runs 5: with all seven peers and fourteen workloads, 5 runs take four
# minutes from a fresh clone, 3 keep it under three).  mimalloc 3, snmalloc and rpmalloc are built from source
# by bench/build-peers.sh ($ALLOY_PEERS_SCRIPT overrides it; the archives come
# from $ALLOY_PEERS_SRC, ../shared/peers beside the repository or a checked
# download) once, into build/peers, and reused by later runs.  A
# peer that cannot be had is reported as MISSING, with the reason, and the
# comparison goes on without it.  It prints the Markdown table
# of medians (min-max) and alloy's ratio to the best peer, with the targets.
# Raw results and charts land in build/bench-results/short/.  Extra arguments
# go to the runner (see bench/run.py --help), e.g. --workloads sizes,threads or
# --reps 3.  tools/build.sh builds everything (tests too); this builds only
# what the comparison needs.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
# The peers build (once) while alloy builds: their configure steps leave a CPU
# free.  The runner calls the script again, which then only prints the paths,
# or reports why it failed.
script=${ALLOY_PEERS_SCRIPT:-bench/build-peers.sh}
peers=""
if [ -f "$script" ]; then
  bash "$script" "$PWD/build/peers" >/dev/null 2>&1 &
  peers=$!
fi
echo "headline.sh: building liballoy.so, the alloy command and the workload programs into build/" \
     "(quiet; the first build takes a minute or more)" >&2
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" --target alloy alloy_cmd bench_programs >/dev/null
[ -z "$peers" ] || wait "$peers" || true
echo "headline.sh: benchmarking, 3 interleaved runs of each workload under each allocator" \
     "(a minute or two on 2 cores; run.py shows its progress on stderr)" >&2
exec /usr/bin/python3 bench/run.py --build-dir build --mode short --reps 3 \
    --allocators glibc,jemalloc,tcmalloc,mimalloc,mimalloc3,snmalloc,rpmalloc,alloy "$@"
