#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# install_deps_lock.sh INSTALL_DEPS - install-deps.sh waits for dpkg's lock
# instead of failing at once (a new machine's unattended upgrades hold it),
# and gives up with a message after its timeout.  A process of ours holds
# /var/lib/dpkg/lock-frontend as apt does (a POSIX lock); install-deps runs
# with a package that is not installed, in its dry-run mode.  Needs root
# (the lock file is root's): skipped otherwise, with status 77 (ctest's
# SKIP_RETURN_CODE for this test).
set -u
deps=$1
if [ "$(id -u)" -ne 0 ] || [ ! -e /var/lib/dpkg/lock-frontend ]; then
  echo "SKIP: needs root and /var/lib/dpkg/lock-frontend"
  exit 77
fi
hold() { # hold the lock for $1 seconds, in the background; echo when taken
  /usr/bin/python3 -c '
import fcntl, sys, time
f = open("/var/lib/dpkg/lock-frontend", "w")
fcntl.lockf(f, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(float(sys.argv[1]))' "$1" &
  holder=$!
  sleep 0.5
}
fails=0
export ALLOY_DEPS_PACKAGES=alloy-no-such-package ALLOY_DEPS_DRY_RUN=1

# 1. held for 5 s: install-deps waits, says for what, and goes on
hold 5
start=$(date +%s)
out=$(ALLOY_DPKG_LOCK_TIMEOUT=60 "$deps" 2>&1)
rc=$? took=$(( $(date +%s) - start ))
wait "$holder"
echo "$out"
if [ $rc -ne 0 ] || [ $took -lt 3 ] || ! grep -q "waiting for the dpkg/apt lock, held by: $holder python3" <<<"$out" ||
   ! grep -q "dry run: would install alloy-no-such-package" <<<"$out"; then
  echo "FAIL: waiting (status $rc, $took s)"; fails=$((fails + 1))
else
  echo "ok: waited $took s for the lock, then went on"
fi

# 2. held for longer than the timeout: a message and status 1, no install
hold 8
out=$(ALLOY_DPKG_LOCK_TIMEOUT=2 "$deps" 2>&1)
rc=$?
kill "$holder" 2>/dev/null; wait "$holder" 2>/dev/null
echo "$out"
if [ $rc -ne 1 ] || ! grep -q "gave up after 2 s waiting for the dpkg/apt lock" <<<"$out" ||
   grep -q "would install" <<<"$out"; then
  echo "FAIL: timeout (status $rc)"; fails=$((fails + 1))
else
  echo "ok: gave up after the timeout with a message"
fi
exit $((fails != 0))
