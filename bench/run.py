#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""run.py - the benchmark runner: runs every (workload, allocator) pair several
times with the allocators interleaved (A B C A B C ...), and writes raw results
(raw.csv, results.json), a Markdown table of medians (min-max) with alloy's
ratio to the best peer (summary.md, also printed), and charts (PNG).

The workload programs (bench_*.c, malloc_test.c) call the ordinary malloc
family; the allocator is chosen with LD_PRELOAD, and each program reports which
library `malloc` resolved to, so a preload that did not take is caught.  A run
that crashes, fails or exceeds --timeout is recorded as such and the sweep goes
on.  Progress goes to stderr: on a terminal, one status line rewritten in
place; otherwise a plain line as each workload starts.

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
# Peers built from source by bench/build-peers.sh [OUTDIR], which prints one
# "NAME PATH" line each, and "build-peers.sh: NAME MISSING: WHY" on stderr for
# one it could not fetch or build: newer than anything Debian 12 ships.
BUILT_PEERS = ["mimalloc3", "snmalloc", "rpmalloc"]
BUILT = "<built by build-peers.sh>"      # their library, until the script has run
PEERS_SCRIPT_ENV = "ALLOY_PEERS_SCRIPT"
PEERS_SCRIPT_DEFAULT = os.path.join("bench", "build-peers.sh")  # from the repo root
PEERS_SCRIPT_TIMEOUT = 900
ALLOY = "alloy"
DEFAULT_ALLOCATORS = ["glibc", "jemalloc", "tcmalloc", "mimalloc"] + BUILT_PEERS + [ALLOY]

# workload -> program and the rows of the tables: (metric, group) where group
# is 'st' (single-threaded target), 'mt' (multithreaded/cross-thread target),
# 'mem' (memory target) or None (not one of the per-workload targets).  Per-case
# overrides in CASE_GROUPS.  Every program also reports page faults
# (`faults`, from common.c) beside its time and RSS.
WORKLOADS = {
    "sizes": ("bench_sizes", "the memory-pool text's §5.1: malloc/free pairs at 8-4096 B, 1 thread (CPU time)",
              [("ns_per_op", "st"), ("p99_ns", None), ("p999_ns", None), ("faults", None)]),
    "threads": ("bench_threads", "the memory-pool text's §5.2: 64 B pairs on 1-16 threads",
                [("mops_per_s", "mt"), ("p99_ns", None), ("faults", None)]),
    "malloc_test": ("malloc_test", "the allocator comparison's §1: T threads x N objects x S bytes",
                    [("time_s", "mt"), ("ctx_switches", None), ("vol_ctx_switches", None),
                     ("invol_ctx_switches", None), ("peak_rss", None), ("faults", None)]),
    "mixed": ("bench_mixed", "the allocator comparison's §3: web-service mix with a live set, 2 threads",
              [("time_ms", "mt"), ("peak_rss", "mem"), ("rss_growth_pct", None),
               ("cpu_ms", None), ("faults", None)]),
    "frag": ("bench_frag", "the memory-pool text's §5.3: random sizes and lifetimes; free 90%, then "
                           "1-4 KiB blocks (reuse90); 1 thread (CPU time)",
             [("time_ms", "st"), ("peak_rss", "mem"), ("rss_over_live", None),
              ("usable_pct", None), ("faults", None)]),
    "xthread": ("bench_xthread", "producer/consumer: every free is cross-thread",
                [("mops_per_s", "mt"), ("peak_rss", None), ("faults", None)]),
    "realloc": ("bench_realloc", "growing strings and vectors with realloc, 1 thread (CPU time)",
                [("time_ms", "st"), ("peak_rss", None), ("faults", None)]),
    "large": ("bench_large", "large-block recycling: 32 blocks of 1-8 MiB, one at a time "
                             "replaced by a zero-filled block, 1 thread (CPU time)",
              [("time_ms", "st"), ("peak_rss", None), ("faults", None)]),
    "handoff": ("bench_handoff", "request processing: 16 B-2 KiB objects, 30% handed to "
                                 "another worker which frees them, 4 threads",
                [("time_ms", "mt"), ("peak_rss", None), ("rss_end", None), ("faults", None)]),
    "idle": ("bench_idle", "free 90% (or all) of a 256 MiB live set, then idle: RSS over time",
             [("returned_pct", None), ("time_to_drop_ms", None), ("peak_rss", None),
              ("rss_freed", None), ("rss_idle_end", None), ("faults", None)]),
    "larson": ("bench_larson", "Larson-style server: threads retire, successors free "
                               "their objects, 4 threads",
               [("mops_per_s", "mt"), ("peak_rss", None), ("faults", None)]),
    "rptest": ("bench_rptest", "rptest-style: 16 B-16 KiB blocks in working sets, a quarter "
                               "passed in batches to the next thread, which frees them",
               [("time_ms", "mt"), ("peak_rss", "mem"), ("faults", None)]),
    "cxx": ("bench_cxx", "C++: new/delete (sized) of objects, std::map, std::list, "
                         "std::unordered_map, shared_ptr; 1 thread (CPU time)",
            [("time_ms", None), ("peak_rss", None), ("faults", None)]),
    "sparse": ("bench_sparse", "buffers sized for the worst case: a window of 2,000 blocks, "
                               "20% of 8-512 KiB with only their ends written, 2 threads",
               [("time_ms", "mt"), ("peak_rss", None), ("faults", None), ("cpu_ms", None)]),
}
# (workload, case) -> {metric: group}: exceptions to the table above
CASE_GROUPS = {
    ("threads", "threads_1"): {"mops_per_s": None},   # same as sizes 64 B: not counted twice
    ("mixed", "small"): {"peak_rss": None},           # memory target: the full mix only
}
# The rows the suite-wide targets (benchstats.evaluate_verdicts) are judged on, besides every
# 'st'/'mt' row (time) and every peak_rss row (memory): (workload, metric) -> kind
VERDICT_ROWS = {
    ("large", "faults"): "faults",        # no more page faults than glibc
    ("malloc_test", "ctx_switches"): "ctx",   # at 16 and 100 threads: <= 2x mimalloc's
}

