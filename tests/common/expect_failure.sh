#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# expect_failure.sh - run a command that must fail in one precise way: with
# a given exit status, or killed by a given signal, and printing every one of
# the given messages (extended regular expressions, matched against its
# stdout and stderr together).  For the tests that show a check can fail: a
# crash, another exit status or another message is not the failure they
# expect, so each of those makes this script fail.  (ctest's WILL_FAIL
# passes on any failure, a crash included.)
#
#   expect_failure.sh exit N     [-s SKIP] [-m REGEX]... -- COMMAND [ARG]...
#   expect_failure.sh signal SIG [-s SKIP] [-m REGEX]... -- COMMAND [ARG]...
#
# SIG is a name without SIG (SEGV, ABRT, ...).  Exit 0 when the command
# failed as expected, 1 (naming what differed) otherwise, 2 on bad usage;
# with -s, the command's exit status SKIP (a test that cannot run here,
# ctest's SKIP_RETURN_CODE) is passed on.
set -uo pipefail
usage() {
    echo "usage: expect_failure.sh exit N | signal SIG [-s SKIP] [-m REGEX]... -- COMMAND [ARG]..." >&2
    exit 2
}
[ $# -ge 2 ] || usage
kind=$1 want=$2
shift 2
case $kind in
exit) [[ $want =~ ^[0-9]+$ ]] && [ "$want" -gt 0 ] && [ "$want" -lt 128 ] || usage ;;
signal) kill -l "$want" >/dev/null 2>&1 || usage ;;
*) usage ;;
esac
patterns=()
skip=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    [ $# -ge 2 ] || usage
    case $1 in
    -m) patterns+=("$2") ;;
    -s) skip=$2 ;;
    *) usage ;;
    esac
    shift 2
done
[ $# -ge 2 ] || usage
shift
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ -n "$skip" ] && [ "$rc" = "$skip" ]; then
    exit "$rc"
fi
describe() { # an exit status as a person reads it
    if [ "$1" -gt 128 ] && [ "$1" -lt 160 ]; then
        echo "killed by SIG$(kill -l $(($1 - 128)))"
    else
        echo "exit status $1"
    fi
}
if [ "$kind" = exit ]; then
    expected=$want
else
    expected=$((128 + $(kill -l "$want")))
fi
fail=0
if [ "$rc" -ne "$expected" ]; then
    echo "expect_failure.sh: FAIL: expected $(describe "$expected"), got $(describe "$rc")"
    fail=1
fi
for p in "${patterns[@]}"; do
    if ! grep -Eq -- "$p" <<<"$out"; then
        echo "expect_failure.sh: FAIL: the output lacks /$p/"
        fail=1
    fi
done
if [ $fail -eq 0 ]; then
    echo "expect_failure.sh: failed as expected ($(describe "$rc"), ${#patterns[@]} message(s) found)"
fi
exit $fail
