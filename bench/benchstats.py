# SPDX-License-Identifier: MIT
"""benchstats.py - the runner's pure pieces: statistics (median, nearest-rank
percentiles, min-max), parsing of the workload programs' output lines, the
ratio-against-best-peer table and the evaluation of the two sets of targets:
each workload against the best peer (evaluate_targets) and the whole suite's
geometric means and bounds (evaluate_verdicts).

No I/O and no subprocesses here, so test_runner.py can check all of it on
synthetic data.  Metric directions are declared in METRICS: a ratio is always
expressed so that > 1 means alloy is worse than the best peer.
"""
import math

# metric -> (label, unit, lower_is_better, scale for display)
METRICS = {
    "ns_per_op": ("per op", "ns", True, 1.0),
    "wall_ns_per_op": ("per op, wall", "ns", True, 1.0),
    "p99_ns": ("P99", "ns", True, 1.0),
    "p999_ns": ("P999", "ns", True, 1.0),
    "mops_per_s": ("throughput", "M ops/s", False, 1.0),
    "time_s": ("time", "s", True, 1.0),
    "time_ms": ("time", "ms", True, 1.0),
    "cpu_ms": ("CPU time", "ms", True, 1.0),
    "wall_ms": ("wall time", "ms", True, 1.0),
    "peak_rss": ("peak RSS", "MiB", True, 1.0 / 1048576),
    "rss_end": ("final RSS", "MiB", True, 1.0 / 1048576),
    "rss_freed": ("RSS after the free", "MiB", True, 1.0 / 1048576),
    "rss_idle_end": ("RSS after the idle", "MiB", True, 1.0 / 1048576),
    "returned_pct": ("freed bytes returned", "%", False, 1.0),
    "time_to_drop_ms": ("time to drop (capped at the idle)", "ms", True, 1.0),
    "faults": ("page faults", "", True, 1.0),
    "rss_over_live": ("RSS/live at end", "x", True, 1.0),
    "mean_rss_over_live": ("mean RSS/live", "x", True, 1.0),
    "rss_growth_pct": ("RSS growth", "%", True, 1.0),
    "ctx_switches": ("context switches", "", True, 1.0),
    "vol_ctx_switches": ("voluntary context switches", "", True, 1.0),
    "invol_ctx_switches": ("involuntary context switches", "", True, 1.0),
    "usable_pct": ("usable (live/RSS)", "%", False, 1.0),
}


def median(xs):
    """Median of a non-empty sequence; the mean of the two middle values for an
    even count."""
    s = sorted(xs)
    n = len(s)
    if n == 0:
        raise ValueError("median of an empty sequence")
    mid = n // 2
    return s[mid] if n % 2 else (s[mid - 1] + s[mid]) / 2.0


def percentile(xs, q):
    """Nearest-rank percentile, q in [0, 100]: the ceil(q/100 * n)-th smallest
    value (the smallest for q == 0).  Same rule as hist_quantile in hist.c."""
    if not 0 <= q <= 100:
        raise ValueError("percentile q must be in [0, 100], got %r" % (q,))
    s = sorted(xs)
    if not s:
        raise ValueError("percentile of an empty sequence")
    rank = max(1, math.ceil(q / 100.0 * len(s)))
    return s[rank - 1]


def summarize(xs):
    """(median, min, max, n) of the values."""
    return (median(xs), min(xs), max(xs), len(xs))


def parse_line(line):
    """Parse one output line of a workload program.

    Returns (kind, fields) where kind is 'info', 'res' or 'ts' and fields maps
    keys to strings (numbers are converted by the caller).  Raises ValueError on
    anything else, so a stray printf in a workload is caught by the tests."""
    parts = line.strip().split()
    if not parts:
        raise ValueError("empty line")
    kind = parts[0]
    if kind not in ("info", "res", "ts"):
        raise ValueError("unknown record kind %r in line %r" % (kind, line))
    fields = {}
    for tok in parts[1:]:
        key, sep, val = tok.partition("=")
        if not sep or not key:
            raise ValueError("malformed field %r in line %r" % (tok, line))
        fields[key] = val
    if kind in ("res", "ts") and "case" not in fields:
        raise ValueError("%s line without case=: %r" % (kind, line))
    return kind, fields


