#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# check_needed.sh LIB... - each shared flavour of alloy depends on nothing but
# libc (and the dynamic loader): its NEEDED entries are libc.so.6 and
# ld-linux only, and it exports no _Unwind_* symbol (its unwinder is libgcc's,
# linked in and hidden: CMakeLists.txt, alloy_flavour).
set -euo pipefail
fail=0
for lib in "$@"; do
    needed=$(readelf -dW "$lib" | awk '/\(NEEDED\)/ {gsub(/[][]/, "", $5); print $5}')
    for n in $needed; do
        case $n in
            libc.so.6|ld-linux-*.so.*) ;;
            *) echo "check_needed: $lib needs $n (only libc is allowed)"; fail=1 ;;
        esac
    done
    if nm -D --defined-only "$lib" | grep -q ' _Unwind_'; then
        echo "check_needed: $lib exports _Unwind_* symbols"; fail=1
    fi
    echo "check_needed: $lib: needs ${needed//$'\n'/ }"
done
exit $fail
