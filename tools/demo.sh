#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# demo.sh - run a real program (python3 building and serialising a large
# dictionary, with threads) on alloy through LD_PRELOAD, and print alloy's
# statistics at exit.
set -euo pipefail
cd "$(dirname "$0")/.."
lib="$PWD/build/liballoy.so"
[ -f "$lib" ] || { echo "demo: $lib is missing; run tools/build.sh first" >&2; exit 1; }
ALLOY_CONF=stats_print:true LD_PRELOAD="$lib" /usr/bin/python3 - <<'PY'
import json, threading
d = {i: str(i) * 10 for i in range(200000)}
def work():
    [bytearray(i % 5000) for i in range(20000)]
ts = [threading.Thread(target=work) for _ in range(4)]
for t in ts: t.start()
for t in ts: t.join()
print("python3 on alloy: serialised", len(json.dumps(d)), "bytes")
PY
