#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test.sh - the README's test command: install what the tests need, build
# alloy with warnings as errors, and run every test with ctest; then build
# and run the sanitizer flavours (tools/sanitize.sh: ThreadSanitizer on the
# threaded tests, AddressSanitizer and UBSan on the rest).  Then every test
# again on a build with thread caches alone (build-thread/,
# -DALLOY_PERCPU=OFF), the first tier of the default build's fallback.
# Arguments go to the main ctest run (e.g. -R stats), and then skip the
# thread-cache build and the sanitizer flavours.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each step's time goes to stderr at the end ("test.sh: ... took M:SS").
took=()
step() { # step NAME COMMAND...: run it, note its time
  local name=$1 t0=$SECONDS
  shift
  "$@"
  took+=("$name $(((SECONDS - t0) / 60)):$(printf %02d $(((SECONDS - t0) % 60)))")
}
step deps tools/install-deps.sh
step build tools/build.sh -DALLOY_WERROR=ON
step ctest ctest --test-dir build --output-on-failure -j"$(nproc)" "$@"
if [ $# -eq 0 ]; then
  step sanitizers tools/sanitize.sh
  # once more on a build with thread caches alone, which has no test of the
  # mode on its fast paths (the instruction counts of its pair are checked
  # there)
  step build-thread env ALLOY_BUILD_DIR=build-thread tools/build.sh -DALLOY_WERROR=ON \
    -DALLOY_PERCPU=OFF
  step ctest-thread ctest --test-dir build-thread --output-on-failure -j"$(nproc)"
fi
echo "test.sh: took ${took[*]/%/,} in all $((SECONDS / 60)):$(printf %02d $((SECONDS % 60)))" >&2