def parse_output(text):
    """Parse a workload's whole stdout: returns (info, results, series) where
    results maps case -> {metric: float} and series maps case -> list of
    (t_ms, rss, live) tuples."""
    info, results, series = {}, {}, {}
    for line in text.splitlines():
        if not line.strip():
            continue
        kind, f = parse_line(line)
        if kind == "info":
            info.update(f)
        elif kind == "res":
            case = f.pop("case")
            results.setdefault(case, {}).update({k: float(v) for k, v in f.items()})
        else:
            case = f.pop("case")
            series.setdefault(case, []).append(
                (float(f["t_ms"]), float(f["rss"]), float(f["live"])))
    return info, results, series


def fmt_num(v):
    if v is None:
        return "-"
    a = abs(v)                        # three significant digits, no exponent
    if a >= 100:
        return "%.0f" % v
    if a >= 10:
        return "%.1f" % v
    if a >= 1:
        return "%.2f" % v
    return "%.3g" % v


def is_peer(name, alloy="alloy"):
    """Other builds of alloy in the same run (alloy-<tag>=path.so, to compare
    commits) are not peers: the best peer is another allocator's."""
    return name != alloy and not name.startswith(alloy + "-")


def ratio_vs_best(values, alloy, metric):
    """values: allocator -> median.  Returns (best_peer_name, ratio) where ratio
    > 1 means alloy is worse; (None, None) without peers, (best, None) without
    alloy or when the best peer's value is <= 0 (e.g. a negative RSS growth)."""
    lower = METRICS[metric][2]
    peers = {a: v for a, v in values.items() if is_peer(a, alloy) and v is not None}
    if not peers:
        return None, None
    best = min(peers, key=peers.get) if lower else max(peers, key=peers.get)
    mine = values.get(alloy)
    if mine is None:
        return best, None
    b = peers[best]
    if lower:
        if b <= 0 or mine < 0:
            return best, None       # a ratio of values that can be <= 0 means nothing
        r = mine / b
    else:
        r = b / mine if mine > 0 else float("inf")
    return best, r


def rounded_ratio(values, alloy, metric):
    """ratio_vs_best with the ratio rounded to 2 decimals, as the table shows it,
    so that the table and the target verdicts never disagree."""
    best, r = ratio_vs_best(values, alloy, metric)
    return best, (None if r is None else round(r, 2))


def evaluate_targets(rows, alloy="alloy"):
    """rows: list of dicts with keys workload, case, metric, group ('st', 'mt'
    or 'mem') and values (allocator -> median).  Returns a list of
    (target_text, met: bool|None, detail): single-threaded rows within 10% of
    the fastest peer, threaded rows faster than glibc and within 25% of the best
    peer, peak RSS within 1.1x the leanest peer."""
    out = []
    st = [r for r in rows if r["group"] == "st"]
    mt = [r for r in rows if r["group"] == "mt"]
    mem = [r for r in rows if r["group"] == "mem"]

    def have(r):  # alloy and a peer to divide by
        return rounded_ratio(r["values"], alloy, r["metric"])[1] is not None

    if st and all(have(r) for r in st):
        ratios = [(r, rounded_ratio(r["values"], alloy, r["metric"])) for r in st]
        within = [x for x in ratios if x[1][1] <= 1.10]
        fastest = [x for x in ratios if x[1][1] <= 1.0]
        worst = max(ratios, key=lambda x: x[1][1])
        out.append(("single-threaded: within 10% of the fastest peer on every workload",
                    len(within) == len(ratios),
                    "%d/%d within; worst %s %s = %.2fx best peer (%s)" % (
                        len(within), len(ratios), worst[0]["workload"], worst[0]["case"],
                        worst[1][1], worst[1][0])))
        out.append(("single-threaded: fastest on at least half of them",
                    2 * len(fastest) >= len(ratios),
                    "fastest on %d/%d" % (len(fastest), len(ratios))))
    else:
        out.append(("single-threaded targets", None, "alloy or its peers not measured"))
    if mt and all(have(r) for r in mt):
        beats, within = 0, 0
        worst = None
        for r in mt:
            v = r["values"]
            g = v.get("glibc")
            lower = METRICS[r["metric"]][2]
            if g is None or (v[alloy] < g if lower else v[alloy] > g):
                beats += 1
            best, ratio = rounded_ratio(v, alloy, r["metric"])
            if ratio <= 1.25:
                within += 1
            if worst is None or ratio > worst[1]:
                worst = (r, ratio, best)
        out.append(("multithreaded/cross-thread: beats glibc", beats == len(mt),
                    "beats glibc on %d/%d" % (beats, len(mt))))
        out.append(("multithreaded/cross-thread: within 25% of the best peer",
                    within == len(mt),
                    "%d/%d within; worst %s %s = %.2fx best peer (%s)" % (
                        within, len(mt), worst[0]["workload"], worst[0]["case"], worst[1],
                        worst[2])))
    else:
        out.append(("multithreaded targets", None, "alloy or its peers not measured"))
    if mem and all(have(r) for r in mem):
        details, ok = [], True
        for r in mem:
            best, ratio = rounded_ratio(r["values"], alloy, r["metric"])
            ok = ok and ratio <= 1.10
            details.append("%s %s %.2fx %s" % (r["workload"], r["case"], ratio, best))
        out.append(("memory: peak RSS <= 1.1x the leanest peer (mixed, frag)", ok,
                    "; ".join(details)))
    else:
        out.append(("memory target", None, "alloy or its peers not measured"))
    return out