# bench_cxx's cases, one process each (so that each has its own peak RSS)
CXX_CASES = ["objects", "map", "list", "hash", "shared"]

# mode -> workload -> list of argument lists (one process each); "reps" runs
# of each, or "reps_for"[workload] where a workload needs fewer (--reps N
# overrides both)
MODES = {
    "smoke": {
        "reps": 1, "timeout": 60,
        "sizes": [["-n", "20000"]],
        "threads": [["-t", "1", "-n", "20000"], ["-t", "4", "-n", "20000"]],
        "malloc_test": [["16", "2000", "16"], ["100", "500", "16"]],
        "mixed": [["-m", "small", "-t", "2", "-n", "20000", "-w", "500"],
                  ["-m", "mixed", "-t", "2", "-n", "20000", "-w", "500"],
                  ["-m", "mixed", "-t", "2", "-n", "5000", "-w", "200", "-L", "512Ki"]],
        "frag": [["-n", "50000", "-c", "500"], ["-m", "reuse", "-l", "4Mi"]],
        "xthread": [["-n", "50000"]],
        "realloc": [["-n", "50000"]],
        "large": [["-m", "calloc", "-k", "4", "-n", "20", "-l", "1Mi", "-u", "2Mi"],
                  ["-m", "memset", "-k", "4", "-n", "20", "-l", "1Mi", "-u", "2Mi"]],
        "handoff": [["-t", "2", "-n", "20000", "-w", "100"]],
        "idle": [["-l", "8Mi", "-i", "300"]],
        "larson": [["-t", "2", "-s", "100", "-n", "500", "-g", "4"]],
        "rptest": [["-t", "2", "-l", "20", "-b", "100", "-w", "200"]],
        "cxx": [["-c", c, "-n", "20000", "-k", "1000"] for c in CXX_CASES],
        "sparse": [["-t", "2", "-n", "5000", "-w", "200"]],
    },
    "short": {
        "reps": 5, "timeout": 60,
        "reps_for": {"idle": 3},       # mostly sleep; its RSS hardly varies from run to run
        "sizes": [["-n", "1000000"]],
        "threads": [["-t", str(t), "-n", "500000"] for t in (1, 2, 4, 8, 16)],
        "malloc_test": [["16", "200000", "16"], ["100", "30000", "16"]],
        "mixed": [["-m", "small", "-t", "2", "-n", "400000", "-w", "4000"],
                  ["-m", "mixed", "-t", "2", "-n", "150000", "-w", "2000"],
                  ["-m", "mixed", "-t", "2", "-n", "40000", "-w", "2000", "-L", "512Ki"]],
        "frag": [["-n", "1000000", "-c", "4000"], ["-m", "reuse", "-l", "64Mi"]],
        "xthread": [["-n", "2000000"]],
        "realloc": [["-n", "1000000"]],
        "large": [["-m", "calloc", "-k", "16", "-n", "60"],
                  ["-m", "memset", "-k", "16", "-n", "60"]],
        "handoff": [["-t", "4", "-n", "150000", "-w", "1000"]],
        "idle": [["-l", "128Mi", "-f", "90", "-i", "600"]],
        "larson": [["-t", "4", "-s", "1000", "-n", "5000", "-g", "40"]],
        "rptest": [["-t", "4", "-l", "300", "-b", "500", "-w", "1000"]],
        "cxx": [["-c", c, "-n", "2000000"] for c in CXX_CASES],
        "sparse": [["-t", "2", "-n", "100000", "-w", "2000"]],
    },
    "full": {
        "reps": 5, "timeout": 600,
        "sizes": [["-n", "10000000"]],
        "threads": [["-t", str(t), "-n", "4000000"] for t in (1, 2, 4, 8, 16)],
        "malloc_test": [["16", "1000000", "16"], ["100", "1000000", "16"]],
        "mixed": [["-m", "small", "-t", "2", "-n", "3000000", "-w", "20000"],
                  ["-m", "mixed", "-t", "2", "-n", "1500000", "-w", "4000"],
                  ["-m", "mixed", "-t", "2", "-n", "1000000", "-w", "2000", "-L", "512Ki"]],
        "frag": [["-n", "20000000", "-c", "20000"], ["-m", "reuse", "-l", "512Mi"]],
        "xthread": [["-p", "1", "-n", "10000000"], ["-p", "2", "-n", "5000000"]],
        "realloc": [["-n", "10000000"]],
        "large": [["-m", "calloc", "-n", "2000"], ["-m", "memset", "-n", "2000"]],
        "handoff": [["-t", "4", "-n", "4000000", "-w", "1000"],
                    ["-t", "16", "-n", "1000000", "-w", "1000", "-p", "50"]],
        "idle": [["-l", "512Mi", "-f", "90", "-i", "5000"],
                 ["-l", "512Mi", "-f", "100", "-i", "5000"]],
        "larson": [["-t", "4", "-s", "1000", "-n", "5000", "-g", "400"],
                   ["-t", "16", "-s", "1000", "-n", "5000", "-g", "100"]],
        "rptest": [["-t", "4", "-l", "4000", "-b", "500", "-w", "1000"],
                   ["-t", "8", "-l", "1000", "-b", "500", "-w", "2000", "-x", "2"]],
        "cxx": [["-c", c, "-n", "20000000"] for c in CXX_CASES],
        "sparse": [["-t", "2", "-n", "1000000", "-w", "2000"]],
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
        elif name in BUILT_PEERS:
            lib = BUILT                   # resolved by resolve_built_peers
        else:
            raise UsageError("unknown allocator %r (known: %s; or name=/path/lib.so)"
                             % (name, ", ".join(DEFAULT_ALLOCATORS)))
        if name in seen:
            raise UsageError("--allocators: %r given twice" % name)
        seen.add(name)
        out.append((name, lib))
    return out


def parse_conf_for(items, names):
    """['NAME=K:V,...'] -> {NAME: 'K:V,...'}; NAME must be an allocator of the run."""
    out = {}
    for item in items:
        name, sep, conf = item.partition("=")
        if not sep or not conf or name not in names:
            raise UsageError("--conf-for: want NAME=K:V,... with NAME one of --allocators (%s), "
                             "got %r" % (", ".join(names), item))
        out[name] = conf
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
        prog="run.py", description="alloy's benchmark runner: the workloads under each allocator, interleaved, with the medians, the ratio to the best peer and the targets.",
        epilog="Exit status: 0 when every run succeeded, 1 when some run crashed, timed out "
               "or (with --strict) an allocator was missing, 2 on bad arguments.")
    p.add_argument("--build-dir", default="build",
                   help="build tree holding the workload programs and liballoy.so (default: build)")
    p.add_argument("--mode", choices=sorted(MODES), default="short",
                   help="scale: smoke (CI, seconds), short (default, < 3 min), full (long)")
    p.add_argument("--allocators", default=",".join(DEFAULT_ALLOCATORS),
                   help="comma-separated: %s or name=/path.so (mimalloc3, snmalloc and rpmalloc "
                        "are built by $%s, default %s)" % (",".join(DEFAULT_ALLOCATORS),
                                                           PEERS_SCRIPT_ENV, PEERS_SCRIPT_DEFAULT))
    p.add_argument("--conf-for", action="append", default=[], metavar="NAME=K:V,...",
                   help="ALLOY_CONF for the runs of allocator NAME only (may be repeated), e.g. "
                        "--allocators alloy,tl=build/liballoy.so --conf-for "
                        "tl=timeline_file:/tmp/t.%%p.jsonl: one library, two settings, "
                        "interleaved")
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
    p.add_argument("--summarize", metavar="DIR",
                   help="rewrite DIR/summary.md and its charts from DIR/results.json, then exit "
                        "(no runs)")
    return p


# ---------------------------------------------------------------------------
# the peers built from source

def peers_script():
    """Path of build-peers.sh: $ALLOY_PEERS_SCRIPT, else the repository's
    bench/build-peers.sh."""
    env = os.environ.get(PEERS_SCRIPT_ENV)
    if env:
        return env
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return os.path.normpath(os.path.join(root, PEERS_SCRIPT_DEFAULT))


def parse_missing_lines(text):
    """build-peers.sh's stderr -> {name: reason} from its
    "build-peers.sh: NAME MISSING: WHY" lines; other lines are ignored."""
    out = {}
    for line in text.splitlines():
        head, sep, why = line.partition(" MISSING: ")
        f = head.split()
        if sep and len(f) == 2 and f[0].endswith(":"):
            out[f[1]] = why.strip()
    return out


def parse_peer_lines(text):
    """build-peers.sh's stdout ("NAME PATH" per line) -> {name: path}.  Lines
    of any other shape are ignored (the script may print progress)."""
    out = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) == 2 and os.path.isabs(f[1]):
            out[f[0]] = f[1]
    return out


