#!/usr/bin/env bash
# headline.sh - the README's main job: install what is needed, build alloy
# (liballoy.so) and the benchmark's workload programs into build/, and run the
# short default comparison: alloy against glibc, jemalloc, TCMalloc and
# mimalloc, 5 interleaved runs of each workload (about 2 minutes on 2 cores).
# It prints the Markdown table of medians (min-max) and alloy's ratio to the
# best peer, with issue 3's targets.  Raw results and charts land in
# build/bench-results/short/.  Extra arguments go to the runner (see
# bench/run.py --help), e.g. --workloads sizes,threads or --reps 3.
# tools/build.sh builds everything (tests too); this builds only what the
# comparison needs, to stay well under 3 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" --target alloy bench_programs >/dev/null
exec /usr/bin/python3 bench/run.py --build-dir build --mode short "$@"