# The suite-wide targets: their bounds
TIME_GEOMEAN_MAX = 0.95     # geomean of alloy/peer over the time rows, for every peer
TIME_ROW_MAX = 1.15         # no time row above this times the best peer
MEM_GEOMEAN_MAX = 1.0       # geomean of alloy/glibc over the peak RSS rows
MEM_ROW_MAX = 1.25          # no peak RSS row above this times the leanest peer
CTX_MAX = 2.0               # malloc_test context switches over mimalloc's (best of 2 and 3)
CTX_THREADS = (16, 100)
MIMALLOCS = ("mimalloc", "mimalloc3")


def geomean(xs):
    """Geometric mean of positive numbers."""
    if not xs or min(xs) <= 0:
        raise ValueError("geomean needs positive numbers, got %r" % (xs,))
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def oriented_ratio(mine, theirs, metric):
    """alloy's value over another allocator's, oriented like ratio_vs_best (> 1:
    alloy is worse); None when either is missing or not positive."""
    if mine is None or theirs is None or mine <= 0 or theirs <= 0:
        return None
    return mine / theirs if METRICS[metric][2] else theirs / mine


def _label(r):
    return "%s %s" % (r["workload"], r["case"])


def _geomean_verdict(rows, alloy, peers, bound):
    """For each peer: the geomean of alloy/peer over the rows both have, rounded
    as displayed.  Returns (every peer within bound, "peer 0.91 (n rows); ...")."""
    ok, parts = True, []
    for p in peers:
        rs = [oriented_ratio(r["values"][alloy], r["values"].get(p), r["metric"]) for r in rows]
        rs = [x for x in rs if x is not None]
        if not rs:
            parts.append("%s not measured" % p)
            continue
        g = round(geomean(rs), 2)
        ok = ok and g <= bound
        parts.append("%s %.2f%s" % (p, g, "" if len(rs) == len(rows) else " (%d rows)" % len(rs)))
    return ok, "; ".join(parts)


def _row_bound_verdict(rows, alloy, bound):
    """Every row's alloy/best-peer ratio (as displayed) within bound?  Returns
    (ok, detail naming the rows over it, or the worst)."""
    ratios = [(r, rounded_ratio(r["values"], alloy, r["metric"])) for r in rows]
    ratios = [(r, best, x) for r, (best, x) in ratios if x is not None]
    if not ratios:
        return None, "no row with a peer to compare"
    over = [t for t in ratios if t[2] > bound]
    worst = max(ratios, key=lambda t: t[2])
    detail = "%d/%d within" % (len(ratios) - len(over), len(ratios))
    if over:
        detail += "; over: " + ", ".join("%s %.2fx %s" % (_label(r), x, b)
                                         for r, b, x in sorted(over, key=lambda t: -t[2]))
    else:
        detail += "; worst %s %.2fx %s" % (_label(worst[0]), worst[2], worst[1])
    return len(over) == 0, detail


