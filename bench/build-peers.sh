#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# build-peers.sh - builds the three peers that Debian 12 lacks, for the
# benchmark: mimalloc 3.4.3 (MIT), snmalloc 0.7.5 (MIT) and rpmalloc 2.0.1
# (public domain / MIT), newer and faster than Debian's mimalloc 2.0.9,
# jemalloc 5.3 and TCMalloc.  None of their code is in this repository: each
# comes from its release archive, taken from the first of
#   1. $ALLOY_PEERS_SRC, a folder holding the archives under the names
#      bench/peers.sha256 lists (mimalloc-3.4.3.tar.gz, snmalloc-0.7.5.tar.gz,
#      rpmalloc-2.0.1.tar.gz), each with a sha256 recorded there;
#   2. ../shared/peers beside the repository's root;
#   3. OUTDIR/downloads, where an earlier download was kept;
#   4. a download of the archive GitHub publishes for the release's tag, with
#      curl (or wget), into OUTDIR/downloads.
# Every archive, wherever it comes from, must have a sha256 that
# bench/peers.sha256 records for it; one that does not is refused and named.
# Needs cmake, gcc and g++.  Builds once: a peer whose library is already in
# OUTDIR is not fetched or built again, its path is only printed.
#
# usage: bench/build-peers.sh [--fetch-only] [OUTDIR]   (default OUTDIR:
#        ${TMPDIR:-/tmp}/alloy-peers; the runner passes BUILD/peers)
# Prints on stdout one line per peer it has, NAME PATH-TO-PRELOADABLE-.so
# (mimalloc3, snmalloc, rpmalloc), and on stderr, for each peer it could not
# fetch or build, one line `build-peers.sh: NAME MISSING: WHY` (every source
# it tried and why each failed); the others are built all the same.
# --fetch-only finds and checks the archives but builds nothing, and prints
# NAME ARCHIVE from ORIGIN (ORIGIN: ALLOY_PEERS_SRC, ../shared/peers,
# earlier-download or download), or the same MISSING lines.
# Exit status: 0 when it printed every peer, 1 when one or more are MISSING
# (the lines it printed are still good: bench/run.py and tools/*.sh use them
# and report the rest as MISSING with the reason), 2 on bad arguments.
# Environment: ALLOY_PEERS_SRC (above); ALLOY_PEERS_HARDENED=1 builds, besides,
# the peers' hardened builds from the same archives, for docs/HARDENING.md:
# mimalloc3-secure (mimalloc's MI_SECURE=ON) and snmalloc-checks (its
# snmallocshim-checks); ALLOY_PEERS_JOBS, parallel build jobs
# (default: the CPU count); ALLOY_PEERS_URL_BASE, for the tests only: fetch
# each archive from BASE/NAME-VERSION.tar.gz instead of GitHub (a file:// or an
# unreachable address); the checksums apply the same.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
sums=$here/peers.sha256
shared=$(dirname "$root")/shared/peers
fetch_only=0
if [ "${1:-}" = --fetch-only ]; then fetch_only=1; shift; fi
case "${1:-}" in -*) echo "usage: build-peers.sh [--fetch-only] [OUTDIR]" >&2; exit 2 ;; esac
[ $# -le 1 ] || { echo "usage: build-peers.sh [--fetch-only] [OUTDIR]" >&2; exit 2; }
out=${1:-${TMPDIR:-/tmp}/alloy-peers}
if ! mkdir -p "$out" || ! out=$(cd "$out" && pwd); then echo "build-peers.sh: cannot make $out" >&2; exit 2; fi
jobs=${ALLOY_PEERS_JOBS:-$(nproc 2>/dev/null || echo 2)}
me=build-peers.sh

peers=(mimalloc3 snmalloc rpmalloc)
[ "${ALLOY_PEERS_HARDENED:-0}" = 1 ] && peers+=(mimalloc3-secure snmalloc-checks)
declare -A dir=([mimalloc3]=mimalloc-3.4.3 [snmalloc]=snmalloc-0.7.5 [rpmalloc]=rpmalloc-2.0.1
                [mimalloc3-secure]=mimalloc-3.4.3 [snmalloc-checks]=snmalloc-0.7.5)
declare -A url=([mimalloc3]=https://github.com/microsoft/mimalloc/archive/refs/tags/v3.4.3.tar.gz
                [snmalloc]=https://github.com/microsoft/snmalloc/archive/refs/tags/0.7.5.tar.gz
                [mimalloc3-secure]=https://github.com/microsoft/mimalloc/archive/refs/tags/v3.4.3.tar.gz
                [snmalloc-checks]=https://github.com/microsoft/snmalloc/archive/refs/tags/0.7.5.tar.gz
                [rpmalloc]=https://github.com/mjansson/rpmalloc/archive/refs/tags/2.0.1.tar.gz)
declare -A lib=([mimalloc3]=build/libmimalloc.so.3 [snmalloc]=build/libsnmallocshim.so
                [rpmalloc]=librpmalloc.so [mimalloc3-secure]=build-secure/libmimalloc-secure.so.3
                [snmalloc-checks]=build/libsnmallocshim-checks.so)

# verify FILE NAME-VERSION.tar.gz: true if FILE's sha256 is one peers.sha256
# records for that archive; otherwise false, with the reason in $bad (FILE:
# checksum mismatch, ...).
verify() {
  local got want
  if [ ! -f "$sums" ]; then bad="$1: not used, no checksum file $sums"; return 1; fi
  want=$(awk -v f="$2" '$1 !~ /^#/ && $2 == f {print $1}' "$sums")
  if [ -z "$want" ]; then bad="$1: not used, $sums records no sha256 for $2"; return 1; fi
  got=$(sha256sum "$1" | cut -d' ' -f1)
  if grep -qxF "$got" <<<"$want"; then return 0; fi
  bad="$1: checksum mismatch (sha256 $got, peers.sha256 records $(head -n1 <<<"$want"))"
  return 1
}

# download URL FILE: URL into OUTDIR/downloads/FILE if its checksum is right;
# otherwise false, with the reason in $bad.
download() {
  local tmp err rc
  mkdir -p "$out/downloads" || { bad="cannot make $out/downloads"; return 1; }
  tmp=$(mktemp "$out/downloads/.$2.XXXXXX") || { bad="cannot write in $out/downloads"; return 1; }
  if command -v curl >/dev/null; then
    err=$(curl -fsSL --connect-timeout 20 --max-time 300 -o "$tmp" "$1" 2>&1); rc=$?
  elif command -v wget >/dev/null; then
    err=$(wget -nv --timeout=20 -O "$tmp" "$1" 2>&1); rc=$?
  else
    err="neither curl nor wget is installed"; rc=1
  fi
  if [ $rc -ne 0 ]; then
    rm -f "$tmp"; bad="download of $1 failed: $(tail -n1 <<<"${err:-exit $rc}")"; return 1
  fi
  if ! verify "$tmp" "$2"; then
    rm -f "$tmp"; bad="download of $1: ${bad#"$tmp: "}"; return 1
  fi
  mv -f "$tmp" "$out/downloads/$2"
}

# fetch NAME: sets $archive and $origin to a checked archive of NAME, or
# returns false with every source's reason, '; '-separated, in $why.
fetch() {
  local f=${dir[$1]}.tar.gz p u reasons=()
  if [ -z "${ALLOY_PEERS_SRC:-}" ]; then
    reasons+=("ALLOY_PEERS_SRC not set (set it to a directory that holds $f, the archive\
 bench/peers.sha256 names, with the sha256 recorded there)")
  elif [ ! -f "$ALLOY_PEERS_SRC/$f" ]; then
    reasons+=("no $f in ALLOY_PEERS_SRC=$ALLOY_PEERS_SRC (it must hold the archives\
 bench/peers.sha256 names, each with the sha256 recorded there)")
  elif verify "$ALLOY_PEERS_SRC/$f" "$f"; then
    archive=$ALLOY_PEERS_SRC/$f origin=ALLOY_PEERS_SRC
  else
    reasons+=("$bad")
  fi
  if [ -z "${archive:-}" ]; then
    if [ ! -d "$shared" ]; then
      reasons+=("no $shared")
    elif [ ! -f "$shared/$f" ]; then
      reasons+=("no $f in $shared")
    elif verify "$shared/$f" "$f"; then
      archive=$shared/$f origin=../shared/peers
    else
      reasons+=("$bad")
    fi
  fi
  if [ -z "${archive:-}" ] && [ -f "$out/downloads/$f" ] && verify "$out/downloads/$f" "$f"; then
    archive=$out/downloads/$f origin=earlier-download
  fi
  if [ -z "${archive:-}" ]; then
    u=${url[$1]}
    [ -z "${ALLOY_PEERS_URL_BASE:-}" ] || u=${ALLOY_PEERS_URL_BASE%/}/$f
    if download "$u" "$f"; then
      archive=$out/downloads/$f origin=download
    else
      reasons+=("$bad")
    fi
  fi
  if [ -n "${archive:-}" ]; then       # a refused archive is named even when another was found
    for p in "${reasons[@]}"; do
      case "$p" in *"checksum mismatch"*) echo "$me: $1: refused $p" >&2 ;; esac
    done
    return 0
  fi
  why=$(printf '%s; ' "${reasons[@]}"); why=${why%; }
  return 1
}

# build NAME: unpacks $archive into OUTDIR (unless an earlier call did) and
# builds the library, with the output in OUTDIR/NAME.log; false with $why.
build() {
  local d=$out/${dir[$1]} log=$out/$1.log tmpd
  if [ ! -d "$d" ]; then
    tmpd=$(mktemp -d "$out/.unpack.XXXXXX")
    if ! tar -xzf "$archive" -C "$tmpd" 2>"$log" || [ ! -d "$tmpd/${dir[$1]}" ]; then
      rm -rf "$tmpd"; why="$archive does not unpack into ${dir[$1]}/"; return 1
    fi
    mv "$tmpd/${dir[$1]}" "$d"; rmdir "$tmpd"
  fi
  echo "$me: building $1 from $archive ($origin), log $log" >&2
  case $1 in
    mimalloc3)
      cmake -S "$d" -B "$d/build" -DCMAKE_BUILD_TYPE=Release -DMI_BUILD_TESTS=OFF \
        -DMI_BUILD_OBJECT=OFF -DMI_BUILD_STATIC=OFF && cmake --build "$d/build" -j"$jobs" ;;
    mimalloc3-secure)
      cmake -S "$d" -B "$d/build-secure" -DCMAKE_BUILD_TYPE=Release -DMI_BUILD_TESTS=OFF \
        -DMI_BUILD_OBJECT=OFF -DMI_BUILD_STATIC=OFF -DMI_SECURE=ON &&
        cmake --build "$d/build-secure" -j"$jobs" ;;
    snmalloc | snmalloc-checks)
      local target=snmallocshim
      [ "$1" = snmalloc-checks ] && target=snmallocshim-checks
      cmake -S "$d" -B "$d/build" -DCMAKE_BUILD_TYPE=Release -DSNMALLOC_BUILD_TESTING=OFF \
        -DSNMALLOC_STATIC_LIBRARY=OFF && cmake --build "$d/build" -j"$jobs" --target "$target" ;;
    rpmalloc)
      gcc -O3 -DNDEBUG -fPIC -shared -DENABLE_OVERRIDE=1 -o "$d/${lib[$1]}" \
        "$d/rpmalloc/rpmalloc.c" -lpthread ;;
  esac >"$log" 2>&1
  if [ ! -f "$d/${lib[$1]}" ]; then
    why="build failed ($log): $(grep -m1 -E '(^|[^[:alnum:]_-])[Ee]rror[: ]' "$log" || tail -n1 "$log")"
    return 1
  fi
}

status=0
for n in "${peers[@]}"; do
  archive="" origin="" why=""
  so=$out/${dir[$n]}/${lib[$n]}
  if [ $fetch_only = 0 ] && [ -f "$so" ]; then echo "$n $so"; continue; fi
  if [ $fetch_only = 0 ] && [ -d "$out/${dir[$n]}" ]; then
    archive="$out/${dir[$n]}" origin="unpacked before"     # an earlier build failed or stopped
  elif ! fetch "$n"; then
    echo "$me: $n MISSING: $why" >&2; status=1; continue
  fi
  if [ $fetch_only = 1 ]; then echo "$n $archive from $origin"; continue; fi
  if build "$n"; then echo "$n $so"; else echo "$me: $n MISSING: $why" >&2; status=1; fi
done
exit $status
