#!/usr/bin/env bash
# headline.sh - the README's main job: build alloy and run the headline
# demonstration at a small default scale.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
tools/build.sh
tools/demo.sh
