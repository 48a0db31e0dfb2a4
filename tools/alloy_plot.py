# SPDX-License-Identifier: MIT
"""alloy_plot.py - `alloy plot`'s chart and summary of a timeline.

    python3 -c "$(cat alloy_plot.py)" OUT FILE [FILE2]

The `alloy` command carries this script compiled in (tools/alloy_plot.c)
and runs it so, after checking its arguments; OUT ends in .svg or .png.

A timeline (docs/OBSERVING.md) is line-delimited JSON: a header, then one
record every timeline_ms with RSS (the kernel's count), alloy's resident
bytes and their breakdown (in use, thread caches, central caches, span
tails, page-heap free, metadata), and the size classes whose bytes changed
since the record before (a reader keeps the latest value of each class).

The chart: resident memory by component as stacked areas over time, the
allocated bytes and the RSS as lines, the peaks marked, and the phases where
RSS grew fastest shaded and numbered.  Two timelines: their RSS and
allocated bytes overlaid in one panel, and each one's stacked areas below.

The summary, on stdout, names those phases: how much RSS grew, when, and
which size class (or the large blocks) took most of alloy's resident growth,
and whether in use or cached.  RSS is cut into straight pieces
(each within 3% of the peak RSS of every record it spans); the pieces that
grow at least a tenth as fast as the fastest, merged when one follows
another, are phases if they grew at least 1 MiB and 5% of the peak; the
three that grew fastest are named, in time order.

Exit status: 0; 2 for a file that is not a timeline; 1 without matplotlib
(the message names the Debian package).
"""
import json
import os
import sys

MIB = 1024.0 * 1024.0
PARTS = [("in_use", "in use", "#d62728"), ("tcache", "thread caches", "#ff7f0e"),
         ("central", "central caches", "#1f77b4"), ("span_tails", "span tails", "#9467bd"),
         ("pageheap_free", "page heap free", "#2ca02c"), ("metadata", "metadata", "#7f7f7f")]
LINE_COLORS = ["#d62728", "#1f77b4"]
MAX_PHASES = 3


def fail(path, msg):
    print("alloy plot: %s: %s" % (path, msg), file=sys.stderr)
    sys.exit(2)


class Timeline:
    """A timeline's header, its records, and the class deltas to replay."""

    def __init__(self, path):
        self.path = path
        self.name = os.path.basename(path)
        self.header, self.records = None, []
        try:
            with open(path, encoding="utf-8") as f:
                lines = f.read().splitlines()
        except (OSError, UnicodeDecodeError) as e:
            fail(path, str(e))
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError:
                if n == len(lines):  # the last line, cut by a kill or a full disk
                    break
                fail(path, "line %d is not JSON" % n)
            if self.header is None:
                if not isinstance(obj, dict) or obj.get("alloy_timeline") != 1:
                    fail(path, "not an alloy timeline (version 1)")
                self.header = obj
            elif isinstance(obj, dict) and "t" in obj and "rss" in obj:
                self.records.append(obj)
            else:
                fail(path, "line %d is not a timeline record" % n)
        if self.header is None:
            fail(path, "empty")
        self.t = [r["t"] for r in self.records]

    def series(self, key):
        return [r.get(key, 0) for r in self.records]

    def classes_at(self, i):
        """{class: (size, span bytes, in use)} as of record i."""
        state = {}
        for r in self.records[:i + 1]:
            for c in r.get("classes", []):
                state[c[0]] = (c[1], c[2], c[3])
        return state


def mib(v):
    return "%.1f MiB" % (v / MIB)


def simplify(t, v, tol):
    """Vertex indices of a piecewise-linear version of v(t) that stays within
    tol of every point (Ramer-Douglas-Peucker, vertical distances)."""
    keep, todo = {0, len(t) - 1}, [(0, len(t) - 1)]
    while todo:
        a, b = todo.pop()
        worst, at = tol, None
        for i in range(a + 1, b):
            f = (t[i] - t[a]) / (t[b] - t[a]) if t[b] > t[a] else 0.0
            d = abs(v[i] - (v[a] + f * (v[b] - v[a])))
            if d > worst:
                worst, at = d, i
        if at is not None:
            keep.add(at)
            todo += [(a, at), (at, b)]
    return sorted(keep)


