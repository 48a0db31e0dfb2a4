#!/usr/bin/env bash
# headline.sh - the README's main job: install what is needed, build alloy,
# and run the short default benchmark comparison (alloy against glibc,
# jemalloc, TCMalloc and mimalloc; under 3 minutes on 2 cores), printing the
# Markdown table of medians and ratios to the best peer.  Raw results and
# charts land in build/bench-results/short/.  Extra arguments go to the runner
# (bench/run.py --help), e.g. --workloads sizes,threads or --reps 5.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
tools/build.sh
exec /usr/bin/python3 bench/run.py --build-dir build --mode short "$@"
