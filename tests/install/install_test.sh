#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# install_test.sh - tests of the `alloy` command and of `cmake --install`.
# One stage per ctest test (see CMakeLists.txt here):
#
#   command   ALLOY_CMD VERSION [ALLOY_SIM]
#       the build tree's alloy: --version, --help, run (stats, exit status,
#       ALLOY_CONF and LD_PRELOAD merging), sim/bench forwarding, bad input
#   tree      CMAKE BUILD_DIR PREFIX WORK SOURCE_DIR
#       cmake --install into PREFIX (fixture for the stages below) and the
#       files it must hold (the manual pages too, the simulator not); a
#       DESTDIR install too
#   find-package  CMAKE PREFIX CONSUMER_SRC WORK VERSION CC
#       a copy of PREFIX moved elsewhere (relocatable), a CMake project with
#       find_package(alloy 0.1) linking alloy::alloy and alloy::alloy_static;
#       both programs run; find_package(alloy 9.9) is refused
#   find-package-cxx  CMAKE PREFIX CONSUMER_PMR_SRC WORK VERSION CXX
#       a relocated copy of PREFIX, a C++ project that asks for C++11 and
#       links alloy::pmr: it must build as C++17 and its program run
#   pkg-config  PREFIX CONSUMER_SRC WORK VERSION CC
#       pkg-config --cflags/--libs alloy, a consumer built with them, run
#   installed   PREFIX WORK VERSION
#       PREFIX/bin/alloy: --version, run, found through PATH, a symlink and a
#       relocated copy of PREFIX, and without the development link
#       liballoy.so; a clear failure for sim and bench (not installed) and
#       without liballoy.so.0
#
# Each failed check prints FAIL and the stage exits 1.
# The single-quoted $VARs below are expanded by the program under test.
# shellcheck disable=SC2016
set -u
stage=$1
shift
# shellcheck source=../common/stage.sh
. "$(dirname "$0")/../common/stage.sh"

# expect_rc WANT NAME CMD... : run CMD, keep its output in $out/$err, check status
expect_rc() {
    local want=$1 name=$2
    shift 2
    out=$("$@" 2>"$tmp_err")
    rc=$?
    err=$(cat "$tmp_err")
    if [ "$rc" -eq "$want" ]; then ok "$name (exit $rc)"; else fail "$name: exit $rc, want $want; stderr: $err"; fi
}

# bad_usage NAME ARGS... : alloy ARGS must exit 2 with one line on stderr,
# "alloy SUBCOMMAND: ..." (or "alloy: ..." when ARGS name no subcommand)
bad_usage() {
    local name=$1 want="alloy: "
    shift
    case "${1:-}" in run | stats | prof | plot | top | settings | names) want="alloy $1: " ;; esac
    expect_rc 2 "bad usage: $name" "$alloy" "$@"
    case "$err" in
        "$want"*) ;;
        *) fail "bad usage: $name: no '$want' message on stderr (got '$err')" ;;
    esac
    [ -z "$out" ] || fail "bad usage: $name: wrote to stdout: $out"
}

# has_report TEXT : TEXT holds alloy's exit-time statistics report: its header
# line (`___ alloy VERSION statistics, pid PID (CMD) ___`) and a byte count
has_report() {
    printf '%s\n' "$1" | grep -Eq '^___ alloy [^ ]+ statistics' &&
        printf '%s\n' "$1" | grep -Eq '^  allocated: +[0-9]'
}

