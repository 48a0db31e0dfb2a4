#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# expect_failure_fixture.sh SCRIPT - tests/common/expect_failure.sh (SCRIPT)
# passes a command that fails as the test says, and fails every other one:
# a command that succeeds, one killed by a signal where an exit status was
# expected (a crash), another exit status, and a missing message.
set -u
script=$1
fail=0
expect() { # wanted status of the script, description, script arguments...
    local want=$1 what=$2 out rc
    shift 2
    out=$(bash "$script" "$@" 2>&1)
    rc=$?
    if [ "$rc" -eq "$want" ]; then
        echo "ok: $what (exit $rc)"
    else
        echo "FAIL: $what: expect_failure.sh exited $rc, not $want"
        printf '%s\n' "$out" | tail -n 5
        fail=1
    fi
}
msg='echo "CHECK failed: x"; exit 1'
expect 0 "the expected exit and message" exit 1 -m "CHECK failed: x" -- sh -c "$msg"
expect 1 "a command that succeeds" exit 1 -m "CHECK failed: x" -- sh -c 'echo "CHECK failed: x"'
expect 1 "a crash where an exit was expected" exit 1 -m "CHECK failed: x" \
    -- sh -c 'echo "CHECK failed: x"; kill -SEGV $$'
expect 1 "another exit status" exit 1 -m "CHECK failed: x" -- sh -c 'echo "CHECK failed: x"; exit 2'
expect 1 "a missing message" exit 1 -m "CHECK failed: x" -m "and y" -- sh -c "$msg"
expect 0 "the expected signal" signal ABRT -m "aborting" -- sh -c 'echo aborting; kill -ABRT $$'
expect 1 "another signal" signal ABRT -m "aborting" -- sh -c 'echo aborting; kill -SEGV $$'
expect 77 "a skip passed on" exit 1 -s 77 -- sh -c 'exit 77'
expect 2 "bad usage" exit 0 -- true
exit $fail
