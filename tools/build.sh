#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# build.sh - configure and build alloy into build/ (Release-with-debug-info).
# Extra arguments go to cmake's configure step, e.g. -DALLOY_WERROR=ON.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build build -j"$(nproc)"
