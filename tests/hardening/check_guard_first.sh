#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# check_guard_first.sh PROGRAM LIBRARY - guard_sample:1 guards every
# allocation of at most a page from the first: PROGRAM (guard_first_uaf, a
# PIE executable) mallocs 32 bytes once, frees them and reads a byte; with
# LIBRARY preloaded and ALLOY_CONF=guard_sample:1 the read must die of
# SIGSEGV after a report of a use after free, whose "accessed" stack gives,
# as object+offset that `addr2line -f -e OBJECT OFFSET` reads, the faulting
# instruction in read_byte and then its caller, main, in guard_first_uaf.c.
# Without addr2line, the frames' in-process names are checked alone.
set -uo pipefail
prog=$1 lib=$2
readelf -h "$prog" | grep -q 'Type: *DYN' || { echo "FAIL: $prog is not PIE"; exit 1; }
err=$(LD_PRELOAD=$lib ALLOY_CONF=guard_sample:1 "$prog" 2>&1 >/dev/null)
st=$?
echo "$err"
if [ $st -ne 139 ] || ! grep -q '^alloy: guarded block: use after free at ' <<<"$err"; then
    echo "FAIL: status $st (want 139, SIGSEGV, after a use-after-free report)"
    exit 1
fi
frames=$(sed -n '/^alloy:   accessed by thread/,/^alloy:   [a-z]/p' <<<"$err" | grep '^alloy:     #')
fails=0
i=0
for want in read_byte main; do
    line=$(sed -n "$((i + 1))p" <<<"$frames")
    case "$line" in *" in $want ("*) ;; *)
        echo "FAIL: access frame #$i does not name $want: '$line'"
        fails=$((fails + 1)) ;;
    esac
    obj=$(sed -nE 's/.*\((.*)\+(0x[0-9a-f]+)\)$/\1/p' <<<"$line")
    off=$(sed -nE 's/.*\((.*)\+(0x[0-9a-f]+)\)$/\2/p' <<<"$line")
    if ! command -v addr2line >/dev/null; then
        echo "no addr2line (binutils): frame #$i's file and line not checked"
    elif [ -z "$obj" ] || [ -z "$off" ]; then
        echo "FAIL: access frame #$i has no (object+offset): '$line'"
        fails=$((fails + 1))
    else
        got=$(addr2line -f -e "$obj" "$off")
        if [ "$(head -1 <<<"$got")" != "$want" ] || ! grep -q 'guard_first_uaf\.c:[0-9]' <<<"$got"; then
            echo "FAIL: frame #$i: addr2line -f -e $obj $off printed '$got', want $want in guard_first_uaf.c"
            fails=$((fails + 1))
        else
            echo "ok: access frame #$i: addr2line -f -e $obj $off: $(tr '\n' ' ' <<<"$got")"
        fi
    fi
    i=$((i + 1))
done
[ $fails -eq 0 ]
