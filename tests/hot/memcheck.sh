#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# memcheck.sh EXE - run every case of hot_test_checkers (EXE, built against
# src/hot compiled with ALLOY_VALGRIND=1) under valgrind's memcheck: each bad
# case must be reported as an invalid read, and the clean case must give no
# error at all.  Exit 77 (ctest: skipped) when valgrind is not installed.
set -uo pipefail
exe=$1
if ! command -v valgrind >/dev/null 2>&1; then
  echo "memcheck.sh: valgrind is not installed (apt-get install valgrind, or tools/install-deps.sh): skipped"
  exit 77
fi
run() { valgrind --tool=memcheck --error-exitcode=99 --leak-check=no --quiet "$exe" "$1" 2>&1; }
fail=0
for c in arena-reset arena-reset-buffer arena-rewind pool-free sync-pool-free pool-resource-free; do
  out=$(run "$c"); rc=$?
  if [ "$rc" -eq 99 ] && grep -q "Invalid read" <<<"$out"; then
    echo "case $c: memcheck reports it ($(grep -m1 -o 'Invalid read of size [0-9]*' <<<"$out"))"
  else
    echo "case $c: memcheck did not report it (exit $rc)"
    tail -n 20 <<<"$out"
    fail=1
  fi
done
out=$(run clean); rc=$?
if [ "$rc" -eq 0 ] && ! grep -q "Invalid\|uninitialised" <<<"$out"; then
  echo "case clean: no error"
else
  echo "case clean: memcheck reported errors (exit $rc)"
  tail -n 40 <<<"$out"
  fail=1
fi
exit $fail
