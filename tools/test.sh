#!/usr/bin/env bash
# test.sh - the README's test command: install what the tests need, build
# alloy with warnings as errors, and run every test with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
tools/build.sh -DALLOY_WERROR=ON
ctest --test-dir build --output-on-failure -j"$(nproc)" "$@"