def evaluate_verdicts(rows, alloy="alloy"):
    """The suite-wide targets, from one run.  rows: dicts with
    workload, case, metric, verdict ('time', 'mem', 'faults', 'ctx' or None)
    and values (allocator -> median).  Returns a list of (target_text, met:
    bool|None, detail); None when what it needs was not measured."""
    def kind(k):
        return [r for r in rows if r.get("verdict") == k and r["values"].get(alloy) is not None]

    def peers_of(rs):
        seen = []
        for r in rs:
            for a in r["values"]:
                if is_peer(a, alloy) and a not in seen:
                    seen.append(a)
        return seen

    out = []
    time_rows = kind("time")
    peers = peers_of(time_rows)
    if time_rows and peers:
        ok, detail = _geomean_verdict(time_rows, alloy, peers, TIME_GEOMEAN_MAX)
        out.append(("time: geomean of alloy/peer over the %d time rows <= %.2fx for every peer"
                    % (len(time_rows), TIME_GEOMEAN_MAX), ok, detail))
        ok, detail = _row_bound_verdict(time_rows, alloy, TIME_ROW_MAX)
        out.append(("time: no workload above %.2fx the best peer" % TIME_ROW_MAX, ok, detail))
    else:
        out.append(("time targets", None, "alloy or its peers not measured"))

    mem_rows = kind("mem")
    if mem_rows and any("glibc" in r["values"] for r in mem_rows):
        ok, detail = _geomean_verdict(mem_rows, alloy, ["glibc"], MEM_GEOMEAN_MAX)
        out.append(("memory: peak-RSS geomean over the %d RSS rows <= %.2fx glibc's"
                    % (len(mem_rows), MEM_GEOMEAN_MAX), ok, detail))
    else:
        out.append(("memory: peak-RSS geomean against glibc", None, "glibc or alloy not measured"))
    if mem_rows:
        ok, detail = _row_bound_verdict(mem_rows, alloy, MEM_ROW_MAX)
        out.append(("memory: no workload above %.2fx the leanest peer" % MEM_ROW_MAX, ok, detail))
    else:
        out.append(("memory: against the leanest peer", None, "alloy not measured"))

    fault_rows = [r for r in kind("faults") if r["values"].get("glibc") is not None]
    if fault_rows:
        parts, ok = [], True
        for r in fault_rows:
            mine, g = r["values"][alloy], r["values"]["glibc"]
            ok = ok and mine <= g
            parts.append("%s: %s against glibc's %s" % (_label(r), fmt_num(mine), fmt_num(g)))
        out.append(("faults: large-block recycling, no more page faults than glibc", ok,
                    "; ".join(parts)))
    else:
        out.append(("faults: large-block recycling against glibc", None,
                    "large, glibc or alloy not measured"))

    ctx_rows = {}
    for r in kind("ctx"):
        for t in CTX_THREADS:
            if r["case"].startswith("T%d_" % t):
                ctx_rows.setdefault(t, []).append(r)
    text = ("contention: malloc_test at %s threads, context switches <= %.0fx mimalloc's "
            "(the best of %s present)" % (" and ".join(map(str, CTX_THREADS)), CTX_MAX,
                                          "/".join(MIMALLOCS)))
    lacking = [t for t in CTX_THREADS if t not in ctx_rows]
    if lacking:
        out.append((text, None, "not measured at %s threads" % ", ".join(map(str, lacking))))
    else:
        parts, ok = [], True
        for t in CTX_THREADS:
            for r in ctx_rows[t]:
                mims = {a: r["values"][a] for a in MIMALLOCS if r["values"].get(a) is not None}
                if not mims:
                    ok = None
                    parts.append("%s: no mimalloc measured" % _label(r))
                    continue
                best = min(mims, key=mims.get)
                mine = r["values"][alloy]
                if mims[best] > 0:
                    ratio = round(mine / mims[best], 2)
                else:                   # 2x of none is none
                    ratio = 0.0 if mine <= 0 else float("inf")
                if ok is not None:
                    ok = ok and ratio <= CTX_MAX
                parts.append("%s: %s against %s's %s = %.2fx" % (
                    _label(r), fmt_num(r["values"][alloy]), best, fmt_num(mims[best]), ratio))
        out.append((text, ok, "; ".join(parts)))
    return out
