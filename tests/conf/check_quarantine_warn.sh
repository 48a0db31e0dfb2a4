#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# check_quarantine_warn.sh RELEASE_LIB SECURE_LIB - the quarantine setting's
# warnings, each library preloaded into /bin/true: the release library
# takes quarantine:128k with one warning, which says that the quarantine is
# the secure flavour's; the secure library takes it without a word; a value
# out of range gets one warning naming the key, and the default is kept;
# quarantine:0 (the default) is silent in both.
set -uo pipefail
release=$1 secure=$2
fails=0
run() { # LIB CONF: stderr of /bin/true
    ALLOY_CONF=$2 LD_PRELOAD=$1 /bin/true 2>&1 >/dev/null
}
expect() { # what LIB CONF LINES [TEXT...]: LINES lines of stderr, each TEXT in them
    local what=$1 lib=$2 conf=$3 lines=$4 err n
    shift 4
    err=$(run "$lib" "$conf")
    n=$(grep -c . <<<"$err")
    printf '%s (%s): %s\n' "$what" "$conf" "${err:-(nothing)}"
    [ "$n" = "$lines" ] || { echo "FAIL: $what: want $lines line(s) on stderr, got $n"; fails=1; }
    for text in "$@"; do
        grep -Fq -- "$text" <<<"$err" || { echo "FAIL: $what: no '$text' on stderr"; fails=1; }
    done
}
expect release "$release" quarantine:128k 1 "quarantine" "secure flavour"
expect release-off "$release" quarantine:0 0
expect secure "$secure" quarantine:128k 0
expect secure-off "$secure" quarantine:0 0
expect secure-range "$secure" quarantine:2g 1 "invalid value for 'quarantine'" "keeping the default"
expect release-range "$release" quarantine:2g 1 "invalid value for 'quarantine'" "keeping the default"
[ $fails -eq 0 ] && echo "ok: the quarantine setting warns as it should"
exit $fails
