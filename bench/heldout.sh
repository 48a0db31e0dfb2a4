#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# heldout.sh - six programs from mimalloc-bench that are not in this
# repository (cfrac, espresso, mstress, larson, xmalloc-test, cache-scratch),
# built from a mimalloc-bench source checkout and run under LD_PRELOAD with
# each library given, for docs/HARDENING.md ("Held-out programs"):
#  1. builds the six into OUTDIR/bin with gcc and g++ -O2 and the defines
#     mimalloc-bench's bench/CMakeLists.txt gives each (no code of theirs is
#     in this repository: it is read from SRCDIR);
#  2. runs each program with each library, interleaved (every round runs
#     every program with every library, the libraries in an order rotated
#     by one each round), ROUNDS rounds, with arguments scaled down from
#     mimalloc-bench's bench.sh so that a run takes 0.3-2 s on a 2-core
#     machine (THREADS: the CPU count, as bench.sh's procs):
#       cfrac  8539734222673567172606511345051136291 (a 37-digit product of
#              two primes; bench.sh's 44-digit number takes 8-12 s)
#       espresso -Dexpand -s largest.espresso (the expand step only; the
#              whole minimisation takes 8-10 s)
#       mstress THREADS 50 100 (bench.sh: 50 25)
#       larson 1 8 1000 5000 100 4141 THREADS (bench.sh: 5 seconds; it
#              sleeps 2 s more before it exits)
#       xmalloc-test -w THREADS -t 1 -s 64 (bench.sh: -t 5)
#       cache-scratch THREADS 1000 1 1000000 THREADS (bench.sh: 2000000)
#     measuring wall time (bash's EPOCHREALTIME), CPU time (user + system)
#     and peak RSS (/usr/bin/time -f %M).  CPU time moves less than wall time
#     when other programs load the machine.  larson and xmalloc-test run for
#     a fixed time (so their CPU time says nothing): their "time" is
#     the relative time each prints, as bench.sh reads it (larson: 10^9 /
#     operations per second; xmalloc-test: 100 / millions of frees per
#     second), lower is better as for the others;
#  3. checks every run: exit status 0 and the output a good run prints
#     (cfrac's factorization, espresso's cost after expand, mstress's last
#     iteration, larson's and xmalloc-test's relative time); a run that fails
#     is reported, with the end of its output, and is not a timing;
#  4. prints, per program, a Markdown table of each library's median time,
#     CPU time and peak RSS (with the range over the rounds) and its ratio to
#     the first library's, then per library the geometric mean of its time,
#     CPU time and RSS ratios over the programs and its highest time ratio.
#
# Usage: bench/heldout.sh [-n ROUNDS] [-o OUTDIR] [SRCDIR] [LIB...]
#   SRCDIR  a mimalloc-bench source checkout (its root, or its bench/
#           folder); default $MIMALLOC_BENCH_SRC.  A git clone of
#           https://github.com/daanx/mimalloc-bench does (nothing else of it
#           is needed: no build of its own, no peers).
#   LIB     NAME=PATH[:ALLOY_CONF]: run with LD_PRELOAD=PATH, and with
#           ALLOY_CONF set to what follows the path's first colon (none when
#           there is no colon; ALLOY_CONF is otherwise unset); NAME= with no
#           path runs without LD_PRELOAD (libc's malloc).  The first LIB is
#           the base of the ratios.  Default: release=build/liballoy.so
#           secure=build/liballoy_secure.so
#           secure-q=build/liballoy_secure.so:quarantine:128k glibc=
#   -n      rounds (default 5); -o  scratch folder (default
#           ${TMPDIR:-/tmp}/alloy-heldout): OUTDIR/bin the programs,
#           OUTDIR/runs.tsv every run, OUTDIR/logs each run's output
# Environment: MIMALLOC_BENCH_SRC (SRCDIR), HELDOUT_TIMEOUT (seconds a run
# may take before it is killed and counted as failed; default 120).
# Exit status: 0 when every run succeeded, 1 when a run or a build failed
# (the tables are printed all the same, without the failed runs), 2 on bad
# arguments or a missing SRCDIR or library.
set -uo pipefail
me=heldout.sh
root=$(cd "$(dirname "$0")/.." && pwd)
usage() {
    echo "usage: bench/heldout.sh [-n ROUNDS] [-o OUTDIR] [SRCDIR] [NAME=PATH[:ALLOY_CONF]]..." >&2
    exit 2
}
rounds=5
out=${TMPDIR:-/tmp}/alloy-heldout
while getopts n:o:h opt; do
    case $opt in
    n) [[ $OPTARG =~ ^[1-9][0-9]*$ ]] || usage; rounds=$OPTARG ;;
    o) out=$OPTARG ;;
    *) usage ;;
    esac
