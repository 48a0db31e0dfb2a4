#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# package_test.sh - tests of the Debian packages (tools/package.sh), one
# stage per ctest test (see CMakeLists.txt here):
#
#   build    SRC BUILD DEBS VERSION
#       tools/package.sh --no-lintian into BUILD/DEBS (fixture for the rest):
#       three packages, their version, and what each holds and does not hold
#   lintian  DEBS
#       lintian: no error and no warning
#   install  SRC BUILD DEBS WORK VERSION CC CMAKE
#       dpkg --root into a scratch root (never into /): the packages install
#       with their dependencies checked; alloy run, LD_PRELOAD, alloy-sim and
#       the manual pages work from there; a consumer builds against the
#       installed -dev package with pkg-config and with find_package, shared
#       and static, and a C++ one with alloy::pmr; nothing installed names
#       the build or source tree; the
#       packages purge cleanly and leave nothing behind
#   deploy   SRC DEBS WORK CC
#       the recipes of docs/DEPLOYING.md, on the packaged library in a
#       scratch root: LD_PRELOAD for one program and /proc/PID/maps, a
#       systemd drop-in (systemd-analyze verify, and its command line run by
#       hand with its Environment=), /etc/ld.so.preload (only inside a private
#       mount namespace with /etc overlaid, so the machine's /etc is never
#       written; skipped when that cannot be set up), static linking, and the
#       rollback of each
#
# Each failed check prints FAIL, and the stage exits 1.  The scratch root is
# removed at exit; ALLOY_KEEP_ROOT=1 keeps it.
# The single-quoted $VARs below are expanded by the program under test.
# shellcheck disable=SC2016
set -u
stage=$1
shift
# shellcheck source=../common/stage.sh
. "$(dirname "$0")/../common/stage.sh"
tmp_err=$(mktemp)
cleanup_dirs=()
cleanup() {
    rm -f "$tmp_err"
    if [ "${ALLOY_KEEP_ROOT:-0}" != 1 ]; then
        for d in "${cleanup_dirs[@]}"; do rm -rf "$d"; done
    fi
}
trap cleanup EXIT

# expect_rc WANT NAME CMD... : run CMD, keep its output in $out/$err, check status
expect_rc() {
    local want=$1 name=$2
    shift 2
    out=$("$@" 2>"$tmp_err")
    rc=$?
    err=$(cat "$tmp_err")
    if [ "$rc" -eq "$want" ]; then ok "$name (exit $rc)"; else fail "$name: exit $rc, want $want; stderr: $err"; fi
}
# has_report TEXT : TEXT holds alloy's statistics report: its header line
# (`___ alloy VERSION statistics, pid PID (CMD) ___`) and a byte count
has_report() {
    printf '%s\n' "$1" | grep -Eq '^___ alloy [^ ]+ statistics' &&
        printf '%s\n' "$1" | grep -Eq '^ *allocated: +[0-9]'
}

packages=(liballoy0 liballoy-dev alloy-sim)
arch=$(dpkg --print-architecture)
triplet=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)

# setup_root ROOT DEB... : an empty root with a dpkg database that knows the
# packages the DEBs depend on (their status entries copied from this
# machine's database, with no files), so that dpkg checks the dependencies
# for real.  Sets DPKG, the dpkg command for that root.
setup_root() {
    local root=$1 deps d
    shift
    rm -rf "$root"
    mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates" "$root/var/lib/dpkg/triggers"
    : >"$root/var/lib/dpkg/available"
    deps=$(for d in "$@"; do dpkg-deb -f "$d" Depends; done | tr ',|' '\n' |
           sed 's/^ *//; s/[ (:].*//' | grep -v '^$' | sort -u)
    for d in "${packages[@]}"; do deps=$(printf '%s\n' "$deps" | grep -vx "$d"); done
    # shellcheck disable=SC2086
    dpkg-query -s $deps >"$root/var/lib/dpkg/status" 2>/dev/null ||
        fail "a dependency of the packages is not installed here: $deps"
    # shellcheck disable=SC2086
    for d in $(dpkg-query -W -f='${binary:Package}\n' $deps 2>/dev/null); do
        : >"$root/var/lib/dpkg/info/$d.list"
    done
    # dpkg needs root; elsewhere fakeroot stands in.  The path-includes undo
    # a path-exclude of documentation (as Debian's container images set).
    DPKG=(dpkg "--root=$root" "--path-include=/usr/share/man/*" "--path-include=/usr/share/doc/*")
    if [ "$(id -u)" -ne 0 ]; then
        command -v fakeroot >/dev/null || { fail "not root, and fakeroot is missing"; finish; }
        DPKG=(fakeroot "${DPKG[@]}" --force-not-root)
    fi
}

