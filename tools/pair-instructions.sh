#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# pair-instructions.sh - instructions per malloc+free pair of SIZE bytes with
# LIB preloaded, counted by callgrind as fastpath-instructions.sh counts them:
# the difference between runs of 1.1 M and 0.1 M pairs (start-up cancels
# out), less the loop's own 10, to two decimals.  Used by prof-cost.sh and
# secure-cost.sh.
# Usage: pair-instructions.sh LIB SIZE
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: pair-instructions.sh LIB SIZE" >&2; exit 2; }
lib=$1 size=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/pair.c" <<C
#include <stdlib.h>
int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    void *volatile sink;
    for (long i = 0; i < n; i++) { void *p = malloc($size); sink = p; free(p); }
    (void)sink;
    return 0;
}
C
gcc -O2 -o "$tmp/pair" "$tmp/pair.c"
count() { # pairs
    LD_PRELOAD="$lib" valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" \
        "$tmp/pair" "$1" 2>&1 | awk '/Collected/ {print $4}'
}
a=$(count 100000)
b=$(count 1100000)
awk -v a="$a" -v b="$b" 'BEGIN {printf "%.2f\n", (b - a) / 1e6 - 10}'
