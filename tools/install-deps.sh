#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# install-deps.sh - install, from Debian's archive, everything alloy's build,
# tests, benchmarks and charts use.  alloy itself needs only libc and pthreads;
# the rest is for tests (g++, python3, jq, valgrind), the peers the benchmark
# suite compares against, and charts, and for the Debian packages
# (tools/package.sh) and their tests: dpkg-dev (dpkg-shlibdeps,
# dpkg-gensymbols, dpkg-architecture), lintian, man-db and groff-base (man -l,
# groff), fakeroot (dpkg --root when not root), systemd (systemd-analyze
# verify for the drop-in of docs/DEPLOYING.md; it is not started), and for
# the heap profiler's tests: google-perftools (google-pprof reads alloy's
# profiles) and binutils (addr2line, for file:line in alloy prof), and
# redis-server (with redis-tools: redis-cli), which tests/compat runs under
# alloy as a program built against jemalloc (the test starts its own server
# on a unix socket; where systemd runs, Debian also enables its redis
# service on 127.0.0.1:6379, which alloy's tests do not use); and
# python3-matplotlib draws `alloy plot`'s charts, tmux runs `alloy top`'s
# interactive screen in its test (tests/observe).
# Idempotent: it installs only what is missing, so it is cheap to call from
# every entry script.
#
# A new Debian machine often runs unattended upgrades right after boot, which
# hold dpkg's and apt's locks: this script then waits for them, saying which
# process holds them, for up to ALLOY_DPKG_LOCK_TIMEOUT seconds (default 900),
# and only then fails, with a message.  Two settings for tests and scripts:
# ALLOY_DEPS_PACKAGES replaces the package list, and ALLOY_DEPS_DRY_RUN=1
# waits for the locks and prints what it would install, without apt-get.
set -euo pipefail
pkgs=(build-essential cmake g++ python3 jq valgrind pkgconf clang-format
      libjemalloc2 libjemalloc-dev libtcmalloc-minimal4 libgoogle-perftools-dev
      libmimalloc2.0 libmimalloc-dev gnuplot-nox python3-matplotlib hyperfine linux-perf tmux
      dpkg-dev lintian man-db groff-base fakeroot systemd
      google-perftools binutils redis-server)
if [ -n "${ALLOY_DEPS_PACKAGES:-}" ]; then
  read -r -a pkgs <<<"$ALLOY_DEPS_PACKAGES"
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

# The holders of dpkg's and apt's locks (POSIX locks, which lslocks lists),
# one "PID COMMAND" per line; nothing when the locks are free.
lock_holders() {
  lslocks -n -o PID,COMMAND,PATH 2>/dev/null |
    awk '$3 ~ "^/var/lib/dpkg/lock(-frontend)?$|^/var/lib/apt/lists/lock$|^/var/cache/apt/archives/lock$" { print $1, $2 }' |
    sort -u
}

# Wait until no other process holds the locks; fail after the timeout.
wait_for_locks() {
  local timeout=${ALLOY_DPKG_LOCK_TIMEOUT:-900} waited=0 holders
  while holders=$(lock_holders) && [ -n "$holders" ]; do
    if [ "$waited" -ge "$timeout" ]; then
      echo "install-deps: gave up after ${timeout} s waiting for the dpkg/apt lock, held by: $(echo $holders)" >&2
      echo "install-deps: let that finish (or set ALLOY_DPKG_LOCK_TIMEOUT), then run this again" >&2
      return 1
    fi
    if [ $((waited % 30)) -eq 0 ]; then
      echo "install-deps: waiting for the dpkg/apt lock, held by: $(echo $holders) (an unattended upgrade after boot?); waited ${waited} s of at most ${timeout} s" >&2
    fi
    sleep 2
    waited=$((waited + 2))
  done
}

echo "install-deps: installing ${missing[*]}" >&2
wait_for_locks
if [ "${ALLOY_DEPS_DRY_RUN:-0}" = 1 ]; then
  echo "install-deps: dry run: would install ${missing[*]}" >&2
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
# and apt itself waits too, should the lock be taken between the check and it
lock_opt=(-o "DPkg::Lock::Timeout=${ALLOY_DPKG_LOCK_TIMEOUT:-900}")
$SUDO apt-get "${lock_opt[@]}" update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get "${lock_opt[@]}" install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