done
shift $((OPTIND - 1))
src=${MIMALLOC_BENCH_SRC:-}
if [ $# -gt 0 ] && [[ $1 != *=* ]]; then
    src=$1
    shift
fi
if [ -z "$src" ]; then
    echo "$me: no mimalloc-bench source given: clone https://github.com/daanx/mimalloc-bench" \
        "and pass its folder as the first argument, or set MIMALLOC_BENCH_SRC to it" >&2
    exit 2
fi
# the programs' sources are in SRCDIR/bench, or in SRCDIR itself
if [ -f "$src/bench/cfrac/cfrac.c" ]; then
    mib=$src/bench
elif [ -f "$src/cfrac/cfrac.c" ]; then
    mib=$src
else
    echo "$me: no mimalloc-bench source at $src (no bench/cfrac/cfrac.c there): clone" \
        "https://github.com/daanx/mimalloc-bench and pass its folder as the first argument," \
        "or set MIMALLOC_BENCH_SRC to it" >&2
    exit 2
fi
mib=$(cd "$mib" && pwd)
[ $# -gt 0 ] || set -- "release=$root/build/liballoy.so" "secure=$root/build/liballoy_secure.so" \
    "secure-q=$root/build/liballoy_secure.so:quarantine:128k" "glibc="

# the libraries: names[i], paths[i] (absolute, or empty), confs[i]
names=() paths=() confs=()
for spec in "$@"; do
    [[ $spec == *=* ]] || usage
    name=${spec%%=*} rest=${spec#*=}
    path=${rest%%:*} conf=""
    [[ $rest == *:* ]] && conf=${rest#*:}
    [[ $name =~ ^[A-Za-z0-9_.+-]+$ ]] || { echo "$me: bad library name '$name'" >&2; exit 2; }
    if [ -n "$path" ]; then
        [ -f "$path" ] || { echo "$me: $name: no library $path" >&2; exit 2; }
        path=$(cd "$(dirname "$path")" && pwd)/$(basename "$path")
    fi
    names+=("$name") paths+=("$path") confs+=("$conf")
done
command -v /usr/bin/time >/dev/null || { echo "$me: needs /usr/bin/time (Debian's package time)" >&2; exit 2; }
for tool in gcc g++ timeout python3; do
    command -v "$tool" >/dev/null || { echo "$me: needs $tool" >&2; exit 2; }
done

# env ARGS that set the run's allocator (and clear whatever the caller set)
lib_env() {
    local i=$1
    run_env=(env -u LD_PRELOAD -u ALLOY_CONF)
    [ -n "${paths[i]}" ] && run_env+=("LD_PRELOAD=${paths[i]}")
    [ -n "${confs[i]}" ] && run_env+=("ALLOY_CONF=${confs[i]}")
}
# A library that ld.so cannot preload, or a setting alloy warns about, would
# time something else than was asked: each must run /bin/true silently and
# with exit status 0.
for i in "${!names[@]}"; do
    lib_env "$i"
    msg=$("${run_env[@]}" /bin/true 2>&1)
    rc=$?
    if [ -n "$msg" ] || [ $rc -ne 0 ]; then
        echo "$me: ${names[i]}: /bin/true under it exited with status $rc and printed: $msg" >&2
        exit 2
    fi
done

mkdir -p "$out/bin" "$out/logs" || { echo "$me: cannot make $out" >&2; exit 2; }
out=$(cd "$out" && pwd)
bin=$out/bin
failed=0

# 1. build (the flags of mimalloc-bench's bench/CMakeLists.txt; -w as there)
build() { # NAME COMPILER FLAGS-AND-SOURCES...
    local name=$1 cc=$2
    shift 2
    if ! "$cc" -O2 -w "$@" -o "$bin/$name" -pthread -lm >"$out/logs/build-$name.txt" 2>&1; then
        echo "$me: $name: the build failed ($out/logs/build-$name.txt):" >&2
        tail -n 5 "$out/logs/build-$name.txt" >&2
        rm -f "$bin/$name"
        failed=1
    fi
}
cfrac_src=(cfrac pops pconst pio pabs pneg pcmp podd phalf padd psub pmul pdivmod psqrt ppowmod
    atop ptoa itop utop ptou errorp pfloat pidiv pimod picmp primes pcfrac pgcd)
espresso_src=(cofactor cols compl contain cubestr cvrin cvrm cvrmisc cvrout dominate equiv
    espresso essen exact expand gasp getopt gimpel globals hack indep irred main map matrix
    mincov opo pair part primes reduce rows set setc sharp sminterf solution sparse unate
    utility verify)
# the sources of a program in SRCDIR: sources DIR NAME... sets $files
sources() {
    local dir=$1 f
    shift
    files=()
    for f in "$@"; do files+=("$mib/$dir/$f.c"); done
}
echo "$me: building the programs from $mib into $bin" >&2
sources cfrac "${cfrac_src[@]}"
build cfrac gcc -std=gnu89 -DNOMEMOPT=1 "${files[@]}"
sources espresso "${espresso_src[@]}"
build espresso gcc -std=gnu89 "${files[@]}"
build mstress gcc "$mib/mstress/mstress.c"
build xmalloc-test gcc "$mib/xmalloc-test/xmalloc-test.c"
build larson g++ -DCPP=1 "$mib/larson/larson.cpp"
build cache-scratch g++ "$mib/cache-scratch/cache-scratch.cpp"

# 2. the programs: NAME, arguments, and the output a good run prints
threads=$(nproc 2>/dev/null || echo 2)
programs=(cfrac espresso mstress larson xmalloc-test cache-scratch)
declare -A args=(
    [cfrac]="8539734222673567172606511345051136291"
    [espresso]="-Dexpand -s $mib/espresso/largest.espresso"
    [mstress]="$threads 50 100"
    [larson]="1 8 1000 5000 100 4141 $threads"
    [xmalloc-test]="-w $threads -t 1 -s 64"
    [cache-scratch]="$threads 1000 1 1000000 $threads")
declare -A expect=(
    [cfrac]="^8539734222673567172606511345051136291 = 2718281828459045269 \* 3141592653589793239$"
    [espresso]="expand.*cost is c=1786\(1786\) in=16765 out=11910 tot=28675"
    [mstress]="iterations: +100$"
    [larson]="relative time: [0-9.]+s"
    [xmalloc-test]="^rtime: [0-9.]+"
    [cache-scratch]="")
# the time a run reports for itself (the fixed-time programs), from its output
own_time() { # PROGRAM LOG
    case $1 in
    larson) sed -n 's/.*relative time: \([0-9.]*\)s.*/\1/p' "$2" | head -n 1 ;;
    xmalloc-test) sed -n 's/^rtime: \([0-9.]*\).*/\1/p' "$2" | head -n 1 ;;
    esac
}

runs=$out/runs.tsv
printf 'program\tlibrary\tround\ttime_s\tcpu_s\trss_kb\tstatus\n' >"$runs"
limit=${HELDOUT_TIMEOUT:-120}
n=${#names[@]}
echo "$me: $rounds rounds of ${#programs[@]} programs with ${names[*]}," \
    "$threads threads; load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for ((r = 1; r <= rounds; r++)); do
    for prog in "${programs[@]}"; do
        [ -x "$bin/$prog" ] || continue
        for ((k = 0; k < n; k++)); do
            i=$(((k + r - 1) % n))
            lib_env "$i"
            log=$out/logs/$prog-${names[i]}-$r.txt
            read -ra argv <<<"${args[$prog]}"
            t0=$EPOCHREALTIME
            (cd "$out" && /usr/bin/time -f '%U %S %M' -o "$log.rss" timeout -k 5 "$limit" \
                "${run_env[@]}" "$bin/$prog" "${argv[@]}") >"$log" 2>&1
            rc=$?
            t1=$EPOCHREALTIME
            read -r user sys rss < <(tail -n 1 "$log.rss" 2>/dev/null)
            status=ok
            if [ $rc -ne 0 ]; then
                status="exit status $rc"
                [ $rc -eq 124 ] && status="killed after ${limit} s"
            elif [ -n "${expect[$prog]}" ] && ! grep -Eq "${expect[$prog]}" "$log"; then
                status="no /${expect[$prog]}/ in its output"
            elif ! [[ $rss =~ ^[0-9]+$ ]]; then
                status="no peak RSS from /usr/bin/time"
            fi
            read -r time cpu < <(python3 -c "print('%.4f %.2f' % ($t1 - $t0, ${user:-0} + ${sys:-0}))" 2>/dev/null)
            case $prog in larson | xmalloc-test) time=$(own_time "$prog" "$log") cpu=- ;; esac
            if [ "$status" = ok ] && [ -z "$time" ]; then status="no relative time in its output"; fi
            if [ "$status" != ok ]; then
                failed=1
                echo "$me: $prog under ${names[i]}, round $r: $status ($log):" >&2
                tail -n 5 "$log" | sed 's/^/  /' >&2
            fi
            printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$prog" "${names[i]}" "$r" "${time:--}" \
                "${cpu:--}" "${rss:--}" "$status" >>"$runs"
        done
    done
    echo "$me: round $r of $rounds done; load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
done

# 3. the tables
python3 - "$runs" "${names[@]}" <<'PY'
import math, statistics, sys
runs, names = sys.argv[1], sys.argv[2:]
cells, failures, programs = {}, {}, []
for line in open(runs).read().splitlines()[1:]:
    prog, lib, _, t, cpu, rss, status = line.split("\t")
    if prog not in programs:
        programs.append(prog)
    if status == "ok":
        cpu = float(cpu) if cpu != "-" else None
        cells.setdefault((prog, lib), []).append((float(t), cpu, int(rss) / 1024))
    else:
        failures[(prog, lib)] = failures.get((prog, lib), 0) + 1
fixed = {"larson": "relative time (s): 10^9 / ops per s",
         "xmalloc-test": "relative time (s): 100 / M frees per s"}
ratios = {n: [] for n in names}
cpu_ratios = {n: [] for n in names}
rss_ratios = {n: [] for n in names}
def col(c, k): return [x[k] for x in c if x[k] is not None]
def cell(v, fmt): # median [min-max]
    return (fmt + " [" + fmt + "-" + fmt + "]") % (statistics.median(v), min(v), max(v))
for prog in programs:
    print("\n### %s (%s)\n" % (prog, fixed.get(prog, "wall time (s)")))
    print("| library | time, median [min-max] | ratio | CPU s | ratio | peak RSS MB | ratio | runs |")
    print("|---|---|---|---|---|---|---|---|")
    base = cells.get((prog, names[0]))
    for n in names:
        c = cells.get((prog, n))
        bad = failures.get((prog, n), 0)
        if not c:
            print("| %s | FAILED (%d runs) | - | - | - | - | - | 0 |" % (n, bad))
            continue
        out = ["| " + n]
        for k, fmt, acc in ((0, "%.3f", ratios), (1, "%.2f", cpu_ratios), (2, "%.1f", rss_ratios)):
            v = col(c, k)
            if not v:
                out += ["-", "-"]
                continue
            out.append(cell(v, fmt))
            bv = col(base, k) if base else []
            if bv:
                r = statistics.median(v) / statistics.median(bv)
                acc[n].append((r, prog))
                out.append("%.3f" % r)
            else:
                out.append("-")
        out.append("%d%s |" % (len(c), " (%d FAILED)" % bad if bad else ""))
        print(" | ".join(out))
def geo(v): return math.exp(sum(math.log(x) for x, _ in v) / len(v)) if v else None
def fx(x): return "%.3fx" % x if x is not None else "-"
print("\n### geometric means over the programs, against %s\n" % names[0])
print("| library | time | highest time ratio | CPU time (%d wall-timed programs) | peak RSS | programs |"
      % max(len(v) for v in cpu_ratios.values()))
print("|---|---|---|---|---|---|")
for n in names:
    top = max(ratios[n]) if ratios[n] else None
    print("| %s | %s | %s | %s | %s | %d |" % (n, fx(geo(ratios[n])),
          "%.3fx (%s)" % top if top else "-", fx(geo(cpu_ratios[n])), fx(geo(rss_ratios[n])),
          len(ratios[n])))
PY
[ $failed -eq 0 ] || echo "$me: some runs or builds failed (above); their cells leave them out" >&2
exit $failed
