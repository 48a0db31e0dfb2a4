#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# build.sh - configure and build alloy into build/ (Release-with-debug-info),
# or into the folder ALLOY_BUILD_DIR names.  Extra arguments go to cmake's
# configure step, e.g. -DALLOY_WERROR=ON, or -DALLOY_PERCPU=OFF for thread
# caches alone, without per-CPU caches (ALLOY_BUILD_DIR=build-thread
# tools/build.sh -DALLOY_PERCPU=OFF).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${ALLOY_BUILD_DIR:-build}
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build "$dir" -j"$(nproc)"
