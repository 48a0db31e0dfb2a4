#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fresh-instructions.sh - instructions per never-used block of SIZE bytes
# with LIB preloaded: what a program pays for each block it takes from fresh
# spans (carving, and in the secure flavour the random order), with its
# free.  Counted by callgrind on build/malloc_test with one thread, which
# allocates N blocks (writing each) and then frees them all: the difference
# between runs of 2 M and 1 M blocks (start-up cancels out), per block, to
# one decimal, the program's own instructions included.  Used by
# secure-cost.sh.
# Usage: fresh-instructions.sh BUILD LIB SIZE
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: fresh-instructions.sh BUILD LIB SIZE" >&2; exit 2; }
build=$1 lib=$2 size=$3
count() { # blocks
    LD_PRELOAD="$lib" valgrind --tool=callgrind --callgrind-out-file=/dev/null \
        "$build/malloc_test" 1 "$1" "$size" 2>&1 | awk '/Collected/ {print $4}'
}
a=$(count 1000000)
b=$(count 2000000)
awk -v a="$a" -v b="$b" 'BEGIN {printf "%.1f\n", (b - a) / 1e6}'
