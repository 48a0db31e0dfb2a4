#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""check_stats_report.py - the text reports and the `alloy stats` command.

    check_stats_report.py summary DIR          DIR/summary.txt (from stats_dump --out DIR)
    check_stats_report.py summary-of CMD...    the summary CMD prints on stderr
    check_stats_report.py setting-of K V CMD... that summary's settings line shows K V
    check_stats_report.py wide ALLOY DIR       DIR/report.json with every total at
                                               2^64-1, summarised by alloy stats (per
                                               CPU, and thread caches with a long reason)
    check_stats_report.py full DIR             DIR/full.txt against DIR/report.json
    check_stats_report.py render ALLOY DIR     alloy stats report.json == full.txt
    check_stats_report.py diff ALLOY DIR       alloy stats A A: no change; A after: changes
    check_stats_report.py errors ALLOY DIR     bad files: one line on stderr, status 2

The summary must fit in SUMMARY_MAX lines, whatever its figures' widths, hold
every section, and show each setting as ALLOY_CONF writes it; the full
report must have one aligned row per heap and per class in use, matching
the JSON of the same moment.  Uses the standard library only.
"""
import json
import os
import re
import subprocess
import sys

SUMMARY_MAX = 30
HEADER = re.compile(r"^___ alloy \S+ statistics( \(full\))?, pid [1-9][0-9]* \(.+\) ___$")
BREAKDOWN = ("in_use", "tcache", "central", "span_tails", "pageheap_free", "metadata", "total")


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def check_summary(text, want_waste_rows=None):
    lines = text.rstrip("\n").split("\n")
    if len(lines) > SUMMARY_MAX:
        fail(f"the summary has {len(lines)} lines, more than {SUMMARY_MAX}:\n{text}")
    if not HEADER.match(lines[0]) or "(full)" in lines[0]:
        fail(f"first line is not the summary's header: {lines[0]!r}")
    for section in ("opt:", "stats:", "resident_breakdown:", "counters:", "waste:"):
        if not any(l.startswith(section) for l in lines):
            fail(f"no {section} section in the summary:\n{text}")
    # the settings as ALLOY_CONF writes them (return_threshold 2, not its halves)
    if "_halves" in text or not re.search(r"\breturn_threshold [0-9]+(\.5)?[,\n]", text):
        fail(f"the settings line does not show return_threshold as the setting is written:\n{text}")
    for key in ("allocated", "active", "resident", "mapped", "peak_active"):
        if not re.search(rf"^  {key}: +[0-9]", text, re.M):
            fail(f"no {key} total in the summary")
    for key in BREAKDOWN:
        if key == "span_tails":
            continue  # shown only when there are some
        # central's line may carry its sparse part: "  (X of it in spans <25% used)"
        note = r"(  \([0-9.]+[KMGTPE]? of it in spans <25% used\))?" if key == "central" else ""
        if not re.search(rf"^  {key}: +[0-9.]+[KMGTPE]? +[0-9.]+%{note}$", text, re.M):
            fail(f"no {key} line with a share in the resident breakdown")
    for key in ("slow_path_calls", "short_fetches", "central_lock_contended"):
        if not re.search(rf"\b{key} [0-9]+", text):
            fail(f"no {key} counter in the summary")
    i = next(k for k, l in enumerate(lines) if l.startswith("waste:"))
    rows = []
    if "no size class" not in lines[i]:
        if not lines[i + 1].split()[:2] == ["class", "size"]:
            fail(f"no header under waste: {lines[i + 1]!r}")
        for l in lines[i + 2:]:
            if not re.match(r"^ +[0-9]+ ", l):
                break
            rows.append(l)
        waste = [parse_bytes(r.split()[5]) for r in rows]
        if waste != sorted(waste, reverse=True):
            fail(f"the waste table is not sorted by waste: {waste}")
    # fewer only where the summary is at its line budget (a reason for not
    # running per CPU that wraps takes a line from the table)
    if want_waste_rows is not None and len(rows) != want_waste_rows and \
            not (len(rows) < want_waste_rows and len(lines) == SUMMARY_MAX):
        fail(f"{len(rows)} rows in the waste table, want {want_waste_rows}")
    print(f"summary ok: {len(lines)} lines (at most {SUMMARY_MAX}), {len(rows)} classes in the waste table")


UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50, "E": 1 << 60}


def parse_bytes(s):
    if s[-1] in UNITS:
        return float(s[:-1]) * UNITS[s[-1]]
    return float(s)


def fmt_bytes(v):
    """The library's text form of a byte count (emit.c), for cross-checks."""
    if v < 1024:
        return str(v)
    k = 0
    while k < 5 and v >> (10 * (k + 2)):
        k += 1
    u = 1 << (10 * (k + 1))
    x100 = (v * 100 + u // 2) // u
    if x100 >= 9995:
        s = str((v + u // 2) // u)
    elif x100 >= 995:
        x10 = (v * 10 + u // 2) // u
        s = f"{x10 // 10}.{x10 % 10}"
    else:
        s = f"{x100 // 100}.{x100 // 10 % 10}{x100 % 10}"
    return s + "KMGTPE"[k]


def table(lines, title):
    """The header and rows of the table whose title line starts with title."""
    for i, l in enumerate(lines):
        if l.startswith(title):
            header = lines[i + 1]
            rows = []
            for r in lines[i + 2:]:
                if not re.match(r"^ +[0-9]", r):
                    break
                rows.append(r)
            return header, rows
    fail(f"no table {title!r}")


def check_full(d):
    text = read(os.path.join(d, "full.txt"))
    doc = json.loads(read(os.path.join(d, "report.json")))["alloy"]
    lines = text.rstrip("\n").split("\n")
    if lines[0] != f"___ alloy {doc['version']} statistics (full), pid {doc['pid']} ({doc['cmd']}) ___":
        fail(f"first line: {lines[0]!r}")
    # central's line names its sparse part when there is one, as the JSON has it
    m = re.search(r"^  central: .*%(?:  \((\S+) of it in spans <25% used\))?$", text, re.M)
    sparse = doc["stats"]["sparse_bytes"]
    if not m or m.group(1) != (fmt_bytes(sparse) if sparse else None):
        fail(f"central's line does not show sparse_bytes {sparse}: {m and m.group(0)!r}")
    for name, want in (("heaps:", doc["heaps"]), ("classes:", doc["classes"])):
        header, rows = table(lines, name)
        if len(rows) != len(want):
            fail(f"{name} {len(rows)} rows, the JSON has {len(want)}")
        for r in rows:
            if len(r) != len(header):
                fail(f"{name} a row is not aligned with the header:\n{header}\n{r}")
        cols = header.split()
        if name == "classes:":
            if cols != ["class", "size", "in", "use", "capacity", "spans", "util", "tcache",
                        "central", "sparse", "waste", "slow", "short", "waits"]:
                fail(f"classes: columns {cols}")
            for r, c in zip(rows, want):
                f = r.split()
                if int(f[0]) != c["class"] or int(f[1]) != c["size"]:
                    fail(f"class row {f[:2]} is not class {c['class']} of size {c['size']}")
                if int(f[2]) != c["objects_in_use"] or int(f[3]) != c["capacity"] or int(f[4]) != c["spans"]:
                    fail(f"class {c['class']}: in use/capacity/spans {f[2:5]} vs {c}")
                util = f[5]
                if c["capacity"] == 0:
                    if util != "-":
                        fail(f"class {c['class']} has no capacity but util {util}")
                else:
                    pct = float(util.rstrip("%"))
                    if not 0 <= pct <= 100 or abs(pct - 100 * c["objects_in_use"] / c["capacity"]) > 0.051:
                        fail(f"class {c['class']}: util {util} vs {c['objects_in_use']}/{c['capacity']}")
                for col, key in ((6, "tcache_bytes"), (7, "central_bytes"), (8, "sparse_bytes"),
                                 (9, "waste")):
                    if f[col] != fmt_bytes(c[key]):
                        fail(f"class {c['class']}: {key} {f[col]} vs {fmt_bytes(c[key])}")
                if [int(x) for x in f[10:13]] != [c["slow_path_calls"], c["short_fetches"], c["lock_contended"]]:
                    fail(f"class {c['class']}: counters {f[10:13]}")
        else:
            if cols[:4] != ["heap", "kind", "node", "threads"]:
                fail(f"heaps: columns {cols}")
            for r, h in zip(rows, want):
                f = r.split()
                if int(f[0]) != h["id"] or f[1] != ("expl" if h["explicit"] else "auto"):
                    fail(f"heap row {f[:2]} vs {h['id']}")
                if int(f[2]) != h["node"] or int(f[3]) != h["threads"]:
                    fail(f"heap {h['id']}: node/threads {f[2:4]} vs {h['node']} {h['threads']}")
                if f[4] != fmt_bytes(h["allocated"]) or f[6] != fmt_bytes(h["resident"]):
                    fail(f"heap {h['id']}: {f[4]} {f[6]} vs {h['allocated']} {h['resident']}")
    # the nodes table: one row per node of the JSON, each the sums of its heaps
    header, rows = table(lines, "nodes:")
    cols = header.split()
    if cols != ["node", "heaps", "threads", "in", "use", "active", "resident", "util", "tcache",
                "central", "free", "mapped"]:
        fail(f"nodes: columns {cols}")
    if len(rows) != len(doc["nodes"]) or not rows:
        fail(f"nodes: {len(rows)} rows, the JSON has {len(doc['nodes'])}")
    for r, n in zip(rows, doc["nodes"]):
        f = r.split()
        if len(r) != len(header):
            fail(f"nodes: a row is not aligned with the header:\n{header}\n{r}")
        mine = [h for h in doc["heaps"] if h["node"] == n["node"]]
        if int(f[0]) != n["node"] or int(f[1]) != n["heaps"] != len(mine):
            fail(f"node row {f[:2]} vs node {n['node']} with {len(mine)} heaps")
        for col, key in ((3, "allocated"), (4, "active"), (5, "resident"), (10, "mapped")):
            if f[col] != fmt_bytes(n[key]) or n[key] != sum(h[key] for h in mine):
                fail(f"node {n['node']}: {key} {f[col]} vs {n[key]}, heaps {sum(h[key] for h in mine)}")
    print(f"full ok: {len(lines)} lines, {len(doc['heaps'])} heaps, {len(doc['nodes'])} nodes, "
          f"{len(doc['classes'])} classes")


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def check_render(alloy, d):
    p = run([alloy, "stats", os.path.join(d, "report.json")])
    if p.returncode != 0 or p.stderr:
        fail(f"alloy stats: status {p.returncode}, stderr {p.stderr!r}")
    want = read(os.path.join(d, "full.txt"))
    if p.stdout != want:
        import difflib
        fail("alloy stats does not render the report as the library printed it:\n" +
             "".join(difflib.unified_diff(want.splitlines(True), p.stdout.splitlines(True),
                                          "library", "alloy stats")))
    p = run([alloy, "stats", "--summary", os.path.join(d, "report.json")])
    if p.returncode != 0 or p.stdout != read(os.path.join(d, "summary.txt")):
        fail(f"alloy stats --summary differs from the library's summary:\n{p.stdout}")
    with open(os.path.join(d, "report.json")) as f:
        p = run([alloy, "stats", "-"], stdin=f)
    if p.returncode != 0 or p.stdout != want:
        fail("alloy stats - (standard input) differs")
    print("render ok: alloy stats prints the library's full report and summary")


def check_diff(alloy, d):
    a, b = os.path.join(d, "report.json"), os.path.join(d, "after.json")
    p = run([alloy, "stats", a, a])
    lines = p.stdout.rstrip("\n").split("\n")
    if p.returncode != 0 or lines[-1] != "no change" or len(lines) != 4:
        fail(f"a report against itself: status {p.returncode}, want 4 lines ending 'no change':\n{p.stdout}")
    p = run([alloy, "stats", a, b])
    doc_a = json.loads(read(a))["alloy"]["stats"]
    doc_b = json.loads(read(b))["alloy"]["stats"]
    if p.returncode != 0 or "no change" in p.stdout:
        fail(f"a report against a later one shows no change:\n{p.stdout}")
    delta = doc_b["allocated"] - doc_a["allocated"]
    want = f"({'-' if delta < 0 else '+'}{fmt_bytes(abs(delta))})"
    m = re.search(r"^  allocated: .* -> .*$", p.stdout, re.M)
    if not m or not m.group(0).endswith(want):
        fail(f"no allocated change {want}:\n{p.stdout}")
    n = re.search(r"^([0-9]+) values? changed$", p.stdout, re.M)
    if not n:
        fail(f"no count of changed values:\n{p.stdout}")
    print(f"diff ok: no change against itself; {n.group(1)} values changed after a free")


def check_errors(alloy, d):
    good = read(os.path.join(d, "report.json"))
    doc = json.loads(good)
    del doc["alloy"]["classes"][0]["capacity"]
    cases = {
        "missing": None,
        "truncated": good[: len(good) // 2],
        "empty": "",
        "not-json": "hello\n",
        "not-alloy": '{"jemalloc": {"version": "5.3.0"}}\n',
        "array": "[1, 2, 3]\n",
        "trailing-comma": '{"alloy": {"version": "0.1.0",}}\n',
        "trailing-text": good + "x",
        "no-field": json.dumps(doc),
        "wrong-type": good.replace('"nclasses":', '"nclasses":"208","was":', 1),
    }
    for name, content in cases.items():
        path = os.path.join(d, f"bad-{name}.json")
        if content is None:
            if os.path.exists(path):
                os.unlink(path)
        else:
            with open(path, "w") as f:
                f.write(content)
        p = run([alloy, "stats", path])
        err = p.stderr.rstrip("\n").split("\n")
        if p.returncode != 2 or p.stdout or len(err) != 1 or not err[0].startswith(f"alloy stats: {path}: "):
            fail(f"{name}: want status 2, no output, one line 'alloy stats: {path}: ...'; "
                 f"got status {p.returncode}, stdout {p.stdout[:80]!r}, stderr {p.stderr!r}")
        print(f"  {name}: {err[0]}")
    print(f"errors ok: {len(cases)} bad files, each one line and status 2")


def main():
    if len(sys.argv) < 3:
        fail(__doc__)
    what = sys.argv[1]
    if what == "summary":
        check_summary(read(os.path.join(sys.argv[2], "summary.txt")), want_waste_rows=5)
        return
    if what == "summary-of":
        p = run(sys.argv[2:])
        if p.returncode != 0:
            fail(f"{sys.argv[2:]}: status {p.returncode}: {p.stderr}")
        check_summary(p.stderr)
        return
    if what == "setting-of":
        key, value = sys.argv[2], sys.argv[3]
        p = run(sys.argv[4:])
        if p.returncode != 0:
            fail(f"{sys.argv[4:]}: status {p.returncode}: {p.stderr}")
        check_summary(p.stderr)
        opt = p.stderr.split("stats:")[0]
        if not re.search(rf"\b{key} {re.escape(value)}[,\n]", opt):
            fail(f"the settings line does not show {key} {value}:\n{opt}")
        print(f"setting ok: {key} {value}")
        return
    if what == "wide":
        alloy, d = sys.argv[2], sys.argv[3]
        doc = json.loads(read(os.path.join(d, "report.json")))
        for k, v in doc["alloy"]["stats"].items():
            if isinstance(v, int):
                doc["alloy"]["stats"][k] = (1 << 64) - 1
        wide = os.path.join(d, "wide.json")
        # the first tier's line at its widest: per CPU, with every figure at
        # 2^64-1, and thread caches with the longest reason
        long_why = ("the C library did not register rseq (GLIBC_TUNABLES=glibc.pthread.rseq=0, "
                    "a kernel without rseq, or valgrind)")
        for tier in ({"mode": "percpu", "why": ""}, {"mode": "thread", "why": long_why}):
            doc["alloy"]["percpu"] = tier
            with open(wide, "w") as f:
                json.dump(doc, f)
            p = run([alloy, "stats", "--summary", wide])
            if p.returncode != 0:
                fail(f"alloy stats --summary {wide}: status {p.returncode}: {p.stderr}")
            if not re.search(rf"^percpu: mode {tier['mode']}\b", p.stdout, re.M):
                fail(f"no percpu: line for mode {tier['mode']}:\n{p.stdout}")
            if any(len(line) >= 100 for line in p.stdout.splitlines()[:-1]):
                fail(f"a line of 100 columns or more:\n{p.stdout}")
            check_summary(p.stdout)
        return
    if what == "full":
        check_full(sys.argv[2])
        return
    alloy, d = sys.argv[2], sys.argv[3]
    {"render": check_render, "diff": check_diff, "errors": check_errors}[what](alloy, d)


if __name__ == "__main__":
    main()