# check_run_basics ALLOY : what every alloy command must do, wherever it lives
check_run_basics() {
    alloy=$1
    expect_rc 0 "run --stats -- /bin/echo hi" env -u ALLOY_CONF "$alloy" run --stats -- /bin/echo hi
    [ "$out" = "hi" ] || fail "run --stats: stdout is '$out', want 'hi'"
    if has_report "$err"; then ok "stats report on stderr"
    else fail "run --stats: no statistics report on stderr: $err"; fi

    # the full report, and a JSON one that `alloy stats` prints as the same tables
    expect_rc 0 "run --stats=full" env -u ALLOY_CONF "$alloy" run --stats=full -- /bin/echo hi
    case "$err" in
    *"statistics (full)"*"heaps:"*"classes:"*) ok "full report with tables" ;;
    *) fail "run --stats=full: no full report on stderr: $err" ;;
    esac
    local json
    json=$(mktemp)
    env -u ALLOY_CONF "$alloy" run --stats=json -- /bin/echo hi 2>"$json" >/dev/null
    expect_rc 0 "stats of a saved JSON report" "$alloy" stats "$json"
    case "$out" in
    "___ alloy "*"statistics (full)"*"classes:"*) ok "alloy stats renders the report" ;;
    *) fail "alloy stats: unexpected output: $out" ;;
    esac
    expect_rc 2 "stats of a missing file" "$alloy" stats "$json.missing"
    rm -f "$json"

    expect_rc 0 "run without --stats" env -u ALLOY_CONF "$alloy" run -- /bin/echo hi
    if has_report "$err"; then fail "stats report printed without --stats"; fi

    expect_rc 7 "exit status passes through" "$alloy" run -- sh -c 'exit 7'
    expect_rc 0 "exit status 0 passes through" "$alloy" run -- true
    expect_rc 137 "death by signal passes through" "$alloy" run -- sh -c 'kill -9 $$'

    # alloy is really loaded in the program
    expect_rc 0 "liballoy mapped in the program" "$alloy" run -- grep -c 'liballoy' /proc/self/maps
    [ "${out:-0}" -gt 0 ] 2>/dev/null || fail "liballoy.so is not mapped in the program (count '$out')"
}

# reports TEXT : how many exit-time reports TEXT holds
reports() { printf '%s\n' "$1" | grep -Ec '^___ alloy [^ ]+ statistics'; }

