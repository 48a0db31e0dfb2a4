#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# percpu-instructions.sh [LIB] - the instructions of a 64-byte malloc+free
# pair on the per-CPU fast paths, counted from the disassembly of LIB
# (default build/liballoy.so; a build with per-CPU caches, not -DALLOY_PERCPU=OFF):
# callgrind cannot count them, as valgrind has no rseq and runs the thread
# caches.  Each of malloc and free starts with
# the test of the mode (a compare of ay_cpu_mode and a conditional jump: to
# the per-CPU path, or past it); the count is the instructions up to that
# jump, then the per-CPU path from its first instruction to its first `ret`
# (the path of a block of at most 1 KiB that the list has, or has room
# for).  The script checks that the path holds a store to the rseq area's
# rseq_cs (the arming), and fails otherwise.
# Prints "malloc M free F pair P".
set -euo pipefail
cd "$(dirname "$0")/.."
lib=${1:-build/liballoy.so}
count() {
    objdump -d --no-show-raw-insn "$lib" | awk -v fn="<$1>:" 'BEGIN { n = 0 }
        $2 == fn { on = 1; next }
        on && /^$/ { on = 0 }
        on && $0 ~ /^ *[0-9a-f]+:\t/ {
            a = $1; sub(":", "", a); addr[n] = a; text[n] = $0; at[a] = n; n++
        }
        END {
            for (i = 0; i < n && text[i] !~ /ay_cpu_(lean|mode)/; i++) ;
            j = i + 1 # the jump after the compare
            if (i >= n || text[j] !~ /\tj(e|ne) /) { print 0, 0; exit }
            split(text[j], w, " "); target = w[3]
            if (!(target in at)) { print 0, 0; exit }
            start = text[j] ~ /\tjne / ? at[target] : j + 1
            c = j + 1; arm = 0
            for (k = start; k < n; k++) {
                c++
                if (text[k] ~ /mov +%[a-z0-9]+,%fs:0x8\(/) arm = 1
                if (text[k] ~ /\tret/) { print c, arm; exit }
            }
            print 0, 0
        }'
}
read -r m marm < <(count malloc)
read -r f farm < <(count free)
if [ "$m" = 0 ] || [ "$f" = 0 ] || [ "$marm$farm" != 11 ]; then
    echo "percpu-instructions: no per-CPU path found in malloc and free of $lib" \
         "(malloc $m, arming $marm; free $f, arming $farm)" >&2
    exit 1
fi
echo "malloc $m free $f pair $((m + f))"
