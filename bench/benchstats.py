"""benchstats.py - the runner's pure pieces: statistics (median, nearest-rank
percentiles, min-max), parsing of the workload programs' output lines, the
ratio-against-best-peer table and the evaluation of issue 3's targets.

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
    "rss_over_live": ("RSS/live at end", "x", True, 1.0),
    "mean_rss_over_live": ("mean RSS/live", "x", True, 1.0),
    "rss_growth_pct": ("RSS growth", "%", True, 1.0),
    "ctx_switches": ("context switches", "", True, 1.0),
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


def ratio_vs_best(values, alloy, metric):
    """values: allocator -> median.  Returns (best_peer_name, ratio) where ratio
    > 1 means alloy is worse; (None, None) without peers, (best, None) without
    alloy or when the best peer's value is <= 0 (e.g. a negative RSS growth)."""
    lower = METRICS[metric][2]
    peers = {a: v for a, v in values.items() if a != alloy and v is not None}
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
    (target_text, met: bool|None, detail) following issue 3's targets."""
    out = []
    st = [r for r in rows if r["group"] == "st"]
    mt = [r for r in rows if r["group"] == "mt"]
    mem = [r for r in rows if r["group"] == "mem"]

    def have(r):
        return r["values"].get(alloy) is not None

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
        out.append(("single-threaded targets", None, "alloy not measured"))
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
        out.append(("multithreaded targets", None, "alloy not measured"))
    if mem and all(have(r) for r in mem):
        details, ok = [], True
        for r in mem:
            best, ratio = rounded_ratio(r["values"], alloy, r["metric"])
            ok = ok and ratio <= 1.10
            details.append("%s %s %.2fx %s" % (r["workload"], r["case"], ratio, best))
        out.append(("memory: peak RSS <= 1.1x the leanest peer (mixed, frag)", ok,
                    "; ".join(details)))
    else:
        out.append(("memory target", None, "alloy not measured"))
    return out
