#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# check_guard_addr2line.sh TEST_GUARD - a guard_sample report's frames give
# object+offset, which addr2line reads for a PIE program: `test_guard
# overflow` (a PIE executable, Debian's default) overflows a guarded block
# allocated in guarded(), called from overflow(); the report's first two
# "allocated" frames, fed to `addr2line -f -e OBJECT OFFSET`, must name
# those functions and test_guard.c.  (The absolute addresses, which the
# report gives beside them, name nothing in a PIE: addr2line prints ??.)
# Exit 77 (skip) without addr2line.
set -uo pipefail
prog=$1
command -v addr2line >/dev/null || { echo "no addr2line (binutils): skipped"; exit 77; }
readelf -h "$prog" | grep -q 'Type: *DYN' || { echo "FAIL: $prog is not PIE"; exit 1; }
err=$(ALLOY_CONF=guard_sample:1 "$prog" overflow 2>&1 >/dev/null)
st=$?
if [ $st -ne 139 ] || ! grep -q '^alloy: guarded block: heap buffer overflow' <<<"$err"; then
    echo "FAIL: status $st (want 139, SIGSEGV), report:"
    echo "$err"
    exit 1
fi
echo "$err"
# the frames under "allocated by thread N:"
frames=$(sed -n '/^alloy:   allocated by thread/,/^alloy:   [a-z]/p' <<<"$err" | grep '^alloy:     #')
fails=0
i=0
for want in guarded overflow; do
    line=$(sed -n "$((i + 1))p" <<<"$frames")
    obj=$(sed -nE 's/.*\((.*)\+(0x[0-9a-f]+)\)$/\1/p' <<<"$line")
    off=$(sed -nE 's/.*\((.*)\+(0x[0-9a-f]+)\)$/\2/p' <<<"$line")
    if [ -z "$obj" ] || [ -z "$off" ]; then
        echo "FAIL: frame #$i has no (object+offset): '$line'"
        fails=$((fails + 1))
    else
        got=$(addr2line -f -e "$obj" "$off")
        if [ "$(head -1 <<<"$got")" != "$want" ] || ! grep -q 'test_guard\.c:[0-9]' <<<"$got"; then
            echo "FAIL: frame #$i: addr2line -f -e $obj $off printed '$got', want $want in test_guard.c"
            fails=$((fails + 1))
        else
            echo "ok: frame #$i: addr2line -f -e $obj $off: $(tr '\n' ' ' <<<"$got")"
        fi
        case "$line" in *" in $want ("*) ;; *)
            echo "FAIL: frame #$i does not name $want in-process: '$line'"
            fails=$((fails + 1)) ;;
        esac
    fi
    i=$((i + 1))
done
[ $fails -eq 0 ]
