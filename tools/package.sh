#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# package.sh - build alloy's Debian packages with dpkg-deb, and check them
# with lintian:
#   liballoy0      /usr/lib/<triplet>/liballoy.so.0*, /usr/bin/alloy,
#                  alloy(1), alloy(3), /usr/share/doc/liballoy0/DEPLOYING.md
#   liballoy-dev   headers, liballoy.a, the liballoy.so link, alloy.pc, the
#                  CMake package
#   alloy-sim      /usr/bin/alloy-sim -> /usr/libexec/alloy-sim/alloy-sim,
#                  alloy-sim-real, /usr/share/alloy-sim/{figures,tables}.py,
#                  alloy-sim(1)
#
# usage: tools/package.sh [--build-dir DIR] [--out DIR] [--no-lintian] [--no-deps]
#   --build-dir DIR  the build tree of the packages (default build-deb); it is
#                    configured for /usr, apart from build/
#   --out DIR        where the .deb files go (default DIR/debs of the build tree)
#   --no-lintian     do not run lintian
#   --no-deps        do not run tools/install-deps.sh first
#
# Each package is one component of `cmake --install` (cmake/install.cmake),
# staged with DESTDIR and finished here: binaries stripped, manual pages
# compressed, documentation, modes, and the control files (control, md5sums;
# for liballoy0 shlibs, symbols and the ldconfig trigger).  Depends comes
# from dpkg-shlibdeps.  The version is the project's single version number
# (project(alloy VERSION ...)), which include/alloy.h must repeat.
# SOURCE_DATE_EPOCH (default: the last commit's date) makes the packages
# reproducible.  Exit status: 0, or 1 when a step or lintian fails (an
# error; warnings are printed and kept), 2 for bad usage.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD

build=build-deb out="" lintian=1 deps=1
while [ $# -gt 0 ]; do
  case $1 in
    --build-dir) build=${2:?--build-dir needs a directory}; shift 2 ;;
    --build-dir=*) build=${1#*=}; shift ;;
    --out) out=${2:?--out needs a directory}; shift 2 ;;
    --out=*) out=${1#*=}; shift ;;
    --no-lintian) lintian=0; shift ;;
    --no-deps) deps=0; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "package.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
mkdir -p "$build"
build=$(cd "$build" && pwd)
out=${out:-$build/debs}
say() { echo "package.sh: $*" >&2; }
die() { say "$*"; exit 1; }

[ "$deps" -eq 0 ] || tools/install-deps.sh
for t in cmake dpkg-deb dpkg-shlibdeps dpkg-gensymbols strip gzip; do
  command -v "$t" >/dev/null || die "$t is missing (tools/install-deps.sh installs it)"
done

# The version: project(alloy VERSION x.y.z), and alloy.h must agree
version=$(sed -n 's/^project(alloy VERSION \([0-9][0-9.]*\).*/\1/p' CMakeLists.txt)
hversion=$(sed -n 's/^#define ALLOY_VERSION_STRING "\(.*\)"/\1/p' include/alloy.h)
[ -n "$version" ] || die "no project(alloy VERSION ...) in CMakeLists.txt"
[ "$version" = "$hversion" ] ||
  die "CMakeLists.txt says version $version but include/alloy.h says \"$hversion\""
arch=$(dpkg --print-architecture)
maintainer=${ALLOY_DEB_MAINTAINER:-"alloy maintainers <maintainers@users.noreply.a-seed-1092f9a9.example>"}
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
  SOURCE_DATE_EPOCH=$(git log -1 --format=%ct 2>/dev/null || date +%s)
fi
export SOURCE_DATE_EPOCH
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)

# Build: only what the packages hold --------------------------------------------------
say "building alloy $version for $arch in $build"
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr \
      -DALLOY_EMBED_SOURCE_DIR=OFF -DCMAKE_C_FLAGS="-ffile-prefix-map=$src=. -ffile-prefix-map=$build=build" \
      -DCMAKE_CXX_FLAGS="-ffile-prefix-map=$src=. -ffile-prefix-map=$build=build" \
      -DCMAKE_EXE_LINKER_FLAGS="-Wl,-z,relro -Wl,-z,now" \
      -DCMAKE_SHARED_LINKER_FLAGS="-Wl,-z,relro -Wl,-z,now" >/dev/null
cmake --build "$build" -j"$(nproc)" --target alloy alloy_static alloy_cmd alloy-sim alloy-sim-real man \
  >"$build/package-build.log" 2>&1 || { tail -40 "$build/package-build.log" >&2; die "build failed"; }
libdir=$(sed -n 's/^CMAKE_INSTALL_LIBDIR:PATH=//p' "$build/CMakeCache.txt")

stage=$build/deb-stage
work=$build/deb-work
rm -rf "$stage" "$work"
mkdir -p "$stage" "$work/debian" "$out"
# dpkg-shlibdeps and dpkg-gensymbols want a debian/ directory to work in
{
  printf 'Source: alloy\nMaintainer: %s\n\n' "$maintainer"
  for p in liballoy0 liballoy-dev alloy-sim; do printf 'Package: %s\nArchitecture: any\n\n' "$p"; done
} >"$work/debian/control"
changelog_date=$(date -u -R -d "@$SOURCE_DATE_EPOCH")
printf 'alloy (%s) unstable; urgency=medium\n\n  * Built by tools/package.sh from commit %s.\n\n -- %s  %s\n' \
  "$version" "$commit" "$maintainer" "$changelog_date" >"$work/debian/changelog"

