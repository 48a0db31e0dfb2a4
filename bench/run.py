#!/usr/bin/python3
"""run.py - the benchmark runner: runs every (workload, allocator) pair several
times with the allocators interleaved (A B C A B C ...), and writes raw results
(raw.csv, results.json), a Markdown table of medians (min-max) with alloy's
ratio to the best peer (summary.md, also printed), and charts (PNG).

The workload programs (bench_*.c, malloc_test.c) call the ordinary malloc
family; the allocator is chosen with LD_PRELOAD, and each program reports which
library `malloc` resolved to, so a preload that did not take is caught.  A run
that crashes, fails or exceeds --timeout is recorded as such and the sweep goes
on.  Progress goes to stderr, and only when stderr is a terminal.

usage: bench/run.py [--build-dir build] [--mode smoke|short|full]
                    [--allocators glibc,jemalloc,...] [--workloads sizes,...]
                    [--reps N] [--timeout SECONDS] [--out DIR] ...
Run with --help for every option, --list for the allocators and workloads.
"""
import argparse
import csv
import datetime
import json
import os
import platform
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchstats as bs  # noqa: E402

LIBDIR = "/usr/lib/x86_64-linux-gnu"
# name -> (library to preload or None for the system malloc, Debian package)
PEERS = {
    "glibc": (None, "libc6"),
    "jemalloc": (LIBDIR + "/libjemalloc.so.2", "libjemalloc2"),
    "tcmalloc": (LIBDIR + "/libtcmalloc_minimal.so.4", "libtcmalloc-minimal4"),
    "mimalloc": (LIBDIR + "/libmimalloc.so.2", "libmimalloc2.0"),
}
ALLOY = "alloy"
DEFAULT_ALLOCATORS = ["glibc", "jemalloc", "tcmalloc", "mimalloc", ALLOY]

# workload -> program and the rows of the headline table:
# (metric, group) where group is 'st' (single-threaded target), 'mt'
# (multithreaded/cross-thread target), 'mem' (memory target) or None (shown,
# not a target).  Per-case overrides in CASE_GROUPS.
WORKLOADS = {
    "sizes": ("bench_sizes", "seed 001 §5.1: malloc/free pairs at 8-4096 B, 1 thread (CPU time)",
              [("ns_per_op", "st"), ("p99_ns", None), ("p999_ns", None)]),
    "threads": ("bench_threads", "seed 001 §5.2: 64 B pairs on 1-16 threads",
                [("mops_per_s", "mt"), ("p99_ns", None)]),
    "malloc_test": ("malloc_test", "seed 004 §1: T threads x N objects x S bytes",
                    [("time_s", "mt"), ("ctx_switches", None), ("peak_rss", None)]),
    "mixed": ("bench_mixed", "seed 004 §3: web-service mix with a live set, 2 threads",
              [("time_ms", "mt"), ("peak_rss", "mem"), ("rss_growth_pct", None),
               ("cpu_ms", None)]),
    "frag": ("bench_frag", "seed 001 §5.3: random sizes and lifetimes, 1 thread (CPU time)",
             [("time_ms", "st"), ("peak_rss", "mem"), ("rss_over_live", None),
              ("usable_pct", None)]),
    "xthread": ("bench_xthread", "producer/consumer: every free is cross-thread",
                [("mops_per_s", "mt"), ("peak_rss", None)]),
    "realloc": ("bench_realloc", "growing strings and vectors with realloc, 1 thread (CPU time)",
                [("time_ms", "st"), ("peak_rss", None)]),
}
# (workload, case) -> {metric: group}: exceptions to the table above
CASE_GROUPS = {
    ("threads", "threads_1"): {"mops_per_s": None},   # same as sizes 64 B: not counted twice
    ("mixed", "small"): {"peak_rss": None},           # memory target: the full mix only
}