def resolve_built_peers(names, script, out_dir, timeout=PEERS_SCRIPT_TIMEOUT):
    """Run build-peers.sh OUT_DIR (it builds once, later calls only print the
    paths) and find each wanted peer's library.  A peer the script names as
    MISSING gets its reason; the ones it printed are used even when it exits
    non-zero (bench/build-peers.sh exits 1 when any peer is missing).  Returns
    (found, missing): {name: path} and {name: reason}; nothing is dropped
    silently."""
    if not names:
        return {}, {}
    if not os.path.isfile(script):
        why = "%s not found (set %s to build-peers.sh)" % (script, PEERS_SCRIPT_ENV)
        return {}, {n: why for n in names}
    print("run.py: peers %s: %s %s" % (", ".join(names), script, out_dir), file=sys.stderr)
    try:
        r = subprocess.run(["bash", script, out_dir], capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        why = "%s did not finish in %d s" % (script, timeout)
        return {}, {n: why for n in names}
    paths = parse_peer_lines(r.stdout)
    reasons = parse_missing_lines(r.stderr)
    tail = r.stderr.strip().splitlines()[-1:] or ["no message"]
    found, missing = {}, {}
    for n in names:
        if n in reasons and n not in paths:
            missing[n] = reasons[n]
        elif n not in paths and r.returncode != 0:
            missing[n] = "%s failed (exit %d): %s" % (script, r.returncode, tail[0])
        elif n not in paths:
            missing[n] = "%s printed no %s line" % (script, n)
        elif not os.path.isfile(paths[n]):
            missing[n] = "%s: library missing after the build" % paths[n]
        else:
            found[n] = paths[n]
    return found, missing


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
    """One status line on stderr, rewritten in place on a tty; elsewhere (a pipe,
    a log) a plain line as each workload starts, with no escape codes.
    The estimate of the time left uses each workload's own mean run time so far
    (workloads differ by orders of magnitude), else the mean of all runs."""

    def __init__(self, remaining, enabled):
        self.remaining = dict(remaining)          # workload -> runs still to do
        self.total = sum(remaining.values())
        self.enabled, self.done = enabled, 0
        self.workload = None                      # the last one a plain line named
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
        el = int(time.monotonic() - self.t0)
        if not self.enabled:
            w = what.split(" ", 1)[0]
            if w != self.workload:
                self.workload = w
                print("run.py: [%d/%d] %s  elapsed %dm%02ds  left ~%s" % (
                    self.done + 1, self.total, w, el // 60, el % 60, self.eta()),
                    file=sys.stderr, flush=True)
            return
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


# Workloads added after the targets were set: in the tables, not in the
# verdicts, so that the targets keep the rows they were set on
UNJUDGED = {"cxx"}   # C++'s operators and sized delete, added later


def verdict_kind(workload, metric, group):
    """Which suite-wide target a table row counts for: 'time'
    (every st/mt row), 'mem' (every peak RSS row), 'faults' or 'ctx'
    (VERDICT_ROWS), or None (and None for the UNJUDGED workloads)."""
    if workload in UNJUDGED:
        return None
    if group in ("st", "mt"):
        return "time"
    if metric == "peak_rss":
        return "mem"
    return VERDICT_ROWS.get((workload, metric))


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
        conf_for = parse_conf_for(args.conf_for, [n for n, _ in allocs])
    except UsageError as e:
        parser.error(str(e))  # exits 2 with the usage line

    if args.summarize:
        return resummarize(args.summarize, args.no_charts)

    if args.list:
        for n in DEFAULT_ALLOCATORS:
            if n in BUILT_PEERS:
                print("allocator %-9s built by %s into %s" % (
                    n, peers_script(), os.path.join(args.build_dir, "peers")))
                continue
            lib = os.path.join(args.build_dir, "liballoy.so") if n == ALLOY else PEERS[n][0]
            ok = lib is None or os.path.exists(lib)
            print("allocator %-9s %s%s" % (n, lib or "(system malloc)", "" if ok else "  MISSING"))
        for w, (prog, desc, _) in WORKLOADS.items():
            print("workload  %-12s %s: %s" % (w, prog, desc))
        return 0

    mode = MODES[args.mode]
    reps = args.reps or mode["reps"]
    reps_for = {w: args.reps or mode.get("reps_for", {}).get(w, mode["reps"]) for w in workloads}
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
    built, built_missing = resolve_built_peers(
        [n for n, lib in allocs if lib is BUILT], peers_script(),
        os.path.abspath(os.path.join(args.build_dir, "peers")))
    present, missing = [], []
    for name, lib in allocs:
        if lib is BUILT and name in built_missing:
            missing.append((name, None, built_missing[name]))
            print("run.py: allocator %s MISSING: %s" % (name, built_missing[name]),
                  file=sys.stderr)
            continue
        if lib is BUILT:
            lib = built[name]
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
        remaining[w] = remaining.get(w, 0) + reps_for[w] * len(present)
    prog_bar = Progress(remaining, sys.stderr.isatty())
    load_at_start = os.getloadavg()

    raw = []          # rows for raw.csv
    runs = []         # everything, for results.json
    series = {}       # (workload, case, allocator) -> first good series
    bad = []          # (workload, allocator, rep, status, stderr tail)
    commands = []
    for w, wargs in jobs:
        prog = os.path.join(args.build_dir, WORKLOADS[w][0])
        for rep in range(reps_for[w]):
            for name, lib in present:                    # interleaved: A B C A B C
                prog_bar.show("%s %s  %s  rep %d/%d" % (w, " ".join(wargs), name, rep + 1,
                                                        reps_for[w]))
                env = dict(os.environ)
                env.pop("LD_PRELOAD", None)
                cmd = [prog] + wargs
                shown = ("LD_PRELOAD=%s " % os.path.abspath(lib) if lib else "") + " ".join(cmd)
                if name in conf_for:
                    env["ALLOY_CONF"] = conf_for[name]
                    shown = "ALLOY_CONF=%s %s" % (conf_for[name], shown)
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

    names = [n for n, _ in present]
    rows, failed_cells = aggregate(runs, bad, workloads)
    alloy_name = ALLOY if ALLOY in names else None
    env_info = environment(args, reps, reps_for, timeout, use_perf, present, missing,
                           load_at_start)
    md = render_markdown(rows, names, alloy_name, env_info, missing, bad, failed_cells)

    with open(os.path.join(out_dir, "raw.csv"), "w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(["workload", "args", "case", "allocator", "rep", "status", "metric", "value"])
        wr.writerows(raw)
    with open(os.path.join(out_dir, "results.json"), "w") as f:
        json.dump({"environment": env_info, "runs": runs,
                   "series": [{"workload": k[0], "case": k[1], "allocator": k[2], "samples": v}
                              for k, v in series.items()],
                   "summary": [{k: r[k] for k in ("workload", "case", "metric", "group",
                                                  "verdict", "stats")}
                               for r in rows]}, f, indent=1)
    with open(os.path.join(out_dir, "summary.md"), "w") as f:
        f.write(md)
    with open(os.path.join(out_dir, "commands.txt"), "w") as f:
        f.write("\n".join(commands) + "\n")
    if not args.no_charts:
        write_charts(rows, series, names, out_dir)
    if not args.quiet:
        sys.stdout.write(md)
    print("run.py: results in %s (raw.csv, results.json, summary.md)" % out_dir, file=sys.stderr)
    if bad:
        return 1
    if args.strict and missing:
        return 1
    return 0


def aggregate(runs, bad, workloads):
    """The table's rows from the runs: (workload, case, metric) -> allocator ->
    median (min-max), in the order the workloads declare their metrics; and
    the (workload, allocator) cells that failed, with the first failure."""
    agg, failed_cells = {}, {}
    for r in runs:
        if r["status"] != "ok":
            continue
        for case, metrics in r["results"].items():
            for m, v in metrics.items():
                agg.setdefault((r["workload"], case, m), {}).setdefault(r["allocator"], []).append(v)
    for w, a, name, rep, status, _ in bad:
        failed_cells.setdefault((w, name), status)
    rows = []
    for (w, case, m) in sorted(agg, key=lambda k: (workloads.index(k[0]), case_sort(k[1]))):
        groups = dict(case_groups(w, case))
        if m not in groups:
            continue
        stats = {a: bs.summarize(vs) for a, vs in agg[(w, case, m)].items()}
        rows.append({"workload": w, "case": case, "metric": m, "group": groups[m],
                     "verdict": verdict_kind(w, m, groups[m]),
                     "stats": stats, "values": {a: s[0] for a, s in stats.items()}})
    order = {w: [m for m, _ in WORKLOADS[w][2]] for w in WORKLOADS}
    rows.sort(key=lambda r: (workloads.index(r["workload"]), order[r["workload"]].index(r["metric"]),
                             case_sort(r["case"])))
    return rows, failed_cells


def write_charts(rows, series, names, out_dir):
    """The PNG charts, when matplotlib is there (charts.py); a note when not."""
    try:
        import charts
        made = charts.make_all(rows, series, names, out_dir)
        if made:
            print("run.py: charts: %s" % ", ".join(made), file=sys.stderr)
    except ImportError as e:
        print("run.py: charts skipped (%s)" % e, file=sys.stderr)


def resummarize(out_dir, no_charts):
    """--summarize DIR: summary.md (and the charts) again from DIR/results.json,
    with today's rules (the runs are not repeated)."""
    path = os.path.join(out_dir, "results.json")
    try:
        with open(path) as f:
            res = json.load(f)
    except (OSError, ValueError) as e:
        print("run.py: cannot read %s: %s" % (path, e), file=sys.stderr)
        return 2
    env, runs = res["environment"], res["runs"]
    workloads = []
    for r in runs:
        if r["workload"] not in workloads:
            workloads.append(r["workload"])
    bad = [(r["workload"], " ".join(r["args"]), r["allocator"], r["rep"], r["status"], [])
           for r in runs if r["status"] != "ok"]
    rows, failed_cells = aggregate(runs, bad, workloads)
    names = list(env["allocators"])
    missing = [(n, None, hint) for n, hint in env["missing"].items()]
    md = render_markdown(rows, names, ALLOY if ALLOY in names else None, env, missing, bad,
                         failed_cells)
    with open(os.path.join(out_dir, "summary.md"), "w") as f:
        f.write(md)
    if not no_charts:
        series = {(x["workload"], x["case"], x["allocator"]): x["samples"] for x in res["series"]}
        write_charts(rows, series, names, out_dir)
    print("run.py: %s rewritten from results.json" % os.path.join(out_dir, "summary.md"),
          file=sys.stderr)
    return 0


def case_sort(case):
    """Natural order: size_8 < size_64 < size_512; threads_2 < threads_16."""
    head, _, tail = case.rpartition("_")
    return (head, int(tail)) if tail.isdigit() else (case, 0)


def environment(args, reps, reps_for, timeout, use_perf, present, missing, load_at_start):
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
        "reps_for": {w: n for w, n in reps_for.items() if n != reps},
        "peers_script": peers_script(),
        "cpu": cpu, "ncpu": os.cpu_count(), "kernel": platform.release(),
        "commit": sh(["git", "-C", here, "rev-parse", "--short", "HEAD"]),
        "loadavg": " ".join("%.2f" % x for x in load_at_start),
        "loadavg_end": " ".join("%.2f" % x for x in os.getloadavg()),
        "perf_hw_counters": use_perf,
        "allocators": {n: (lib or "system malloc") for n, lib in present},
        "missing": {n: hint for n, _, hint in missing},
        "argv": " ".join(sys.argv),
    }


def render_markdown(rows, names, alloy, env, missing, bad, failed_cells):
    L = []
    L.append("## alloy benchmark: %s mode, %s\n" % (env["mode"], env["date"]))
    L.append("%s, %s CPUs, Linux %s, commit %s, load average at start %s, at the end %s.  "
             "Each cell: median (min-max) of %d runs%s, allocators interleaved.  "
             "`alloy/best`: alloy's median over the best peer's, oriented so that > 1 means "
             "alloy is worse (for throughput: best/alloy).  Single-threaded workloads (sizes, frag, "
             "realloc, large) are timed in process CPU time, the others in wall time.\n" % (
                 env["cpu"], env["ncpu"], env["kernel"], env["commit"], env["loadavg"],
                 env.get("loadavg_end", "?"),
                 env["reps"], "".join(" (%s: %d)" % kv for kv in env.get("reps_for", {}).items())))
    for n, hint in env["missing"].items():
        L.append("- **%s: MISSING** (%s)" % (n, hint))
    if env["missing"]:
        L.append("")
    hdr = ["workload", "case", "metric"] + names + ["best peer", "alloy/best"]
    head = [r for r in rows if r["group"] or r.get("verdict")]
    rest = [r for r in rows if not (r["group"] or r.get("verdict"))]
    for title, part in (("Headline (the metrics the targets below are judged on)", head),
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
        for title, results in (("Targets: each workload against the best peer", bs.evaluate_targets(rows, alloy)),
                               ("Targets: the whole suite's geometric means and bounds",
                                bs.evaluate_verdicts(rows, alloy))):
            L.append("### %s\n" % title)
            for text, met, detail in results:
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
