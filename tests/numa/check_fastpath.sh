#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# check_fastpath.sh DOC LIBALLOY PLAIN STATIC NUMA SYSFS [PHRASE] - the fast
# path is the same with NUMA awareness as without, and as
# docs/ARCHITECTURE.md says:
#   - PLAIN under LD_PRELOAD=LIBALLOY (one node here): the figure in DOC's
#     "PHRASE N instructions" (default PHRASE: "A malloc+free pair of 64
#     bytes is"; a build with per-CPU caches, whose thread caches callgrind
#     runs, passes the sentence for its thread caches);
#   - STATIC (linked against liballoy.a, one node) and NUMA (the NUMA test
#     flavour, on the two-node tree SYSFS, where NUMA is in effect): the
#     same count as each other.
# Instructions per pair are counted by callgrind as in
# tools/fastpath-instructions.sh: runs of 1.1 M and 0.1 M pairs, the
# difference per pair (rounded), less the loop's own 10.  Every run is on
# CPU 0 (taskset), so that the NUMA run binds to node 0 each time.  Exit 77
# (skipped) without valgrind.
set -euo pipefail
doc=$1 lib=$2 plain=$3 static=$4 numa=$5 sysfs=$6
phrase=${7:-A malloc+free pair of 64 bytes is}
command -v valgrind >/dev/null || { echo "check_fastpath: no valgrind (skipped)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
count() { # pairs VAR=value... prog: the instructions callgrind counts
    local n=$1 out; shift
    local prog=${!#} vars=("${@:1:$#-1}")
    out=$(env "${vars[@]}" taskset -c 0 valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" \
          "$prog" "$n" 2>&1) || { echo "check_fastpath: callgrind failed: $out" >&2; exit 1; }
    awk '/Collected/ {print $4}' <<<"$out"
}
per_pair() { # VAR=value... prog
    local a b
    a=$(count 100000 "$@") b=$(count 1100000 "$@")
    echo $(( (b - a + 500000) / 1000000 - 10 )) # rounded: a stray system call is no instruction
}
want=$(tr -s ' \n' '  ' < "$doc" | grep -o "$phrase [0-9]* instructions" | grep -o '[0-9][0-9]*' | tail -n 1)
[ -n "$want" ] || { echo "check_fastpath: no figure in $doc" >&2; exit 1; }
got_plain=$(per_pair LD_PRELOAD="$lib" ALLOY_CONF= "$plain")
got_static=$(per_pair ALLOY_CONF= "$static")
got_numa=$(per_pair ALLOY_CONF= ALLOY_TEST_SYSFS_ROOT="$sysfs" "$numa")
echo "check_fastpath: liballoy.so $got_plain (ARCHITECTURE.md: $want); liballoy.a $got_static;" \
     "NUMA test flavour on two nodes $got_numa instructions per malloc+free pair"
[ "$got_plain" = "$want" ] && [ "$got_static" = "$got_numa" ]
