#!/usr/bin/env bash
# fastpath-instructions.sh - instructions per 64-byte malloc+free pair, counted
# by callgrind, for glibc, alloy and the installed peers.  Each figure is the
# difference between runs of 1.1 M and 0.1 M pairs (start-up cancels out),
# less the benchmark loop's own 10 instructions.  Usage: fastpath-instructions.sh [build dir]
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
count() { # preload, pairs
    LD_PRELOAD="$1" valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" "$tmp/pair" "$2" 2>&1 |
        awk '/Collected/ {print $4}'
}
lib=/usr/lib/x86_64-linux-gnu
for entry in "glibc=" "alloy=$build/liballoy.so" "jemalloc=$lib/libjemalloc.so.2" \
             "tcmalloc=$lib/libtcmalloc_minimal.so.4" "mimalloc=$lib/libmimalloc.so.2"; do
    name=${entry%%=*}; so=${entry#*=}
    if [ -n "$so" ] && [ ! -f "$so" ]; then echo "$name: MISSING ($so)"; continue; fi
    a=$(count "$so" 100000); b=$(count "$so" 1100000)
    echo "$name: $(( (b - a) / 1000000 - 10 )) instructions per malloc+free pair"
done