# check_run_children ALLOY : alloy run --stats reports the process it
# started, and its children only with --follow-children; --stats-file keeps
# the reports out of the program's output
check_run_children() {
    alloy=$1
    local d prog
    d=$(mktemp -d)
    prog=$d/two-children.sh
    printf '#!/bin/bash\n/bin/echo one\n/bin/echo two >&2\nexit 0\n' >"$prog"
    chmod +x "$prog"
    expect_rc 0 "run --stats -- a script with two children" env -u ALLOY_CONF "$alloy" run --stats -- "$prog"
    [ "$(reports "$err")" = 1 ] || fail "run --stats: $(reports "$err") reports, want 1 (the script's): $err"
    expect_rc 0 "run --stats --follow-children" env -u ALLOY_CONF "$alloy" run --stats --follow-children -- "$prog"
    [ "$(reports "$err")" = 3 ] || fail "--follow-children: $(reports "$err") reports, want 3: $err"
    # each report names its process: the script, then its two echo children
    local heads
    heads=$(printf '%s\n' "$err" | grep -E '^___ alloy [^ ]+ statistics' |
        sed -nE 's/^___ alloy [^ ]+ statistics, pid ([0-9]+) \((.*)\) ___$/\2 \1/p')
    [ "$(cut -d' ' -f1 <<<"$heads" | sort | tr '\n' ' ')" = "echo echo two-children.sh " ] &&
        [ "$(cut -d' ' -f2 <<<"$heads" | sort -u | wc -l)" = 3 ] ||
        fail "--follow-children: the reports do not each name their pid and command: '$heads'"
    expect_rc 0 "run --stats=json --stats-file j.%p.json --follow-children" \
        env -u ALLOY_CONF "$alloy" run --stats=json --stats-file "$d/j.%p.json" --follow-children -- "$prog"
    for f in "$d"/j.*.json; do
        python3 -c 'import json, sys; a = json.load(open(sys.argv[1]))["alloy"]
sys.exit(not (str(a["pid"]) == sys.argv[2] and a["cmd"] in ("echo", "two-children.sh")))' \
            "$f" "$(basename "$f" .json | cut -d. -f2)" ||
            fail "--follow-children --stats=json: $f does not name its pid and command"
    done
    expect_rc 0 "run --stats=json --stats-file" env -u ALLOY_CONF "$alloy" run --stats=json --stats-file "$d/r.json" -- "$prog"
    [ "$out" = one ] && [ "$err" = two ] || fail "--stats-file: the program's output is '$out' / '$err'"
    "$alloy" stats --summary "$d/r.json" >/dev/null || fail "--stats-file: alloy stats cannot read $d/r.json"
    expect_rc 0 "run --stats-file (relative) --follow-children" \
        env -u ALLOY_CONF sh -c 'cd "$1" && shift && exec "$@"' sh "$d" "$alloy" run --stats-file 'tree.%p.txt' --follow-children -- "$prog"
    set -- "$d"/tree.*.txt
    [ $# = 3 ] && [ "$err" = two ] || fail "--stats-file with %p and --follow-children: $# files ($*), stderr '$err'"
    for f in "$@"; do has_report "$(cat "$f")" || fail "$f holds no report"; done
    bad_usage "--stats-file over a file that exists" run --stats-file "$prog" -- true
    bad_usage "--follow-children without %p in --stats-file" run --stats-file "$d/x" --follow-children -- true
    bad_usage "--follow-children without --stats" run --follow-children -- true
    bad_usage "--stats-file without a name" run --stats-file -- true
    [ -e "$d/x" ] && fail "a refused --stats-file was created"
    rm -rf "$d"
}

tmp_err=$(mktemp)
trap 'rm -f "$tmp_err"' EXIT

case "$stage" in
command)
    alloy=$1 version=$2 sim=${3:-}
    builddir=$(cd "$(dirname "$alloy")" && pwd -P)

    expect_rc 0 "--version" "$alloy" --version
    [ "$out" = "alloy $version" ] || fail "--version prints '$out', want 'alloy $version'"
    expect_rc 0 "--help" "$alloy" --help
    for word in "alloy run" "--stats" "--conf" "alloy bench" "alloy sim" "--version"; do
        case "$out" in *"$word"*) ;; *) fail "--help does not mention '$word'" ;; esac
    done
    expect_rc 0 "run --help" "$alloy" run --help

    check_run_basics "$alloy"

    expect_rc 0 "LD_PRELOAD is the build tree's liballoy.so.0" env -u LD_PRELOAD "$alloy" run -- sh -c 'printf %s "$LD_PRELOAD"'
    [ "$out" = "$builddir/liballoy.so.0" ] || fail "LD_PRELOAD is '$out', want '$builddir/liballoy.so.0'"
    expect_rc 0 "an LD_PRELOAD already set is kept" env LD_PRELOAD=libm.so.6 "$alloy" run -- sh -c 'printf %s "$LD_PRELOAD"'
    [ "$out" = "$builddir/liballoy.so.0:libm.so.6" ] || fail "LD_PRELOAD is '$out'"

    expect_rc 0 "ALLOY_CONF merged in order" env ALLOY_CONF=decay_ms:5 "$alloy" run --conf tcache:false \
        --conf=batch_policy:clip,return_threshold:2 --stats -- sh -c 'printf "%s %s" "$ALLOY_CONF" $$'
    want="decay_ms:5,tcache:false,batch_policy:clip,return_threshold:2,stats_print:true,stats_print_pid:${out##* }"
    [ "${out% *}" = "$want" ] || fail "ALLOY_CONF is '${out% *}', want '$want'"
    case "$err" in *warn*|*unknown*|*invalid*) fail "alloy warned about the merged ALLOY_CONF: $err" ;; esac
    expect_rc 0 "no ALLOY_CONF set when there is nothing to set" env -u ALLOY_CONF "$alloy" run -- sh -c 'printf %s "${ALLOY_CONF-unset}"'
    [ "$out" = "unset" ] || fail "ALLOY_CONF is '$out', want it unset"
    # a setting from --conf reaches the allocator
    expect_rc 0 "--conf reaches the allocator" env -u ALLOY_CONF "$alloy" run --stats --conf batch_policy:pow2 -- true
    case "$err" in *"batch_policy pow2"*) ;; *) fail "--conf batch_policy:pow2 not in the report: $err" ;; esac

    check_run_children "$alloy"

    expect_rc 127 "command not found" "$alloy" run -- /nonexistent/program
    case "$err" in *"/nonexistent/program"*) ;; *) fail "no message naming the missing program: $err" ;; esac

    bad_usage "no arguments"
    bad_usage "unknown command" frob
    bad_usage "unknown option" --frob
    bad_usage "run with nothing" run
    bad_usage "run without --" run /bin/echo hi
    bad_usage "run -- without a command" run --
    bad_usage "run --stats without --" run --stats
    bad_usage "--conf without a value" run --conf
    bad_usage "--conf followed by --" run --conf -- true
    bad_usage "--conf= empty" run --conf= -- true
    bad_usage "--conf without a colon" run --conf decay_ms -- true
    bad_usage "unknown run option" run --bogus -- true
    bad_usage "stats: unknown option" stats --bogus x.json
    bad_usage "prof: unknown option" prof --bogus x.heap
    bad_usage "plot: unknown option" plot --bogus x.jsonl
    bad_usage "top: not a pid" top abc
    bad_usage "settings: unknown option" settings --bogus
    expect_rc 1 "prof: a missing file" "$alloy" prof /nonexistent.heap
    [ "$err" = "alloy prof: cannot read /nonexistent.heap" ] || fail "prof's message: '$err'"

    if [ -n "$sim" ]; then
        expect_rc 0 "sim --help forwards to alloy-sim" "$alloy" sim --help
        direct=$("$sim" --help 2>&1)
        [ "$out" = "$direct" ] || fail "alloy sim --help differs from alloy-sim --help"
        expect_rc 2 "sim exit status passes through" "$alloy" sim no-such-command
    fi
    if [ -x "$builddir/bench_sizes" ] && [ -x /usr/bin/python3 ]; then
        expect_rc 0 "bench --list forwards to the runner" "$alloy" bench --list
        case "$out" in *"$builddir/liballoy.so"*) ;; *) fail "bench --list does not use this build tree: $out" ;; esac
        expect_rc 2 "bench bad option passes through" "$alloy" bench --no-such-option
    fi
    ;;