# mode -> workload -> list of argument lists (one process each)
MODES = {
    "smoke": {
        "reps": 1, "timeout": 60,
        "sizes": [["-n", "20000"]],
        "threads": [["-t", "1", "-n", "20000"], ["-t", "4", "-n", "20000"]],
        "malloc_test": [["2", "20000", "16"]],
        "mixed": [["-m", "small", "-t", "2", "-n", "20000", "-w", "500"],
                  ["-m", "mixed", "-t", "2", "-n", "20000", "-w", "500"]],
        "frag": [["-n", "50000", "-c", "500"]],
        "xthread": [["-n", "50000"]],
        "realloc": [["-n", "50000"]],
    },
    "short": {
        "reps": 5, "timeout": 60,
        "sizes": [["-n", "1000000"]],
        "threads": [["-t", str(t), "-n", "500000"] for t in (1, 2, 4, 8, 16)],
        "malloc_test": [["16", "200000", "16"]],
        "mixed": [["-m", "small", "-t", "2", "-n", "400000", "-w", "4000"],
                  ["-m", "mixed", "-t", "2", "-n", "150000", "-w", "2000"]],
        "frag": [["-n", "1000000", "-c", "4000"]],
        "xthread": [["-n", "2000000"]],
        "realloc": [["-n", "1000000"]],
    },
    "full": {
        "reps": 5, "timeout": 600,
        "sizes": [["-n", "10000000"]],
        "threads": [["-t", str(t), "-n", "4000000"] for t in (1, 2, 4, 8, 16)],
        "malloc_test": [["100", "1000000", "16"]],
        "mixed": [["-m", "small", "-t", "2", "-n", "3000000", "-w", "20000"],
                  ["-m", "mixed", "-t", "2", "-n", "1500000", "-w", "4000"]],
        "frag": [["-n", "20000000", "-c", "20000"]],
        "xthread": [["-p", "1", "-n", "10000000"], ["-p", "2", "-n", "5000000"]],
        "realloc": [["-n", "10000000"]],
    },
}


class UsageError(Exception):
    pass


# ---------------------------------------------------------------------------
# argument parsing

def parse_allocators(text, build_dir):
    """'glibc,jemalloc,alloy' or 'name=/path/lib.so' items -> ordered list of
    (name, lib_or_None).  Unknown names and duplicates are errors."""
    out, seen = [], set()
    for item in text.split(","):
        item = item.strip()
        if not item:
            raise UsageError("--allocators: empty name in %r" % text)
        name, sep, path = item.partition("=")
        if sep:
            if not name or not path:
                raise UsageError("--allocators: malformed %r (want name=/path/lib.so)" % item)
            lib = path
        elif name == ALLOY:
            lib = os.path.join(build_dir, "liballoy.so")
        elif name in PEERS:
            lib = PEERS[name][0]
        else:
            raise UsageError("unknown allocator %r (known: %s; or name=/path/lib.so)"
                             % (name, ", ".join(DEFAULT_ALLOCATORS)))
        if name in seen:
            raise UsageError("--allocators: %r given twice" % name)
        seen.add(name)
        out.append((name, lib))
    return out


def parse_workloads(text):
    out = []
    for w in text.split(","):
        w = w.strip()
        if w not in WORKLOADS:
            raise UsageError("unknown workload %r (known: %s)" % (w, ", ".join(WORKLOADS)))
        if w in out:
            raise UsageError("--workloads: %r given twice" % w)
        out.append(w)
    return out


def positive_int(s):
    try:
        v = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not an integer" % s)
    if v < 1:
        raise argparse.ArgumentTypeError("%r must be at least 1" % s)
    return v


def positive_float(s):
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not a number" % s)
    if not v > 0:
        raise argparse.ArgumentTypeError("%r must be positive" % s)
    return v


def build_parser():
    p = argparse.ArgumentParser(
        prog="run.py", description="alloy's benchmark runner (issue 3).",
        epilog="Exit status: 0 when every run succeeded, 1 when some run crashed, timed out "
               "or (with --strict) an allocator was missing, 2 on bad arguments.")
    p.add_argument("--build-dir", default="build",
                   help="build tree holding the workload programs and liballoy.so (default: build)")
    p.add_argument("--mode", choices=sorted(MODES), default="short",
                   help="scale: smoke (CI, seconds), short (default, < 3 min), full (long)")
    p.add_argument("--allocators", default=",".join(DEFAULT_ALLOCATORS),
                   help="comma-separated: glibc,jemalloc,tcmalloc,mimalloc,alloy or name=/path.so")
    p.add_argument("--workloads", default=",".join(WORKLOADS),
                   help="comma-separated subset of: " + ", ".join(WORKLOADS))
    p.add_argument("--reps", type=positive_int, help="runs per pair (default: by mode)")
    p.add_argument("--timeout", type=positive_float,
                   help="seconds before a run is killed and recorded as a timeout")
    p.add_argument("--out", help="output directory (default: BUILD_DIR/bench-results/MODE)")
    p.add_argument("--perf", choices=["auto", "on", "off"], default="auto",
                   help="wrap malloc_test in perf stat for cache misses (auto: if counters work)")
    p.add_argument("--no-charts", action="store_true", help="skip the PNG charts")
    p.add_argument("--strict", action="store_true",
                   help="a missing or not-preloaded allocator is an error (CI)")
    p.add_argument("--quiet", action="store_true", help="do not print the table at the end")
    p.add_argument("--list", action="store_true", help="list allocators and workloads, then exit")
    return p