is_elf() { [ "$(head -c 4 "$1" | od -An -c | tr -d ' ')" = '177ELF' ]; }

# stage PACKAGE COMPONENT: cmake --install of one component, then the finish
stage_pkg() {
  local pkg=$1 comp=$2 root=$stage/$1
  DESTDIR=$root cmake --install "$build" --component "$comp" >/dev/null
  # binaries stripped as dh_strip does: ELF files (the library, the
  # programs) of what they do not need, archives of their debugging sections
  while IFS= read -r -d '' f; do
    if is_elf "$f"; then
      strip --strip-unneeded --remove-section=.comment --remove-section=.note "$f"
    fi
  done < <(find "$root" -type f ! -name '*.a' -print0)
  find "$root" -type f -name '*.a' -exec strip --strip-debug --remove-section=.comment \
       --remove-section=.note --enable-deterministic-archives {} +
  # manual pages compressed; documentation
  find "$root/usr/share/man" -type f -exec gzip -9n {} + 2>/dev/null || true
  local doc=$root/usr/share/doc/$pkg
  mkdir -p "$doc"
  sed "s|@MAINTAINER@|$maintainer|" packaging/debian/copyright >"$doc/copyright"
  gzip -9n <"$work/debian/changelog" >"$doc/changelog.gz"
  # modes: directories and executables 0755, everything else 0644
  find "$root" -type d -exec chmod 0755 {} +
  find "$root" -type f -exec chmod 0644 {} +
  for d in usr/bin usr/libexec usr/share/alloy-sim; do
    if [ -d "$root/$d" ]; then find "$root/$d" -type f -exec chmod 0755 {} +; fi
  done
}

# control PACKAGE DEPENDS : DEBIAN/control (from packaging/debian) and md5sums
control() {
  local pkg=$1 depends=$2 root=$stage/$1 size
  mkdir -p "$root/DEBIAN"
  size=$(du -sk --apparent-size --exclude=DEBIAN "$root" | cut -f1)
  sed -e "s|@VERSION@|$version|g" -e "s|@ARCH@|$arch|g" -e "s|@MAINTAINER@|$maintainer|g" \
      -e "s|@INSTALLED_SIZE@|$size|g" -e "s|@DEPENDS@|$depends|g" \
      -e "/^#/d" "packaging/debian/$pkg.control.in" >"$root/DEBIAN/control"
  (cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z |
     xargs -0 -r md5sum) >"$root/DEBIAN/md5sums"
  chmod 0644 "$root/DEBIAN"/*
}

# shlibs:Depends of the ELF files of a staged package
shlibdeps() {
  local root=$stage/$1 elfs=()
  while IFS= read -r -d '' f; do
    if is_elf "$f"; then elfs+=("-e$f"); fi
  done < <(find "$root" -path "$root/DEBIAN" -prune -o -type f ! -name '*.a' -print0)
  (cd "$work" && dpkg-shlibdeps -O -x"$1" "${elfs[@]}" 2>/dev/null) | sed -n 's/^shlibs:Depends=//p'
}

stage_pkg liballoy0 runtime
stage_pkg liballoy-dev dev
stage_pkg alloy-sim sim
install -m 0644 docs/DEPLOYING.md "$stage/liballoy0/usr/share/doc/liballoy0/DEPLOYING.md"
touch -d "@$SOURCE_DATE_EPOCH" "$stage/liballoy0/usr/share/doc/liballoy0/DEPLOYING.md"

# liballoy0: shlibs, symbols, the ldconfig trigger
soname=$(objdump -p "$stage/liballoy0/usr/$libdir/liballoy.so.0" | awk '/SONAME/ {print $2}')
[ "$soname" = "liballoy.so.0" ] || die "unexpected soname '$soname'"
mkdir -p "$stage/liballoy0/DEBIAN"
echo "liballoy 0 liballoy0 (>= $version)" >"$stage/liballoy0/DEBIAN/shlibs"
(cd "$work" && dpkg-gensymbols -q -pliballoy0 -P"$stage/liballoy0" -v"$version" -c0 \
   -O"$stage/liballoy0/DEBIAN/symbols") || die "dpkg-gensymbols failed"
sed -i '1a\* Build-Depends-Package: liballoy-dev' "$stage/liballoy0/DEBIAN/symbols"
echo "activate-noawait ldconfig" >"$stage/liballoy0/DEBIAN/triggers"

control liballoy0 "$(shlibdeps liballoy0)"
control liballoy-dev ""
control alloy-sim "$(shlibdeps alloy-sim)"

debs=()
for pkg in liballoy0 liballoy-dev alloy-sim; do
  deb=$out/${pkg}_${version}_${arch}.deb
  find "$stage/$pkg" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
  dpkg-deb --root-owner-group -Zxz --build "$stage/$pkg" "$deb" >/dev/null
  debs+=("$deb")
  say "built $deb"
done

if [ "$lintian" -eq 1 ]; then
  command -v lintian >/dev/null || die "lintian is missing (tools/install-deps.sh installs it)"
  say "lintian ${debs[*]##*/}"
  root_opt=()
  [ "$(id -u)" -ne 0 ] || root_opt=(--allow-root)
  if lintian "${root_opt[@]}" --fail-on error "${debs[@]}"; then
    say "lintian: no errors"
  else
    die "lintian found errors"
  fi
fi
printf '%s\n' "${debs[@]}"