tree)
    cmake=$1 build=$2 prefix=$3 work=$4 src=$5
    rm -rf "$prefix" "$work"
    mkdir -p "$work"
    expect_rc 0 "cmake --install --prefix" "$cmake" --install "$build" --prefix "$prefix"
    for f in lib/liballoy.so lib/liballoy.so.0 lib/liballoy.a include/alloy.h \
             include/alloy/arena.h include/alloy/pool.h include/alloy/resource.h include/alloy/pmr.hpp \
             bin/alloy lib/pkgconfig/alloy.pc lib/cmake/alloy/alloyConfig.cmake \
             lib/cmake/alloy/alloyConfigVersion.cmake lib/cmake/alloy/alloyTargets.cmake; do
        [ -e "$prefix/$f" ] || fail "missing $prefix/$f"
    done
    [ -L "$prefix/lib/liballoy.so" ] || fail "lib/liballoy.so is not the soname link"
    [ -x "$prefix/bin/alloy" ] || fail "bin/alloy is not executable"
    for h in "$src"/include/alloy/*.h "$src"/include/alloy/*.hpp; do
        [ -e "$prefix/include/alloy/$(basename "$h")" ] || fail "header $(basename "$h") not installed"
    done
    [ -e "$prefix/lib/liballoy_debug.a" ] && fail "the debug flavour was installed"
    # every library flavour the build made: release and secure, shared and static
    for f in liballoy.so.0 liballoy.a liballoy_secure.so.0 liballoy_secure.so liballoy_secure.a; do
        if [ -e "$build/$f" ]; then
            [ -e "$prefix/lib/$f" ] || fail "$f was built but not installed"
        fi
    done
    [ -e "$build/liballoy_secure.a" ] && [ -e "$build/liballoy_secure.so.0" ] ||
        fail "the build made no secure flavour to check"
    # the manual pages (man/), and no simulator unless asked for (--component sim)
    for f in share/man/man1/alloy.1 share/man/man3/alloy.3; do
        [ -s "$prefix/$f" ] || fail "missing $prefix/$f"
    done
    for f in bin/alloy-sim libexec/alloy-sim share/alloy-sim share/man/man1/alloy-sim.1; do
        [ -e "$prefix/$f" ] && fail "$f installed without --component sim"
    done
    soname=$(objdump -p "$prefix/lib/liballoy.so" 2>/dev/null | awk '/SONAME/ {print $2}')
    [ -z "$soname" ] || [ "$soname" = "liballoy.so.0" ] || fail "SONAME is '$soname'"
    grep -q "^prefix=$prefix\$" "$prefix/lib/pkgconfig/alloy.pc" || fail "alloy.pc does not hold prefix=$prefix"
    # nothing installed may name the source or build tree, or the
    # configure-time prefix (the install chose another)
    if grep -rl -e "$src/include" -e "$build/liballoy" -e "$build/include" -e /usr/local \
            "$prefix/lib/cmake" "$prefix/lib/pkgconfig"; then
        fail "installed CMake/pkg-config files name the build tree or /usr/local"
    fi
    # DESTDIR: files under DESTDIR, contents name the real prefix
    expect_rc 0 "DESTDIR install" env DESTDIR="$work/dd" "$cmake" --install "$build" --prefix /opt/alloy-test
    [ -e "$work/dd/opt/alloy-test/lib/liballoy.so.0" ] || fail "DESTDIR install lacks lib/liballoy.so.0"
    grep -q '^prefix=/opt/alloy-test$' "$work/dd/opt/alloy-test/lib/pkgconfig/alloy.pc" ||
        fail "DESTDIR alloy.pc does not hold prefix=/opt/alloy-test"
    [ -e /opt/alloy-test ] && fail "DESTDIR install wrote outside DESTDIR"
    ;;

find-package)
    cmake=$1 prefix=$2 src=$3 work=$4 version=$5 cc=$6
    rm -rf "$work"
    mkdir -p "$work"
    moved="$work/moved prefix" # relocated, and with a space in its name
    cp -a "$prefix" "$moved"
    expect_rc 0 "configure with find_package(alloy 0.1)" "$cmake" -S "$src" -B "$work/build" \
        -DCMAKE_PREFIX_PATH="$moved" -DCMAKE_C_COMPILER="$cc" -DALLOY_WANT_VERSION=0.1 \
        -DCMAKE_BUILD_TYPE=Release
    [ "$rc" -eq 0 ] || { echo "$out"; echo "$err"; finish; }
    expect_rc 0 "build the consumer" "$cmake" --build "$work/build"
    [ "$rc" -eq 0 ] || { echo "$out"; finish; }
    expect_rc 0 "consumer linked with alloy::alloy" "$work/build/consumer_shared" "$version"
    [ "$out" = "consumer ok $version" ] || fail "consumer_shared printed '$out' ($err)"
    expect_rc 0 "consumer linked with alloy::alloy_static" "$work/build/consumer_static" "$version"
    [ "$out" = "consumer ok $version" ] || fail "consumer_static printed '$out' ($err)"
    if command -v ldd >/dev/null; then
        ldd "$work/build/consumer_shared" | grep -q "$moved/lib/liballoy.so.0" ||
            fail "consumer_shared does not load the relocated liballoy.so.0: $(ldd "$work/build/consumer_shared")"
        ldd "$work/build/consumer_static" | grep -q liballoy && fail "consumer_static depends on liballoy.so"
    fi
    expect_rc 0 "alloy run -- consumer_static" "$prefix/bin/alloy" run --stats -- "$work/build/consumer_static" "$version"
    [ "$out" = "consumer ok $version" ] || fail "under alloy run: '$out'"
    has_report "$err" || fail "no stats report from alloy run -- consumer_static"
    # LD_PRELOAD splits on spaces: a library path with one is refused, clearly
    expect_rc 1 "alloy run from a prefix with a space: refused" "$moved/bin/alloy" run -- true
    case "$err" in *"LD_PRELOAD cannot"*) ;; *) fail "no message about the space: '$err'" ;; esac
    expect_rc 1 "find_package(alloy 9.9) is refused" "$cmake" -S "$src" -B "$work/build-wrong" \
        -DCMAKE_PREFIX_PATH="$moved" -DCMAKE_C_COMPILER="$cc" -DALLOY_WANT_VERSION=9.9
    case "$out$err" in *alloy*) ;; *) fail "no message about alloy's version" ;; esac
    ;;

find-package-cxx)
    cmake=$1 prefix=$2 src=$3 work=$4 version=$5 cxx=$6
    rm -rf "$work"
    mkdir -p "$work"
    moved="$work/moved prefix" # relocated, and with a space in its name
    cp -a "$prefix" "$moved"
    expect_rc 0 "configure a C++ consumer of alloy::pmr with $(basename "$cxx")" "$cmake" -S "$src" \
        -B "$work/build" -DCMAKE_PREFIX_PATH="$moved" -DCMAKE_CXX_COMPILER="$cxx" \
        -DCMAKE_BUILD_TYPE=Release -DCMAKE_EXPORT_COMPILE_COMMANDS=ON
    [ "$rc" -eq 0 ] || { echo "$out"; echo "$err"; finish; }
    expect_rc 0 "build the C++ consumer" "$cmake" --build "$work/build"
    [ "$rc" -eq 0 ] || { echo "$out"; finish; }
    grep -Eq -- '-std=(gnu|c)\+\+17' "$work/build/compile_commands.json" ||
        fail "alloy::pmr did not raise the consumer's C++11 to C++17: $(grep -o -- '-std=[^ ]*' "$work/build/compile_commands.json")"
    grep -qF -- "$moved/include" "$work/build/compile_commands.json" ||
        fail "the consumer does not use the installed headers"
    expect_rc 0 "consumer_pmr runs" "$work/build/consumer_pmr" "$version"
    [ "$out" = "consumer_pmr ok $version" ] || fail "consumer_pmr printed '$out' ($err)"
    if command -v ldd >/dev/null; then
        ldd "$work/build/consumer_pmr" | grep -q "$moved/lib/liballoy.so.0" ||
            fail "consumer_pmr does not load the relocated liballoy.so.0: $(ldd "$work/build/consumer_pmr")"
    fi
    ;;

pkg-config)
    prefix=$1 src=$2 work=$3 version=$4 cc=$5
    rm -rf "$work"
    mkdir -p "$work"
    if ! command -v pkg-config >/dev/null; then
        fail "pkg-config is not installed (Debian: apt-get install pkgconf)"
        finish
    fi
    export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
    expect_rc 0 "pkg-config --modversion alloy" pkg-config --modversion alloy
    [ "$out" = "$version" ] || fail "modversion '$out', want '$version'"
    expect_rc 0 "pkg-config --libs alloy" pkg-config --libs alloy
    libs=$out
    case " $libs " in *" -lalloy "*) ;; *) fail "--libs lacks -lalloy: $libs" ;; esac
    case " $libs " in *" -L$prefix/lib "*) ;; *) fail "--libs lacks -L$prefix/lib: $libs" ;; esac
    expect_rc 0 "pkg-config --static --libs alloy" pkg-config --static --libs alloy
    case " $out " in *" -pthread "*) ;; *) fail "--static --libs lacks -pthread: $out" ;; esac
    expect_rc 0 "pkg-config --cflags alloy" pkg-config --cflags alloy
    cflags=$out
    case " $cflags " in *" -I$prefix/include "*) ;; *) fail "--cflags lacks -I$prefix/include: '$cflags'" ;; esac
    libdir=$(pkg-config --variable=libdir alloy)
    # shellcheck disable=SC2086 # word splitting of the flags is intended
    expect_rc 0 "compile the consumer with pkg-config's flags (-std=c11 -Werror)" "$cc" -std=c11 -pedantic \
        -Wall -Wextra -Wshadow -Wstrict-prototypes -Werror $cflags "$src/consumer.c" -o "$work/consumer_pc" \
        $libs -Wl,-rpath,"$libdir"
    [ "$rc" -eq 0 ] || { echo "$err"; finish; }
    expect_rc 0 "run the pkg-config consumer" "$work/consumer_pc" "$version"
    [ "$out" = "consumer ok $version" ] || fail "consumer_pc printed '$out' ($err)"
    # static: liballoy.a and pkg-config's --static flags
    # shellcheck disable=SC2046,SC2086
    expect_rc 0 "link the consumer statically with liballoy.a" "$cc" $cflags "$src/consumer.c" \
        -o "$work/consumer_pc_static" -Wl,-Bstatic -lalloy -Wl,-Bdynamic \
        $(pkg-config --static --libs-only-L --libs-only-other alloy)
    [ "$rc" -eq 0 ] || { echo "$err"; finish; }
    expect_rc 0 "run the static pkg-config consumer" "$work/consumer_pc_static" "$version"
    [ "$out" = "consumer ok $version" ] || fail "consumer_pc_static printed '$out' ($err)"
    ;;

installed)
    prefix=$1 work=$2 version=$3
    rm -rf "$work"
    mkdir -p "$work"
    alloy="$prefix/bin/alloy"
    expect_rc 0 "installed alloy --version" "$alloy" --version
    [ "$out" = "alloy $version" ] || fail "--version prints '$out'"
    check_run_basics "$alloy"
    real_prefix=$(cd "$prefix" && pwd -P)
    expect_rc 0 "LD_PRELOAD is the installed liballoy.so.0" env -u LD_PRELOAD "$alloy" run -- sh -c 'printf %s "$LD_PRELOAD"'
    [ "$out" = "$real_prefix/lib/liballoy.so.0" ] || fail "LD_PRELOAD is '$out', want '$real_prefix/lib/liballoy.so.0'"
    # through PATH and through a symlink, it still finds its library
    mkdir -p "$work/bin"
    ln -s "$alloy" "$work/bin/alloy-link"
    expect_rc 0 "alloy found through PATH and a symlink" env PATH="$work/bin:$PATH" alloy-link run -- sh -c 'printf %s "$LD_PRELOAD"'
    [ "$out" = "$real_prefix/lib/liballoy.so.0" ] || fail "through a symlink LD_PRELOAD is '$out'"
    expect_rc 1 "sim is not installed: clear failure" "$alloy" sim --help
    case "$err" in *"alloy sim"*) ;; *) fail "no message from alloy sim: '$err'" ;; esac
    expect_rc 1 "bench is not installed: clear failure" "$alloy" bench --list
    case "$err" in *"alloy bench"*) ;; *) fail "no message from alloy bench: '$err'" ;; esac
    # a copy of the prefix elsewhere uses its own library
    cp -a "$prefix" "$work/relocated"
    expect_rc 0 "relocated prefix" env -u LD_PRELOAD "$work/relocated/bin/alloy" run -- sh -c 'printf %s "$LD_PRELOAD"'
    [ "$out" = "$(cd "$work/relocated" && pwd -P)/lib/liballoy.so.0" ] || fail "relocated: LD_PRELOAD is '$out'"
    # the runtime alone (liballoy.so.0, without the development link
    # liballoy.so) is enough: that is what the liballoy0 package ships
    cp -a "$prefix" "$work/runtime-only"
    rm "$work/runtime-only/lib/liballoy.so"
    expect_rc 0 "run without the liballoy.so link" "$work/runtime-only/bin/alloy" run --stats -- /bin/echo hi
    [ "$out" = "hi" ] && has_report "$err" || fail "runtime-only prefix: '$out' / $err"
    expect_rc 0 "settings without the liballoy.so link" "$work/runtime-only/bin/alloy" settings
    # without its library the command says so
    cp "$alloy" "$work/bin/alloy-alone"
    expect_rc 1 "no liballoy.so.0: clear failure" "$work/bin/alloy-alone" run -- true
    case "$err" in *liballoy.so.0*) ;; *) fail "no message naming liballoy.so.0: '$err'" ;; esac
    ;;

*)
    echo "install_test.sh: unknown stage '$stage'" >&2
    exit 2
    ;;
esac
finish