status_of() { dpkg-query "--admindir=$1/var/lib/dpkg" -W -f='${db:Status-Abbrev}' "$2" 2>/dev/null; }

case "$stage" in
build)
    src=$1 build=$2 debs=$3 version=$4
    rm -rf "$debs"
    expect_rc 0 "tools/package.sh" "$src/tools/package.sh" --no-deps --no-lintian --build-dir "$build" --out "$debs"
    [ "$rc" -eq 0 ] || { echo "$err" | tail -30; finish; }
    for p in "${packages[@]}"; do
        deb=$debs/${p}_${version}_${arch}.deb
        [ -f "$deb" ] || { fail "no $deb"; continue; }
        [ "$(dpkg-deb -f "$deb" Package)" = "$p" ] || fail "$deb: Package is not $p"
        [ "$(dpkg-deb -f "$deb" Version)" = "$version" ] || fail "$deb: Version is not the project's $version"
        dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|' >"$debs/$p.files"
    done
    # has PACKAGE FILE... / lacks PACKAGE PATTERN...
    has() { local p=$1 f; shift; for f; do grep -qx -- "$f" "$debs/$p.files" || fail "$p lacks $f"; done; }
    lacks() { local p=$1 f; shift; for f; do ! grep -q -- "$f" "$debs/$p.files" || fail "$p holds $f"; done; }
    L=/usr/lib/$triplet
    has liballoy0 "$L/liballoy.so.0" "$L/liballoy.so.0.1.0" /usr/bin/alloy /usr/share/man/man1/alloy.1.gz \
        /usr/share/man/man3/alloy.3.gz /usr/share/doc/liballoy0/copyright /usr/share/doc/liballoy0/changelog.gz \
        /usr/share/doc/liballoy0/DEPLOYING.md
    lacks liballoy0 'liballoy\.so$' '\.a$' '/include/' 'alloy-sim' 'liballoy_debug'
    has liballoy-dev "$L/liballoy.so" "$L/liballoy.a" /usr/include/alloy.h /usr/include/alloy/ctl.h \
        /usr/include/alloy/arena.h "$L/pkgconfig/alloy.pc" "$L/cmake/alloy/alloyConfig.cmake" \
        "$L/cmake/alloy/alloyConfigVersion.cmake" "$L/cmake/alloy/alloyTargets.cmake"
    lacks liballoy-dev 'liballoy\.so\.0' '/bin/' 'liballoy_debug'
    has alloy-sim /usr/bin/alloy-sim /usr/libexec/alloy-sim/alloy-sim /usr/libexec/alloy-sim/alloy-sim-real \
        /usr/share/alloy-sim/figures.py /usr/share/alloy-sim/tables.py /usr/share/man/man1/alloy-sim.1.gz
    for h in "$src"/include/alloy/*.h "$src"/include/alloy/*.hpp; do
        [ -e "$h" ] && has liballoy-dev "/usr/include/alloy/$(basename "$h")"
    done
    deb0=$debs/liballoy0_${version}_${arch}.deb
    dpkg-deb -I "$deb0" shlibs | grep -qx "liballoy 0 liballoy0 (>= $version)" || fail "liballoy0: no shlibs entry"
    dpkg-deb -I "$deb0" triggers | grep -qx "activate-noawait ldconfig" || fail "liballoy0: no ldconfig trigger"
    dpkg-deb -I "$deb0" symbols | grep -q '^ alloy_malloc@Base' || fail "liballoy0: alloy_malloc not in symbols"
    case $(dpkg-deb -f "$deb0" Depends) in *libc6*) ;; *) fail "liballoy0 does not depend on libc6" ;; esac
    [ "$(dpkg-deb -f "$debs/liballoy-dev_${version}_${arch}.deb" Depends)" = "liballoy0 (= $version)" ] ||
        fail "liballoy-dev does not depend on liballoy0 (= $version)"
    [ "$fails" -eq 0 ] && ok "the packages hold what they should"
    ;;

lintian)
    debs=$1
    command -v lintian >/dev/null || { fail "lintian is not installed (tools/install-deps.sh)"; finish; }
    root_opt=()
    [ "$(id -u)" -ne 0 ] || root_opt=(--allow-root)
    expect_rc 0 "lintian --fail-on error,warning" lintian "${root_opt[@]}" --fail-on error,warning "$debs"/*.deb
    [ -z "$out" ] || echo "$out"
    ;;

install)
    src=$1 build=$2 debs=$3 work=$4 version=$5 cc=$6 cmake=$7
    rm -rf "$work"
    mkdir -p "$work"
    cleanup_dirs+=("$work")
    root=$work/root
    all_debs=("$debs"/*_"${version}"_"${arch}".deb)
    setup_root "$root" "${all_debs[@]}"
    expect_rc 0 "dpkg -i the three packages into $root" "${DPKG[@]}" -i "${all_debs[@]}"
    [ "$rc" -eq 0 ] || { echo "$out"; finish; }
    for p in "${packages[@]}"; do
        [ "$(status_of "$root" "$p")" = "ii " ] || fail "$p is not installed ('$(status_of "$root" "$p")')"
    done
    L=$root/usr/lib/$triplet
    lib=$L/liballoy.so.0
    alloy=$root/usr/bin/alloy
    real_lib=$(readlink -f "$lib")

    # the command and the library
    expect_rc 0 "installed alloy --version" "$alloy" --version
    [ "$out" = "alloy $version" ] || fail "--version prints '$out'"
    expect_rc 0 "alloy run --stats -- /bin/echo hi" env -u ALLOY_CONF "$alloy" run --stats -- /bin/echo hi
    [ "$out" = hi ] && has_report "$err" || fail "alloy run --stats: '$out' / $err"
    expect_rc 0 "alloy run preloads the installed library" env -u LD_PRELOAD "$alloy" run -- sh -c 'printf %s "$LD_PRELOAD"'
    [ "$(readlink -f "$out")" = "$real_lib" ] || fail "LD_PRELOAD is '$out', want $lib"
    prog='import collections, json
d = collections.defaultdict(list)
for i in range(200000): d[i % 997].append(str(i) * (i % 7))
print(sum(len(v) for v in d.values()), len(json.dumps(d)))
print(any("liballoy" in l for l in open("/proc/self/maps")))'
    expect_rc 0 "python3 on glibc" python3 -c "$prog"
    want=$(printf '%s\n' "$out" | head -1)
    expect_rc 0 "python3 under LD_PRELOAD=<root>/usr/lib/$triplet/liballoy.so.0" env LD_PRELOAD="$lib" python3 -c "$prog"
    [ "$(printf '%s\n' "$out" | head -1)" = "$want" ] || fail "python3 printed '$out' under alloy, '$want' on glibc"
    [ "$(printf '%s\n' "$out" | tail -1)" = True ] || fail "liballoy is not mapped in python3"
    expect_rc 0 "sort under the installed library" env LD_PRELOAD="$lib" sh -c 'seq 50000 | sort -R | sort -n | tail -1'
    [ "$out" = 50000 ] || fail "sort printed '$out'"
    expect_rc 0 "installed alloy settings" "$alloy" settings
    [ "$(printf '%s\n' "$out" | grep -c '^[^ ]')" -gt 10 ] || fail "alloy settings lists too few keys"
    expect_rc 1 "alloy bench: not in the packages, says so" "$alloy" bench --list
    case "$err" in *"alloy bench"*) ;; *) fail "no message from alloy bench: '$err'" ;; esac

    # alloy-sim: its link, its harness in libexec, figures.py from /usr/share
    expect_rc 0 "alloy-sim geometry" "$root/usr/bin/alloy-sim" geometry --out "$work/geo"
    case "$out$err" in *"clip=80 guard=0 pow2=0"*) ;; *) fail "alloy-sim geometry: $out $err" ;; esac
    expect_rc 0 "alloy sim --help" "$alloy" sim --help
    [ "$out" = "$("$root/usr/bin/alloy-sim" --help 2>&1)" ] || fail "alloy sim --help differs from alloy-sim --help"
    expect_rc 0 "alloy-sim validate (alloy-sim-real from libexec)" "$root/usr/bin/alloy-sim" validate \
        --out "$work/val" --seeds 1 --workloads sat384 --ops 20000 --no-progress
    # one run per policy validate checks: compact, clip and guard
    case "$err" in *"3 of 3 real runs match"*) ;; *) fail "validate: $err" ;; esac
    if /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
        expect_rc 0 "alloy-sim sweep with figures" "$root/usr/bin/alloy-sim" sweep --out "$work/sweep" \
            --policy clip,guard --threshold 2 --budget 256K --cap 1024 --seeds 1 --workloads sat384 \
            --ops 20000 --no-progress --jobs 2
        case "$err" in *warning*) fail "sweep warned: $err" ;; esac
        [ "$(ls "$work/sweep"/fig*.png 2>/dev/null | wc -l)" -eq 4 ] || fail "sweep drew $(ls "$work/sweep"/fig*.png 2>/dev/null | wc -l) figures, want 4"
    else
        skip "python3-matplotlib is not installed: the sweep's figures are not checked"
    fi

    # the manual pages, as installed
    M=$root/usr/share/man
    expect_rc 0 "the installed manual pages" bash "$src/tests/package/check_man.sh" "$alloy" "$lib" \
        "$M/man1/alloy.1.gz" "$M/man3/alloy.3.gz" "$M/man1/alloy-sim.1.gz"
    [ "$rc" -eq 0 ] || echo "$out"
    for pg in "1 alloy" "3 alloy" "1 alloy-sim"; do
        # shellcheck disable=SC2086
        w=$(man -M "$M" -w $pg 2>/dev/null)
        [ "$w" = "$M/man${pg%% *}/${pg#* }.${pg%% *}.gz" ] || fail "man -M ... $pg finds '$w'"
    done

    # a consumer of the -dev package: pkg-config, shared and static
    export PKG_CONFIG_SYSROOT_DIR=$root PKG_CONFIG_LIBDIR=$L/pkgconfig
    export PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1 PKG_CONFIG_ALLOW_SYSTEM_LIBS=1
    expect_rc 0 "pkg-config --modversion alloy" pkg-config --modversion alloy
    [ "$out" = "$version" ] || fail "pkg-config: version '$out'"
    cflags=$(pkg-config --cflags alloy) libs=$(pkg-config --libs alloy)
    case "$cflags $libs" in *"-I$root/usr/include"*"-L$L"*) ;; *) fail "pkg-config: '$cflags' '$libs'" ;; esac
    consumer=$src/tests/install/consumer
    # shellcheck disable=SC2086
    expect_rc 0 "build a consumer with pkg-config" "$cc" -std=c11 -Wall -Werror $cflags "$consumer/consumer.c" \
        -o "$work/consumer_pc" $libs
    expect_rc 0 "run it on the installed library" env LD_LIBRARY_PATH="$L" "$work/consumer_pc" "$version"
    [ "$out" = "consumer ok $version" ] || fail "consumer_pc printed '$out' ($err)"
    LD_LIBRARY_PATH=$L ldd "$work/consumer_pc" | grep -q "$L/liballoy.so.0" || fail "consumer_pc does not load $lib"
    # shellcheck disable=SC2046,SC2086
    expect_rc 0 "link a consumer statically (liballoy.a)" "$cc" $cflags "$consumer/consumer.c" \
        -o "$work/consumer_static" -Wl,-Bstatic -lalloy -Wl,-Bdynamic $(pkg-config --static --libs-only-L --libs-only-other alloy)
    expect_rc 0 "run the static consumer" "$work/consumer_static" "$version"
    [ "$out" = "consumer ok $version" ] || fail "consumer_static printed '$out' ($err)"
    unset PKG_CONFIG_SYSROOT_DIR PKG_CONFIG_LIBDIR
    # ... and find_package(alloy 0.1)
    expect_rc 0 "configure a consumer with find_package(alloy 0.1)" "$cmake" -S "$consumer" -B "$work/cmake" \
        -DCMAKE_PREFIX_PATH="$root/usr" -DCMAKE_C_COMPILER="$cc" -DALLOY_WANT_VERSION=0.1 -DCMAKE_BUILD_TYPE=Release
    [ "$rc" -eq 0 ] || echo "$out"
    grep -q "^alloy_DIR:PATH=$L/cmake/alloy\$" "$work/cmake/CMakeCache.txt" ||
        fail "find_package did not find the installed package: $(grep alloy_DIR "$work/cmake/CMakeCache.txt")"
    expect_rc 0 "build it" "$cmake" --build "$work/cmake"
    expect_rc 0 "run consumer_shared (alloy::alloy)" "$work/cmake/consumer_shared" "$version"
    [ "$out" = "consumer ok $version" ] || fail "consumer_shared printed '$out' ($err)"
    expect_rc 0 "run consumer_static (alloy::alloy_static)" "$work/cmake/consumer_static" "$version"
    [ "$out" = "consumer ok $version" ] || fail "consumer_static printed '$out' ($err)"
    # ... and the C++ one, alloy::pmr (alloy/pmr.hpp), when the tree has it
    if [ -d "$src/tests/install/consumer_pmr" ]; then
        expect_rc 0 "configure the C++ consumer (alloy::pmr)" "$cmake" -S "$src/tests/install/consumer_pmr" \
            -B "$work/cmake-pmr" -DCMAKE_PREFIX_PATH="$root/usr" -DCMAKE_BUILD_TYPE=Release
        [ "$rc" -eq 0 ] || echo "$out"
        expect_rc 0 "build it" "$cmake" --build "$work/cmake-pmr"
        expect_rc 0 "run consumer_pmr" "$work/cmake-pmr/consumer_pmr" "$version"
        [ "$out" = "consumer_pmr ok $version" ] || fail "consumer_pmr printed '$out' ($err)"
    fi

    # nothing installed names the tree it was built from
    for t in "$(cd "$src" && pwd -P)" "$(cd "$build" && pwd -P)"; do
        hits=$(grep -rlaF -- "$t" "$root/usr" 2>/dev/null)
        [ -z "$hits" ] || fail "installed files name $t: $hits"
    done

    # removal: purge all three; nothing but dpkg's database is left
    expect_rc 0 "dpkg --purge the three packages" "${DPKG[@]}" --purge "${packages[@]}"
    for p in "${packages[@]}"; do
        s=$(status_of "$root" "$p")
        [ -z "$s" ] || [ "$s" = "un " ] || [ "$s" = "pn " ] || fail "$p is still there after purge ('$s')"
    done
    left=$(cd "$root" && find . -mindepth 1 -path ./var -prune -o -print)
    [ -z "$left" ] || fail "left behind after purge: $left"
    [ "$fails" -eq 0 ] && ok "purged cleanly"
    ;;

deploy)
    src=$1 debs=$2 work=$3 cc=$4
    rm -rf "$work"
    mkdir -p "$work"
    cleanup_dirs+=("$work")
    root=$work/root
    setup_root "$root" "$debs"/liballoy0_*.deb "$debs"/liballoy-dev_*.deb
    expect_rc 0 "dpkg -i liballoy0 liballoy-dev into $root" "${DPKG[@]}" -i "$debs"/liballoy0_*.deb "$debs"/liballoy-dev_*.deb
    [ "$rc" -eq 0 ] || { echo "$out"; finish; }
    L=$root/usr/lib/$triplet
    lib=$L/liballoy.so.0
    alloy=$root/usr/bin/alloy

    # maps_has PID : the process maps liballoy (DEPLOYING.md, "Which allocator is a process using?")
    maps_has() { grep -q 'liballoy\.so' "/proc/$1/maps" 2>/dev/null; }
    # start_bg PROG CMD... : start CMD in the background, and wait until the
    # process is PROG (CMD may be env ... PROG) and the dynamic loader has
    # mapped libc, so that any preloaded library is mapped too; sets bg
    start_bg() {
        local want
        want=$(readlink -f "$(command -v "$1")")
        shift
        "$@" &
        bg=$!
        for _ in $(seq 100); do
            [ "$(readlink "/proc/$bg/exe" 2>/dev/null)" = "$want" ] &&
                grep -q 'libc\.so' "/proc/$bg/maps" 2>/dev/null && return 0
            sleep 0.05
        done
        fail "$* did not start"
    }

    # 1. LD_PRELOAD for one program; confirm in /proc/PID/maps; roll back
    start_bg sleep env LD_PRELOAD="$lib" sleep 30
    if maps_has "$bg"; then ok "LD_PRELOAD: liballoy in /proc/$bg/maps"; else fail "LD_PRELOAD: no liballoy in /proc/$bg/maps"; fi
    kill "$bg" 2>/dev/null; wait "$bg" 2>/dev/null
    start_bg sleep sleep 30
    if maps_has "$bg"; then fail "without LD_PRELOAD, liballoy is still mapped"; else ok "rollback: without LD_PRELOAD, glibc's malloc"; fi
    kill "$bg" 2>/dev/null; wait "$bg" 2>/dev/null
    expect_rc 0 "alloy run --stats" "$alloy" run --stats -- /bin/true
    has_report "$err" || fail "alloy run --stats printed no report"
    expect_rc 0 "ALLOY_CONF=stats_print:true under LD_PRELOAD" env LD_PRELOAD="$lib" ALLOY_CONF=stats_print:true /bin/true
    has_report "$err" || fail "no report from stats_print:true"

    # 2. a systemd drop-in: verify it, then run its command line with its environment
    units=$work/units
    mkdir -p "$units/alloy-demo.service.d"
    printf '[Unit]\nDescription=alloy deployment test\n\n[Service]\nExecStart=/bin/sleep 30\n' \
        >"$units/alloy-demo.service"
    printf '[Service]\nEnvironment=LD_PRELOAD=%s\nEnvironment=ALLOY_CONF=stats_print:true\n' "$lib" \
        >"$units/alloy-demo.service.d/alloy.conf"
    if command -v systemd-analyze >/dev/null; then
        expect_rc 0 "systemd-analyze verify the unit with its drop-in" \
            env SYSTEMD_UNIT_PATH="$units:" systemd-analyze verify alloy-demo.service
        [ -z "$err" ] || fail "systemd-analyze verify: $err"
        # it reads the drop-in: a typo there is reported
        printf 'Enviroment=X=1\n' >>"$units/alloy-demo.service.d/alloy.conf"
        env SYSTEMD_UNIT_PATH="$units:" systemd-analyze verify alloy-demo.service 2>"$tmp_err"
        grep -q "Unknown key 'Enviroment'" "$tmp_err" || fail "systemd-analyze verify does not read the drop-in"
        sed -i '/^Enviroment=/d' "$units/alloy-demo.service.d/alloy.conf"
    else
        skip "systemd-analyze is not installed: the drop-in is not verified"
    fi
    # the service's command line, with the drop-in's Environment= lines
    mapfile -t envs < <(sed -n 's/^Environment=//p' "$units/alloy-demo.service.d/alloy.conf")
    read -r -a execstart < <(sed -n 's/^ExecStart=//p' "$units/alloy-demo.service")
    start_bg "${execstart[0]}" env "${envs[@]}" "${execstart[@]}"
    if maps_has "$bg"; then ok "the service's command line with the drop-in's environment runs on alloy"
    else fail "the service's command line does not map liballoy"; fi
    kill "$bg" 2>/dev/null; wait "$bg" 2>/dev/null
    # rollback: the drop-in removed, the unit still verifies and runs on glibc
    rm -r "$units/alloy-demo.service.d"
    if command -v systemd-analyze >/dev/null; then
        expect_rc 0 "rollback: the unit without the drop-in verifies" \
            env SYSTEMD_UNIT_PATH="$units:" systemd-analyze verify alloy-demo.service
    fi
    start_bg "${execstart[0]}" "${execstart[@]}"
    if maps_has "$bg"; then fail "rollback: the service still maps liballoy"; else ok "rollback: the service on glibc"; fi
    kill "$bg" 2>/dev/null; wait "$bg" 2>/dev/null

    # 3. /etc/ld.so.preload, only in a private mount namespace whose /etc is an
    # overlay: the file is written into the overlay's upper directory before
    # the mount, so nothing is ever written into the machine's /etc
    ns_check() { # UPPER CMD... : run CMD with /etc = overlay(/etc, UPPER)
        local upper=$1
        shift
        mkdir -p "$upper" "$upper.work"
        unshare -m --propagation private sh -c '
            mount -t overlay overlay -o "lowerdir=/etc,upperdir=$0,workdir=$0.work" /etc || exit 97
            [ "$(findmnt -n -o FSTYPE /etc)" = overlay ] || exit 98
            exec "$@"' "$upper" "$@"
    }
    if [ "$(id -u)" -eq 0 ] && command -v unshare >/dev/null && ns_check "$work/probe" true 2>/dev/null; then
        mkdir -p "$work/on"
        echo "$lib" >"$work/on/ld.so.preload"
        expect_rc 0 "/etc/ld.so.preload: a program started without LD_PRELOAD" \
            ns_check "$work/on" env -u LD_PRELOAD grep -c 'liballoy\.so' /proc/self/maps
        [ "${out:-0}" -gt 0 ] 2>/dev/null || fail "/etc/ld.so.preload: liballoy not mapped ('$out')"
        expect_rc 0 "/etc/ld.so.preload: python3 runs" ns_check "$work/on" env -u LD_PRELOAD python3 -c 'print(6*7)'
        [ "$out" = 42 ] || fail "python3 under /etc/ld.so.preload printed '$out'"
        # a preload naming a library that is gone: every program warns, and runs
        mkdir -p "$work/gone"
        echo "$L/liballoy.so.0-removed" >"$work/gone/ld.so.preload"
        expect_rc 0 "/etc/ld.so.preload naming a missing library" ns_check "$work/gone" /bin/echo still-runs
        [ "$out" = still-runs ] || fail "with a missing preload, echo printed '$out'"
        case "$err" in *"cannot be preloaded"*) ok "ld.so warns: ${err%%$'\n'*}" ;;
            *) fail "no ld.so warning for a missing preload: '$err'" ;; esac
        # rollback: without the file, programs are on glibc again
        mkdir -p "$work/off"
        expect_rc 1 "rollback: /etc/ld.so.preload removed" ns_check "$work/off" grep -c 'liballoy\.so' /proc/self/maps
        if [ -e /etc/ld.so.preload ] && grep -qF "$work" /etc/ld.so.preload; then
            fail "the machine's /etc/ld.so.preload names the test"
        else
            ok "the machine's /etc/ld.so.preload was not touched"
        fi
    else
        skip "not root, or no private mount namespace with an overlay here: /etc/ld.so.preload is not checked"
    fi

    # 4. static linking: no liballoy.so in the program, alloy inside it
    expect_rc 0 "link statically with liballoy.a" "$cc" -I"$root/usr/include" "$src/tests/install/consumer/consumer.c" \
        -o "$work/static_app" "$L/liballoy.a" -pthread
    if ldd "$work/static_app" | grep -q liballoy; then fail "the static program depends on liballoy.so"; fi
    nm "$work/static_app" | grep -q ' T alloy_malloc$' || fail "the static program has no alloy_malloc"
    expect_rc 0 "the static program, stats_print:true" env ALLOY_CONF=stats_print:true "$work/static_app"
    has_report "$err" || fail "the static program printed no alloy report"
    ;;

*)
    echo "package_test.sh: unknown stage '$stage'" >&2
    exit 2
    ;;
esac
finish
