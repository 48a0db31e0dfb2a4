#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# check_conf_escape.sh LIB - a warning about ALLOY_CONF never writes the
# setting's control bytes to the terminal: a key with an escape sequence
# and a value with a bell and a newline each get one warning, on one line,
# with those bytes written as \xNN.  LIB (liballoy.so.0) is preloaded into
# /bin/true.
set -uo pipefail
lib=$1
conf=$'no\e[2Jsuch:1,decay_ms:1\a2\n3'
err=$(ALLOY_CONF=$conf LD_PRELOAD=$lib /bin/true 2>&1 >/dev/null)
st=$?
printf '%s\n' "$err"
fails=0
[ $st -eq 0 ] || { echo "FAIL: status $st"; fails=1; }
# every byte but the newlines that end the lines is printable
if LC_ALL=C grep -q $'[\x01-\x09\x0b-\x1f\x7f]' <<<"$err"; then
    echo "FAIL: a control byte reached stderr: $(od -c <<<"$err" | head -5)"
    fails=1
fi
[ "$(grep -c '^alloy: ' <<<"$err")" = 2 ] && [ "$(wc -l <<<"$err")" = 2 ] ||
    { echo "FAIL: want two warnings, each on one line"; fails=1; }
grep -Fq "'no\\x1b[2Jsuch'" <<<"$err" || { echo "FAIL: the key's ESC is not written as \\x1b"; fails=1; }
grep -Fq "'1\\x072\\x0a3'" <<<"$err" || { echo "FAIL: the value's bell and newline are not \\x07 and \\x0a"; fails=1; }
[ $fails -eq 0 ] && echo "ok: control bytes escaped"
exit $fails
