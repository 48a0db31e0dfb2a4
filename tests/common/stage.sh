# SPDX-License-Identifier: MIT
# stage.sh - sourced by the install and package tests: one stage's checks.
# fail/ok/skip print a line each (FAIL counts), and finish exits 1 after any
# failure, 0 otherwise, naming the stage ($stage, set by the caller).
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }
skip() { echo "SKIP: $*"; }
finish() {
    if [ "$fails" -ne 0 ]; then
        echo "$stage: $fails check(s) failed"
        exit 1
    fi
    echo "$stage: all checks passed"
    exit 0
}
