#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# install-peers.sh - install the allocators the benchmark suite compares alloy
# against (jemalloc, TCMalloc, mimalloc) and the chart/plot tools, from Debian.
# It simply calls the project's tools/install-deps.sh, which installs only what
# is missing, so it is cheap to run again.
set -euo pipefail
exec "$(dirname "$0")/../tools/install-deps.sh"