def find_phases(tl):
    """The phases of fastest RSS growth: [(first, last record index)], in
    time order.  RSS is cut into straight pieces (within 3% of its peak);
    the pieces that grow at least a tenth as fast as the fastest one, merged
    when one follows another, and that grew at least 1 MiB and 5% of the
    peak are phases, and the MAX_PHASES fastest are kept."""
    t, rss = tl.t, tl.series("rss")
    if len(t) < 2 or max(rss) <= 0:
        return []
    peak = max(rss)
    cuts = simplify(t, rss, max(MIB, peak * 0.03))
    def rate(ab):
        return (rss[ab[1]] - rss[ab[0]]) / (t[ab[1]] - t[ab[0]])
    growing = [(a, b) for a, b in zip(cuts, cuts[1:]) if rss[b] > rss[a] and t[b] > t[a]]
    fastest = max([rate(ab) for ab in growing] + [0.0])
    pieces = []
    for a, b in growing:
        if rate((a, b)) < fastest / 10:
            continue  # creeping, not a phase of growth
        if pieces and pieces[-1][1] == a:  # growth goes on at another pace
            pieces[-1] = (pieces[-1][0], b)
        else:
            pieces.append((a, b))
    phases = [(a, b) for a, b in pieces if rss[b] - rss[a] >= max(MIB, peak / 20)]
    phases.sort(key=rate, reverse=True)
    return sorted(phases[:MAX_PHASES])


def explain(tl, a, b):
    """Which class (or the large blocks) took most of alloy's resident growth
    between records a and b, and whether in use or cached; when that is
    under half of it, the parts of the breakdown that grew most too."""
    ra, rb = tl.records[a], tl.records[b]
    grew = rb["resident"] - ra["resident"]
    if grew <= 0:
        return "alloy's resident bytes did not grow: the growth is outside alloy's heaps"
    ca, cb = tl.classes_at(a), tl.classes_at(b)
    best, best_d, best_use = None, 0, 0
    for cls, (size, span, use) in cb.items():
        span0, use0 = ca.get(cls, (size, 0, 0))[1:]
        if span - span0 > best_d:
            best, best_d, best_use = (cls, size), span - span0, use - use0
    large_d = rb["large"] - ra["large"]
    text = "alloy's resident grew %s" % mib(grew)
    if large_d > best_d:
        share = 100.0 * large_d / grew
        text += ": %s in large blocks (above 256 KiB), in use" % portion(large_d, grew)
    elif best is not None:
        share = 100.0 * best_d / grew
        where = "in use" if best_use >= best_d / 2 else "cached (free in thread or central caches)"
        text += ": %s in size class %d (class %d), %s" % (portion(best_d, grew), best[1],
                                                         best[0], where)
    else:
        share = 0.0
    if share < 50:
        # the parts that changed most, in MiB: one part can grow by more than
        # the total when another shrinks (blocks taken from the caches)
        parts = sorted(((rb[k] - ra[k], label) for k, label, _ in PARTS),
                       key=lambda p: abs(p[0]), reverse=True)
        text += "; by part: " + ", ".join("%s %s%s" % (label, "+" if d > 0 else "-",
                                                       mib(abs(d)))
                                          for d, label in parts[:2] if d != 0)
    return text


def portion(d, grew):
    """d bytes of a growth of grew, as a share of it; in MiB when d is more
    than grew (other parts shrank meanwhile)."""
    if d <= grew:
        return "%.0f%% of it" % (100.0 * d / grew)
    return "%s (more than that: other parts shrank)" % mib(d)


def summary(tl, phases):
    h, rss, res = tl.header, tl.series("rss"), tl.series("resident")
    out = ["%s: %s (pid %s), %d records over %.1f s, every %d ms" % (
        tl.name, h.get("cmd", "?"), h.get("pid", "?"), len(tl.records),
        tl.t[-1] if tl.t else 0.0, h.get("interval_ms", 0))]
    if not tl.records:
        return out + ["  no records"]
    ip, ir = rss.index(max(rss)), res.index(max(res))
    last = tl.records[-1]
    out.append("  peak RSS %s at %.1f s; peak alloy resident %s at %.1f s; at the end RSS %s, "
               "in use %s" % (mib(rss[ip]), tl.t[ip], mib(res[ir]), tl.t[ir], mib(last["rss"]),
                              mib(last["in_use"])))
    if not phases:
        out.append("  RSS never grew by more than 1 MiB and 5% of its peak in one phase")
    for n, (a, b) in enumerate(phases, 1):
        d, dt = rss[b] - rss[a], tl.t[b] - tl.t[a]
        out.append("  phase %d: RSS grew %s between %.1f s and %.1f s (%s/s); %s" % (
            n, mib(d), tl.t[a], tl.t[b], mib(d / dt if dt > 0 else 0.0), explain(tl, a, b)))
    return out


