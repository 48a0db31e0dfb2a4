#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test.sh - the README's test command: install what the tests need, build
# alloy with warnings as errors, and run every test with ctest; then build
# and run the sanitizer flavours (tools/sanitize.sh: ThreadSanitizer on the
# threaded tests, AddressSanitizer and UBSan on the rest).  Then every test
# again on a build with per-CPU caches (build-percpu/, -DALLOY_PERCPU=ON).
# Arguments go to the main ctest run (e.g. -R stats), and then skip the
# per-CPU build and the sanitizer flavours.
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
  # once more on a build with per-CPU caches, which run where they can
  # (its default percpu:auto; tests that set ALLOY_CONF keep its default)
  step build-percpu env ALLOY_BUILD_DIR=build-percpu tools/build.sh -DALLOY_WERROR=ON \
    -DALLOY_PERCPU=ON
  step ctest-percpu ctest --test-dir build-percpu --output-on-failure -j"$(nproc)"
fi
echo "test.sh: took ${took[*]/%/,} in all $((SECONDS / 60)):$(printf %02d $((SECONDS % 60)))" >&2
