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
# profiles) and binutils (addr2line, for file:line in alloy prof).
# Idempotent: it installs only what is missing, so it is cheap to call from
# every entry script.
set -euo pipefail
pkgs=(build-essential cmake g++ python3 jq valgrind pkgconf
      libjemalloc2 libjemalloc-dev libtcmalloc-minimal4 libgoogle-perftools-dev
      libmimalloc2.0 libmimalloc-dev gnuplot-nox python3-matplotlib hyperfine linux-perf
      dpkg-dev lintian man-db groff-base fakeroot systemd
      google-perftools binutils)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "install-deps: installing ${missing[*]}" >&2
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