# ---------------------------------------------------------------------------
# running

def expected_provider(name, lib):
    """Substring that `info malloc_from=` must contain for this allocator."""
    if lib is None:
        return "libc.so"
    return os.path.basename(os.path.realpath(lib)).split(".so")[0]


def run_one(argv, env, timeout):
    """Run a command; returns (status, stdout, stderr, seconds).  status is
    'ok', 'timeout', 'crash:SIGNAME' or 'exit:N'.  A timed-out run's whole
    process group is killed."""
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            start_new_session=True, text=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = proc.communicate()
        return "timeout", out, err, time.monotonic() - t0
    dt = time.monotonic() - t0
    rc = proc.returncode
    if rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = str(-rc)
        return "crash:" + name, out, err, dt
    if rc != 0:
        return "exit:%d" % rc, out, err, dt
    return "ok", out, err, dt


def perf_works():
    """True when perf stat can count a hardware event (cache-misses) here."""
    try:
        r = subprocess.run(["perf", "stat", "-x,", "-e", "cache-misses", "true"],
                           capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    for line in r.stderr.splitlines():
        f = line.split(",")
        if len(f) > 2 and "cache-misses" in f[2]:
            return f[0].strip().isdigit()
    return False


def parse_perf(path):
    """perf stat -x, output -> {metric: value} for the events that counted."""
    out = {}
    try:
        with open(path) as f:
            for line in f:
                fld = line.strip().split(",")
                if len(fld) < 3 or not fld[0].replace(".", "").isdigit():
                    continue
                ev = fld[2].split(":")[0].replace("-", "_")
                out["perf_" + ev] = float(fld[0])
    except OSError:
        pass
    return out


class Progress:
    """One status line on stderr, rewritten in place; silent unless a tty.
    The estimate of the time left uses each workload's own mean run time so far
    (workloads differ by orders of magnitude), else the mean of all runs."""

    def __init__(self, remaining, enabled):
        self.remaining = dict(remaining)          # workload -> runs still to do
        self.total = sum(remaining.values())
        self.enabled, self.done = enabled, 0
        self.spent = {}                           # workload -> (seconds, runs)
        self.t0 = time.monotonic()

    def eta(self):
        if not self.spent:
            return "?"
        all_s = sum(v[0] for v in self.spent.values())
        all_n = sum(v[1] for v in self.spent.values())
        left = 0.0
        for w, n in self.remaining.items():
            s, k = self.spent.get(w, (all_s, all_n))
            left += n * s / k
        return "%dm%02ds" % divmod(int(left), 60)

    def show(self, what):
        if not self.enabled:
            return
        el = int(time.monotonic() - self.t0)
        sys.stderr.write("\r\033[K[%d/%d] %s  elapsed %dm%02ds  left ~%s" % (
            self.done + 1, self.total, what, el // 60, el % 60, self.eta()))
        sys.stderr.flush()

    def step(self, workload, seconds):
        self.done += 1
        self.remaining[workload] -= 1
        s, k = self.spent.get(workload, (0.0, 0))
        self.spent[workload] = (s + seconds, k + 1)

    def finish(self):
        if self.enabled:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


def case_groups(workload, case):
    rows = []
    over = CASE_GROUPS.get((workload, case), {})
    for metric, group in WORKLOADS[workload][2]:
        rows.append((metric, over.get(metric, group)))
    return rows


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        allocs = parse_allocators(args.allocators, args.build_dir)
        workloads = parse_workloads(args.workloads)
    except UsageError as e:
        parser.error(str(e))  # exits 2 with the usage line

    if args.list:
        for n in DEFAULT_ALLOCATORS:
            lib = os.path.join(args.build_dir, "liballoy.so") if n == ALLOY else PEERS[n][0]
            ok = lib is None or os.path.exists(lib)
            print("allocator %-9s %s%s" % (n, lib or "(system malloc)", "" if ok else "  MISSING"))
        for w, (prog, desc, _) in WORKLOADS.items():
            print("workload  %-12s %s: %s" % (w, prog, desc))
        return 0

    mode = MODES[args.mode]
    reps = args.reps or mode["reps"]
    timeout = args.timeout or mode["timeout"]
    out_dir = args.out or os.path.join(args.build_dir, "bench-results", args.mode)
    for w in workloads:
        prog = os.path.join(args.build_dir, WORKLOADS[w][0])
        if not os.access(prog, os.X_OK):
            print("run.py: %s not found: build first (cmake --build %s)" % (prog, args.build_dir),
                  file=sys.stderr)
            return 2
    os.makedirs(out_dir, exist_ok=True)

    # Peer detection: a missing allocator is reported, never silently dropped.
    present, missing = [], []
    for name, lib in allocs:
        if lib is not None and not os.path.exists(lib):
            hint = ("install with bench/install-peers.sh (Debian package %s)" % PEERS[name][1]
                    if name in PEERS else "build it first" if name == ALLOY else "no such file")
            missing.append((name, lib, hint))
            print("run.py: allocator %s MISSING: %s not found; %s" % (name, lib, hint),
                  file=sys.stderr)
        else:
            present.append((name, lib))
    if not present:
        print("run.py: no allocator available", file=sys.stderr)
        return 1

    use_perf = args.perf == "on" or (args.perf == "auto" and "malloc_test" in workloads
                                     and perf_works())
    if args.perf == "on" and not perf_works():
        print("run.py: --perf on but perf cannot count cache-misses here; continuing without",
              file=sys.stderr)
        use_perf = False

    jobs = []  # (workload, args)
    for w in workloads:
        for a in mode[w]:
            jobs.append((w, a))
    remaining = {}
    for w, _ in jobs:
        remaining[w] = remaining.get(w, 0) + reps * len(present)
    prog_bar = Progress(remaining, sys.stderr.isatty())

    raw = []          # rows for raw.csv
    runs = []         # everything, for results.json
    series = {}       # (workload, case, allocator) -> first good series
    bad = []          # (workload, allocator, rep, status, stderr tail)
    commands = []
    for w, wargs in jobs:
        prog = os.path.join(args.build_dir, WORKLOADS[w][0])
        for rep in range(reps):
            for name, lib in present:                    # interleaved: A B C A B C
                prog_bar.show("%s %s  %s  rep %d/%d" % (w, " ".join(wargs), name, rep + 1, reps))
                env = dict(os.environ)
                env.pop("LD_PRELOAD", None)
                cmd = [prog] + wargs
                shown = ("LD_PRELOAD=%s " % os.path.abspath(lib) if lib else "") + " ".join(cmd)
                perf_file = None
                if lib is not None and not (use_perf and w == "malloc_test"):
                    env["LD_PRELOAD"] = os.path.abspath(lib)
                elif lib is not None:     # preload the workload, not perf itself
                    cmd = ["env", "LD_PRELOAD=" + os.path.abspath(lib)] + cmd
                if use_perf and w == "malloc_test":
                    perf_file = os.path.join(out_dir, ".perf.tmp")
                    cmd = ["perf", "stat", "-x,", "-o", perf_file, "-e",
                           "cache-misses,L1-dcache-load-misses,context-switches", "--"] + cmd
                if cmd[0] == "perf":
                    shown = " ".join(cmd)
                commands.append(shown)
                status, out, err, secs = run_one(cmd, env, timeout)
                prog_bar.step(w, secs)
                rec = {"workload": w, "args": wargs, "allocator": name, "rep": rep,
                       "status": status, "seconds": round(secs, 4), "command": shown}
                results, info = {}, {}
                if status == "ok":
                    try:
                        info, results, ser = bs.parse_output(out)
                    except (ValueError, KeyError) as e:
                        status = "bad-output: %s" % e
                    else:
                        want = expected_provider(name, lib)
                        got = info.get("malloc_from", "")
                        if want not in got:
                            status = "not-preloaded: malloc from %s" % got
                        if perf_file:
                            extra = parse_perf(perf_file)
                            for case in results:
                                results[case].update(extra)
                        for case, s in ser.items():
                            series.setdefault((w, case, name), s)
                rec["status"], rec["info"], rec["results"] = status, info, results
                runs.append(rec)
                if status != "ok":
                    bad.append((w, " ".join(wargs), name, rep, status,
                                err.strip().splitlines()[-1:] if err else []))
                    raw.append([w, " ".join(wargs), "", name, rep, status, "", ""])
                    continue
                for case, metrics in results.items():
                    for m, v in metrics.items():
                        raw.append([w, " ".join(wargs), case, name, rep, status, m, v])
    prog_bar.finish()

    # Aggregate: (workload, case, metric) -> allocator -> [values]
    agg, failed_cells = {}, {}
    for r in runs:
        if r["status"] != "ok":
            continue
        for case, metrics in r["results"].items():
            for m, v in metrics.items():
                agg.setdefault((r["workload"], case, m), {}).setdefault(r["allocator"], []).append(v)
    for w, a, name, rep, status, _ in bad:
        failed_cells.setdefault((w, name), status)

    names = [n for n, _ in present]
    rows = []
    for (w, case, m) in sorted(agg, key=lambda k: (workloads.index(k[0]), case_sort(k[1]))):
        groups = dict(case_groups(w, case))
        if m not in groups:
            continue
        stats = {a: bs.summarize(vs) for a, vs in agg[(w, case, m)].items()}
        rows.append({"workload": w, "case": case, "metric": m, "group": groups[m],
                     "stats": stats, "values": {a: s[0] for a, s in stats.items()}})
    # keep rows in the order the workloads declare their metrics
    order = {w: [m for m, _ in WORKLOADS[w][2]] for w in WORKLOADS}
    rows.sort(key=lambda r: (workloads.index(r["workload"]), order[r["workload"]].index(r["metric"]),
                             case_sort(r["case"])))

    alloy_name = ALLOY if ALLOY in names else None
    env_info = environment(args, reps, timeout, use_perf, present, missing)
    md = render_markdown(rows, names, alloy_name, env_info, missing, bad, failed_cells)

    with open(os.path.join(out_dir, "raw.csv"), "w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(["workload", "args", "case", "allocator", "rep", "status", "metric", "value"])
        wr.writerows(raw)
    with open(os.path.join(out_dir, "results.json"), "w") as f:
        json.dump({"environment": env_info, "runs": runs,
                   "series": [{"workload": k[0], "case": k[1], "allocator": k[2], "samples": v}
                              for k, v in series.items()],
                   "summary": [{k: r[k] for k in ("workload", "case", "metric", "group", "stats")}
                               for r in rows]}, f, indent=1)
    with open(os.path.join(out_dir, "summary.md"), "w") as f:
        f.write(md)
    with open(os.path.join(out_dir, "commands.txt"), "w") as f:
        f.write("\n".join(commands) + "\n")
    if not args.no_charts:
        try:
            import charts
            made = charts.make_all(rows, series, names, out_dir)
            if made:
                print("run.py: charts: %s" % ", ".join(made), file=sys.stderr)
        except ImportError as e:
            print("run.py: charts skipped (%s)" % e, file=sys.stderr)
    if not args.quiet:
        sys.stdout.write(md)
    print("run.py: results in %s (raw.csv, results.json, summary.md)" % out_dir, file=sys.stderr)
    if bad:
        return 1
    if args.strict and missing:
        return 1
    return 0


def case_sort(case):
    """Natural order: size_8 < size_64 < size_512; threads_2 < threads_16."""
    head, _, tail = case.rpartition("_")
    return (head, int(tail)) if tail.isdigit() else (case, 0)


def environment(args, reps, timeout, use_perf, present, missing):
    def sh(cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=10).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            return ""
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    here = os.path.dirname(os.path.abspath(__file__))
    return {
        "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S"),
        "mode": args.mode, "reps": reps, "timeout_s": timeout,
        "cpu": cpu, "ncpu": os.cpu_count(), "kernel": platform.release(),
        "commit": sh(["git", "-C", here, "rev-parse", "--short", "HEAD"]),
        "loadavg": " ".join("%.2f" % x for x in os.getloadavg()),
        "perf_hw_counters": use_perf,
        "allocators": {n: (lib or "system malloc") for n, lib in present},
        "missing": {n: hint for n, _, hint in missing},
        "argv": " ".join(sys.argv),
    }


def render_markdown(rows, names, alloy, env, missing, bad, failed_cells):
    L = []
    L.append("## alloy benchmark: %s mode, %s\n" % (env["mode"], env["date"]))
    L.append("%s, %s CPUs, Linux %s, commit %s, load average at start %s.  "
             "Each cell: median (min-max) of %d runs, allocators interleaved.  "
             "`alloy/best`: alloy's median over the best peer's, oriented so that > 1 means "
             "alloy is worse (for throughput: best/alloy).  Single-threaded workloads (sizes, frag, "
             "realloc) are timed in process CPU time, the others in wall time.\n" % (
                 env["cpu"], env["ncpu"], env["kernel"], env["commit"], env["loadavg"],
                 env["reps"]))
    for n, hint in env["missing"].items():
        L.append("- **%s: MISSING** (%s)" % (n, hint))
    if env["missing"]:
        L.append("")
    hdr = ["workload", "case", "metric"] + names + ["best peer", "alloy/best"]
    head = [r for r in rows if r["group"]]
    rest = [r for r in rows if not r["group"]]
    for title, part in (("Headline (the metrics issue 3's targets are judged on)", head),
                        ("Details", rest)):
        if not part:
            continue
        L.append("### %s\n" % title)
        L.append("| " + " | ".join(hdr) + " |")
        L.append("|" + "---|" * len(hdr))
        table_rows(L, part, names, alloy, failed_cells)
        L.append("")
    L.append("↑ = higher is better.  ✗ = alloy more than 10% worse than the best peer, "
             "~ = worse by up to 10%.\n")
    if alloy:
        L.append("### Targets (issue 3)\n")
        for text, met, detail in bs.evaluate_targets(rows, alloy):
            verdict = "n/a" if met is None else "**met**" if met else "**missed**"
            L.append("- %s: %s (%s)" % (text, verdict, detail))
        L.append("")
    if bad:
        L.append("### Failed runs\n")
        for w, a, name, rep, status, tail in bad:
            L.append("- %s `%s` under %s, rep %d: %s%s" % (w, a, name, rep, status,
                                                           (": " + tail[0]) if tail else ""))
        L.append("")
    return "\n".join(L) + "\n"


def table_rows(L, rows, names, alloy, failed_cells):
    for r in rows:
        label, unit, lower, scale = bs.METRICS.get(r["metric"], (r["metric"], "", True, 1.0))
        cells = [r["workload"], r["case"], "%s%s%s" % (label, " (%s)" % unit if unit else "",
                                                        "" if lower else " ↑")]
        for n in names:
            s = r["stats"].get(n)
            if s is None:
                st = failed_cells.get((r["workload"], n))
                cells.append("**%s**" % st.split(":")[0].upper() if st else "-")
            elif s[3] > 1:
                cells.append("%s (%s–%s)" % (bs.fmt_num(s[0] * scale), bs.fmt_num(s[1] * scale),
                                             bs.fmt_num(s[2] * scale)))
            else:
                cells.append(bs.fmt_num(s[0] * scale))
        best, ratio = bs.ratio_vs_best(r["values"], alloy, r["metric"]) if alloy else (None, None)
        if best is None and not alloy:
            peers = r["values"]
            best = (min if lower else max)(peers, key=peers.get) if peers else None
        cells.append(best or "-")
        if ratio is None:
            cells.append("-")
        else:
            ratio = round(ratio, 2)      # judged as displayed: 1.004 is a tie
            mark = "" if ratio <= 1.0 else " ✗" if ratio > 1.10 else " ~"
            cells.append("**%.2f**%s" % (ratio, mark) if ratio > 1.0 else "%.2f" % ratio)
        L.append("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    sys.exit(main())
