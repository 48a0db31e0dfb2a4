#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fastpath-instructions.sh - instructions per 64-byte malloc+free pair, counted
# by callgrind, for glibc, alloy and the peers: the Debian ones if installed,
# and mimalloc 3, snmalloc and rpmalloc as built by bench/build-peers.sh (or
# $ALLOY_PEERS_SCRIPT) into BUILD/peers.  Each figure is the difference between
# runs of 1.1 M and 0.1 M pairs (start-up cancels out), less the benchmark
# loop's own 10 instructions.  A peer that is not there prints MISSING and why.
# Usage: fastpath-instructions.sh [build dir]
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(cd "${1:-build}" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/pair.c" <<'C'
#include <stdlib.h>
int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    void *volatile sink;
    for (long i = 0; i < n; i++) { void *p = malloc(64); sink = p; free(p); }
    (void)sink;
    return 0;
}
C
gcc -O2 -o "$tmp/pair" "$tmp/pair.c"
count() { # preload, pairs: prints the instruction count, or fails when the run did
    local out
    out=$(LD_PRELOAD="$1" valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" \
          "$tmp/pair" "$2" 2>&1) || { grep -m1 -v -e '^==' -e '^$' <<<"$out" || echo "no message"; return 1; }
    awk '/Collected/ {print $4}' <<<"$out"
}
# The built peers: "NAME PATH" lines from the script, and its reasons for the
# others ("build-peers.sh: NAME MISSING: WHY"), or why it gave none.
script=${ALLOY_PEERS_SCRIPT:-bench/build-peers.sh}
built="" why=""
if [ ! -f "$script" ]; then
    why="$script not found (set ALLOY_PEERS_SCRIPT)"
elif ! built=$(bash "$script" "$build/peers" 2>"$tmp/peers.err"); then
    why="$script failed: $(tail -n 1 "$tmp/peers.err")"
fi
lib=/usr/lib/x86_64-linux-gnu
entries=("glibc=" "alloy=$build/liballoy.so" "jemalloc=$lib/libjemalloc.so.2"
         "tcmalloc=$lib/libtcmalloc_minimal.so.4" "mimalloc=$lib/libmimalloc.so.2")
for name in mimalloc3 snmalloc rpmalloc; do
    so=$(awk -v n="$name" '$1 == n {print $2}' <<<"$built")
    entries+=("$name=${so:-}")
done
for entry in "${entries[@]}"; do
    name=${entry%%=*}; so=${entry#*=}
    if [ "$name" != glibc ] && [ -z "$so" ]; then
        told=$(sed -n "s/^[^ ]*: $name MISSING: //p" "$tmp/peers.err" 2>/dev/null | head -n 1)
        echo "$name: MISSING (${told:-${why:-$script printed no $name line}})"; continue
    fi
    if [ -n "$so" ] && [ ! -f "$so" ]; then echo "$name: MISSING ($so)"; continue; fi
    # An allocator can fail under valgrind (snmalloc 0.7.5 cannot reserve its
    # address space there): say so and go on with the next.
    a="" b=""
    if ! a=$(count "$so" 100000) || ! b=$(count "$so" 1100000); then
        echo "$name: FAILED under callgrind (${b:-$a})"; continue
    fi
    echo "$name: $(( (b - a) / 1000000 - 10 )) instructions per malloc+free pair"
done