def stack_panel(ax, tl, phases, plt):
    t = tl.t
    ys = [[v / MIB for v in tl.series(key)] for key, _, _ in PARTS]
    for n, (a, b) in enumerate(phases, 1):
        ax.axvspan(t[a], t[b], color="#fff3b0", zorder=0, linewidth=0)
    ax.stackplot(t, ys, labels=[label for _, label, _ in PARTS],
                 colors=[c for _, _, c in PARTS], alpha=0.85, linewidth=0, zorder=1)
    alloc = [v / MIB for v in tl.series("allocated")]
    rss = [v / MIB for v in tl.series("rss")]
    ax.plot(t, alloc, color="black", linewidth=1.2, label="allocated")
    ax.plot(t, rss, color="black", linestyle="--", linewidth=1.2, label="RSS (kernel)")
    for n, (a, b) in enumerate(phases, 1):
        ax.text((t[a] + t[b]) / 2, max(rss) * 1.04, "phase %d" % n, ha="center", va="bottom",
                fontsize=8)
    if rss:
        i = rss.index(max(rss))
        ax.plot([t[i]], [rss[i]], marker="v", color="black")
        right = t[i] > 0.7 * t[-1]  # the label goes left of a peak near the end
        ax.annotate("peak RSS %.1f MiB" % rss[i], (t[i], rss[i]), textcoords="offset points",
                    xytext=(-6 if right else 6, 6), ha="right" if right else "left", fontsize=8)
        j = alloc.index(max(alloc))
        right = t[j] > 0.7 * t[-1]
        ax.plot([t[j]], [alloc[j]], marker="o", color="black", markersize=4)
        ax.annotate("peak allocated %.1f MiB" % alloc[j], (t[j], alloc[j]),
                    textcoords="offset points", xytext=(-6 if right else 6, -12),
                    ha="right" if right else "left", fontsize=8)
    ax.set_ylabel("MiB")
    ax.set_ylim(bottom=0, top=max(rss + [1.0]) * 1.12)
    ax.grid(alpha=0.3)
    ax.set_title("%s: %s (pid %s)" % (tl.name, tl.header.get("cmd", "?"),
                                      tl.header.get("pid", "?")), fontsize=10)


def overlay_panel(ax, tls):
    for tl, color in zip(tls, LINE_COLORS):
        ax.plot(tl.t, [v / MIB for v in tl.series("rss")], color=color, linewidth=1.4,
                label="%s RSS" % tl.name)
        ax.plot(tl.t, [v / MIB for v in tl.series("allocated")], color=color, linestyle="--",
                linewidth=1.2, label="%s allocated" % tl.name)
    ax.set_ylabel("MiB")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    ax.set_title("RSS and allocated bytes, both timelines", fontsize=10)


def draw(out, tls, phases):
    import matplotlib
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.fonttype"] = "none"  # text stays text
    matplotlib.rcParams["svg.hashsalt"] = "alloy"  # the same SVG for the same input
    import matplotlib.pyplot as plt
    rows = 1 if len(tls) == 1 else 3
    fig, axes = plt.subplots(rows, 1, figsize=(11, 5.5 if rows == 1 else 11), sharex=True,
                             squeeze=False)
    axes = [a[0] for a in axes]
    if rows == 1:
        stack_panel(axes[0], tls[0], phases[0], plt)
        axes[0].legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    else:
        overlay_panel(axes[0], tls)
        for ax, tl, ph in zip(axes[1:], tls, phases):
            stack_panel(ax, tl, ph, plt)
        top = max(ax.get_ylim()[1] for ax in axes[1:])
        for ax in axes[1:]:
            ax.set_ylim(0, top)
        axes[1].legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    axes[-1].set_xlabel("time (s)")
    fig.suptitle("alloy timeline: resident memory by component (RSS: the kernel's count; "
                 "the stack: alloy's resident, an upper bound)", fontsize=9)
    fig.tight_layout()
    meta = {"Date": None} if out.lower().endswith(".svg") else {}
    fig.savefig(out, dpi=100, metadata=meta)
    plt.close(fig)


def main(argv):
    out, paths = argv[1], argv[2:]
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("alloy plot: needs matplotlib for Python 3 (Debian package python3-matplotlib): "
              "apt-get install python3-matplotlib", file=sys.stderr)
        return 1
    tls = [Timeline(p) for p in paths]
    phases = [find_phases(tl) for tl in tls]
    for tl, ph in zip(tls, phases):
        print("\n".join(summary(tl, ph)))
    if len(tls) == 2 and all(tl.records for tl in tls):
        a, b = (max(tl.series("rss")) for tl in tls)
        print("peak RSS: %s %s, %s %s (%.2fx)" % (tls[0].name, mib(a), tls[1].name, mib(b),
                                                   b / a if a else 0.0))
    draw(out, tls, phases)
    print("chart: %s" % out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
