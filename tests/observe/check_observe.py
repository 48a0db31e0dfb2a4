#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""check_observe.py - the tests of memory over time (issue 25): the
timeline, `alloy plot` and `alloy top`, on observe_prog (observe_prog.c).

    check_observe.py timeline ALLOY PROG DIR DOC   records against alloy_ctl, schema, phases
    check_observe.py timeline-errors ALLOY PROG DIR
    check_observe.py plot ALLOY DIR                 (after `timeline`: DIR/t.jsonl)
    check_observe.py plot-errors ALLOY DIR
    check_observe.py top ALLOY PROG DIR             --once, --json, the segment
    check_observe.py top-tmux ALLOY PROG DIR        the interactive screen, in tmux
    check_observe.py top-errors ALLOY PROG DIR
    check_observe.py percpu ALLOY PROG DIR DOC     per-CPU figures in the timeline and top
                                                   (skipped, 77, where thread caches run)
    check_observe.py doc ALLOY DOC DIR              the session's summary in the docs

DOC is docs/OBSERVING.md: its schema tables list every field of the header
and of a record, and the timeline's files must have exactly those.  Each
check prints what it saw; a failure prints why and exits 1.  Nothing here
asserts a duration: the program waits for timeline records, and this
script waits for the program, with generous limits.
"""
import json
import os
import re
import signal
import stat
import struct
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

MIB = 1 << 20
WAIT = 60  # seconds any one wait may take before the check fails
PARTS = ["in_use", "tcache", "central", "span_tails", "pageheap_free", "metadata"]
PERCPU = ["percpu", "percpu_caches", "percpu_misses", "percpu_overflows", "percpu_scavenges",
          "percpu_drains", "percpu_moves"]  # a record's per-CPU figures (percpu: its bytes, part of tcache)


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def ok(msg):
    print("ok: " + msg)


def run(argv, env=None, **kw):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run(argv, env=e, capture_output=True, text=True, timeout=WAIT * 3, **kw)


def alloy_lines(text):
    return [line for line in text.splitlines() if line.startswith("alloy:")]


# ---- the timeline ----

def doc_fields(doc, title):
    """Field names of the table under the heading that starts with `title`."""
    text = open(doc, encoding="utf-8").read()
    m = re.search(r"^#+ " + re.escape(title) + r".*?\n(.*?)(?=^#)", text, re.M | re.S)
    if not m:
        fail("%s has no section %r" % (doc, title))
    return {f for f in re.findall(r"^\| `([a-z_]+)` \|", m.group(1), re.M)}


def load(path):
    lines = open(path, encoding="utf-8").read().splitlines()
    if not lines:
        fail("%s is empty" % path)
    objs = [json.loads(line) for line in lines]
    return objs[0], objs[1:]


def check_schema(header, records, doc):
    want_h, want_r = doc_fields(doc, "The header"), doc_fields(doc, "A record")
    if set(header) != want_h:
        fail("header fields %s, docs say %s" % (sorted(header), sorted(want_h)))
    if header["alloy_timeline"] != 1 or not isinstance(header["cmd"], str):
        fail("header %r" % header)
    optional = {"stacks", "last", "mallocs_per_s", "frees_per_s"}
    for r in records:
        keys = set(r)
        if not (want_r - optional) <= keys <= want_r:
            fail("record fields %s, docs say %s" % (sorted(keys), sorted(want_r)))
        for k in keys - {"waste", "classes", "stacks", "last", "t"}:  # every other is a count
            if not isinstance(r[k], int) or r[k] < 0:
                fail("record %d: %s = %r is not a count" % (r["seq"], k, r[k]))
        for w in r["waste"]:
            if set(w) != {"class", "size", "unused", "in_use", "tcache", "central"}:
                fail("waste entry %r" % w)
        for c in r["classes"]:
            if len(c) != 4 or not all(isinstance(v, int) for v in c):
                fail("classes entry %r" % c)
    seqs = [r["seq"] for r in records]
    if seqs != list(range(1, len(records) + 1)):
        fail("records are not numbered 1, 2, ...: %s" % seqs[:20])
    if any(b["t"] < a["t"] for a, b in zip(records, records[1:])):
        fail("time goes back")
    if not records[-1].get("last") or any(r.get("last") for r in records[:-1]):
        fail("only the final record (at exit) has last: true")
    ok("schema: a header and %d records with exactly the fields of %s"
       % (len(records), os.path.basename(doc)))


def class_states(records):
    """Each record's {class: (span bytes, in use)}, the deltas replayed."""
    state, out = {}, []
    for r in records:
        for cls, _size, span, use in r["classes"]:
            state[cls] = (span, use)
        out.append(dict(state))
    return out


def check_agreement(records, states, readings):
    """In each quiet spell the records equal what alloy_ctl read."""
    pairs = [("allocated", "allocated"), ("in_use", "allocated"), ("active", "active"),
             ("resident", "resident"), ("mapped", "mapped"), ("tcache", "tcache_bytes"),
             ("central", "central_bytes"), ("large", "large_allocated")]
    windows = {}
    for q in readings:
        idx = [i for i, r in enumerate(records)
               if q["quiet_start_ms"] <= r["unix_ms"] <= q["quiet_end_ms"]]
        if not idx:
            fail("phase %s: no record in its quiet spell" % q["phase"])
        for i in idx:
            r = records[i]
            for rk, qk in pairs:
                if r[rk] != q[qk]:
                    fail("phase %s, record %d: %s %d, alloy_ctl read %s %d"
                         % (q["phase"], r["seq"], rk, r[rk], qk, q[qk]))
            span, use = states[i].get(q["class"], (0, 0))
            if (span, use) != (q["class_span_bytes"], q["class_allocated"]):
                fail("phase %s, record %d: class %d has %d span bytes, %d in use; alloy_ctl "
                     "read %d, %d" % (q["phase"], r["seq"], q["class"], span, use,
                                      q["class_span_bytes"], q["class_allocated"]))
            if sum(r[p] for p in PARTS) != r["resident"]:
                fail("record %d: the breakdown does not add up to resident" % r["seq"])
        windows[q["phase"]] = idx
        ok("phase %s: %d records in the quiet spell equal alloy_ctl's readings (allocated %d, "
           "resident %d, class %d in use %d)" % (q["phase"], len(idx), q["allocated"],
                                                q["resident"], q["class"], q["class_allocated"]))
    return windows


def check_phases(records, states, readings, windows):
    by = {q["phase"]: q for q in readings}
    a, b, c = by["A"], by["B"], by["C"]
    cls = a["class"]
    if a["allocated"] < 16 * MIB:
        fail("phase A holds %d bytes, not 16 MiB" % a["allocated"])
    if not 48 * MIB <= b["class_allocated"] < 48 * MIB + 64 * 1024:
        fail("phase B: class 4096 holds %d bytes, not 48 MiB" % b["class_allocated"])
    if b["allocated"] < a["allocated"] + 48 * MIB or c["class_allocated"] >= 64 * 1024:
        fail("phases: allocated A %d, B %d; class 4096 in C %d" % (
            a["allocated"], b["allocated"], c["class_allocated"]))
    ramp = [states[i].get(cls, (0, 0))[1] for i in range(windows["A"][-1], windows["B"][0] + 1)]
    steps = sorted(set(ramp))
    if len(steps) < 5 or ramp != sorted(ramp):
        fail("phase B's growth does not show as a ramp of records: %s" % ramp)
    rss = [records[i]["rss"] for i in (windows["A"][-1], windows["B"][0])]
    if rss[1] < rss[0] + 40 * MIB:
        fail("RSS grew only %d bytes in phase B" % (rss[1] - rss[0]))
    ok("phases: A %.1f MiB, B's class 4096 rising over %d records to %.1f MiB (RSS +%.1f MiB), "
       "C back to %d bytes" % (a["allocated"] / MIB, len(steps), b["class_allocated"] / MIB,
                               (rss[1] - rss[0]) / MIB, c["class_allocated"]))


def timeline(alloy, prog, d, doc):
    os.makedirs(d, exist_ok=True)
    t, ctl = os.path.join(d, "t.jsonl"), os.path.join(d, "ctl.jsonl")
    for f in (t, ctl):
        if os.path.exists(f):
            os.unlink(f)
    p = run([alloy, "run", "--timeline", t, "--", prog, "phases", ctl],
            env={"ALLOY_CONF": "percpu:off"})
    if p.returncode != 0 or p.stderr:
        fail("observe_prog phases: status %d, stderr %r" % (p.returncode, p.stderr))
    header, records = load(t)
    check_schema(header, records, doc)
    if header["interval_ms"] != 100 or header["cmd"] != "observe_prog":
        fail("header: %r" % header)
    if (header["percpu_mode"], header["percpu_why"]) != ("thread", "the setting percpu:off") \
            or any(r[k] for r in records for k in PERCPU):
        fail("thread caches (percpu:off): header %r, or a record with per-CPU figures" % header)
    readings = [json.loads(line) for line in open(ctl)]
    states = class_states(records)
    windows = check_agreement(records, states, readings)
    check_phases(records, states, readings, windows)


# ---- the timeline's bad cases ----

def wait_until(cond, what):
    deadline = time.monotonic() + WAIT
    while not cond():
        if time.monotonic() > deadline:
            fail("waited %d s for %s" % (WAIT, what))
        time.sleep(0.05)


def errors_exists(alloy, prog, d):
    f = os.path.join(d, "kept.txt")
    open(f, "w").write("not a timeline\n")
    p = run(["true"], env={"ALLOY_CONF": "timeline_file:" + f, "LD_PRELOAD": lib_of(alloy)})
    warn = alloy_lines(p.stderr)
    if p.returncode != 0 or len(warn) != 1 or "(it exists; alloy never overwrites" \
            not in warn[0]:
        fail("an existing file: %r" % p.stderr)
    if open(f).read() != "not a timeline\n":
        fail("the existing file was changed")
    p = run([alloy, "run", "--timeline", f, "--", "true"])
    if p.returncode != 2 or "not an alloy timeline; not overwriting it" not in p.stderr:
        fail("alloy run --timeline over a file that is no timeline: %d %r"
             % (p.returncode, p.stderr))
    ok("a file that exists is left alone, with a warning (%s); alloy run refuses it (status 2)"
       % warn[0])


def lib_of(alloy):
    return os.path.join(os.path.dirname(alloy), "liballoy.so.0")


def errors_children(alloy, prog, d):
    t = os.path.join(d, "child.jsonl")
    for _ in range(2):  # the second run replaces the first run's timeline
        p = run([alloy, "run", "--timeline", t, "--", prog, "child"])
        if p.returncode != 0 or p.stdout.strip() != "done" or alloy_lines(p.stderr):
            fail("a child on alloy: %d %r %r" % (p.returncode, p.stdout, p.stderr))
    header, _ = load(t)
    if header["cmd"] != "observe_prog":
        fail("the child took the timeline over: %r" % header)
    p = run([alloy, "run", "--timeline", t, "--", "sh", "-c", "exec %s child" % prog])
    header, records = load(t)
    if p.returncode != 0 or header["cmd"] != "observe_prog" or not records[-1].get("last"):
        fail("after an exec the program records: %r %r" % (header, p.stderr))
    ok("children that inherit the setting leave the timeline alone, silently; after an exec "
       "the new program takes it over; a second run replaces the first's")


def errors_nodir(alloy, prog, d):
    t = os.path.join(d, "no-such-dir", "t.jsonl")
    p = run(["true"], env={"ALLOY_CONF": "timeline_file:" + t, "LD_PRELOAD": lib_of(alloy)})
    want = "alloy: timeline: cannot create %s (no such directory); not recording" % t
    if p.returncode != 0 or alloy_lines(p.stderr) != [want]:
        fail("a missing directory: %r" % p.stderr)
    ok(want)


def errors_fsize(alloy, prog, d):
    import resource
    t = os.path.join(d, "fsize.jsonl")
    if os.path.exists(t):
        os.unlink(t)
    limit = 16384

    def cap():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    p = run([alloy, "run", "--timeline", t, "--", prog, "fsize"], preexec_fn=cap)
    warn = alloy_lines(p.stderr)
    if p.returncode != 0 or p.stdout.strip() != "done" or len(warn) != 1:
        fail("the file-size limit: status %d, stdout %r, stderr %r"
             % (p.returncode, p.stdout, p.stderr))
    if warn[0] != ("alloy: timeline: writing %s failed (file too large: the file-size limit); "
                   "recording stopped" % t):
        fail("the warning: %r" % warn[0])
    size = os.path.getsize(t)
    if size > limit:
        fail("the file has %d bytes, over the limit" % size)
    ok("the file-size limit (a full file): one warning, %d bytes kept, the program ran on "
       "(no SIGXFSZ)" % size)


def errors_closed(alloy, prog, d):
    t = os.path.join(d, "closed.jsonl")
    if os.path.exists(t):
        os.unlink(t)
    p = run([alloy, "run", "--timeline", t, "--", prog, "closefd"], cwd=d)
    warn = alloy_lines(p.stderr)
    want = "alloy: timeline: %s was closed by the program; recording stopped" % t
    if p.returncode != 0 or p.stdout.strip() != "done" or warn != [want]:
        fail("a closed file: status %d, stdout %r, stderr %r" % (p.returncode, p.stdout,
                                                                p.stderr))
    data = open(os.path.join(d, "program-file.txt")).read()
    if set(data.splitlines()) != {"program data"}:
        fail("the program's own file got other data: %r" % data[:200])
    load(t)  # what was written is whole
    ok("%s; the program's file, which may reuse the number, holds only its data" % want)


def errors_fork(alloy, prog, d):
    t = os.path.join(d, "fork.jsonl")
    p = run([alloy, "run", "--timeline", t, "--live", "--", prog, "fork"])
    if p.returncode != 0 or p.stdout.split() != ["segment", "kept", "done"] or p.stderr:
        fail("fork: %d %r %r" % (p.returncode, p.stdout, p.stderr))
    _, records = load(t)
    if [r["seq"] for r in records] != list(range(1, len(records) + 1)) or \
            sum(1 for r in records if r.get("last")) != 1 or not records[-1].get("last"):
        fail("fork: the child wrote to the parent's timeline")
    ok("fork: the child's exit leaves the parent's timeline and segment alone (%d records)"
       % len(records))


def errors_prof(alloy, prog, d):
    t, ctl = os.path.join(d, "prof.jsonl"), os.path.join(d, "prof-ctl.jsonl")
    p = run([alloy, "run", "--timeline", t, "--conf", "prof:true,prof_sample:65536", "--",
             prog, "phases", ctl])
    header, records = load(t)
    if p.returncode != 0 or header["prof"] != 1:
        fail("prof: %d %r %r" % (p.returncode, header, p.stderr))
    top = max((s["live_bytes"] for r in records for s in r["stacks"]), default=0)
    if top < 16 * MIB or not all(s["pcs"] and s["id"].startswith("0x")
                                 for r in records for s in r["stacks"]):
        fail("prof: the stacks hold at most %d live bytes: %r" % (top, records[-2]["stacks"]))
    rates = [(r["mallocs_per_s"], r["frees_per_s"]) for r in records]
    if max(m for m, _ in rates) <= 0 or max(f for _, f in rates) <= 0:
        fail("prof: no malloc or free rate: %r" % rates)
    ok("prof: the records name the top stacks, up to %.1f MiB live, and estimate up to %d "
       "mallocs/s and %d frees/s" % (top / MIB, max(m for m, _ in rates),
                                     max(f for _, f in rates)))


def timeline_errors(alloy, prog, d):
    os.makedirs(d, exist_ok=True)
    errors_exists(alloy, prog, d)
    errors_children(alloy, prog, d)
    errors_nodir(alloy, prog, d)
    errors_fsize(alloy, prog, d)
    errors_closed(alloy, prog, d)
    errors_fork(alloy, prog, d)
    errors_prof(alloy, prog, d)


# ---- alloy plot ----

def check_svg(path, axes):
    root = ET.parse(path).getroot()
    if root.tag != "{http://www.w3.org/2000/svg}svg":
        fail("%s: the root is %s" % (path, root.tag))
    n = sum(1 for e in root.iter() if (e.get("id") or "").startswith("axes_"))
    text = "".join(root.itertext())
    if n != axes or "in use" not in text or "RSS (kernel)" not in text:
        fail("%s: %d panels (want %d), legend %r" % (path, n, axes, text[:200]))


def check_png(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        fail("%s is not a PNG" % path)
    w, h = struct.unpack(">II", data[16:24])
    import matplotlib.image
    img = matplotlib.image.imread(path)
    if (img.shape[1], img.shape[0]) != (w, h) or w < 400 or h < 200:
        fail("%s: %dx%d, decoded %s" % (path, w, h, img.shape))
    return w, h


def parts_timeline(path):
    """A timeline in which RSS grows by 16 MiB while alloy's resident grows by
    1 MiB: the program takes 8 MiB of blocks from the thread caches, so in
    use grows by 8 MiB and the thread caches shrink by 7."""
    M = 1 << 20
    head = {"alloy_timeline": 1, "version": "0", "pid": 1, "cmd": "parts", "interval_ms": 100,
            "start_unix_ms": 0, "nclasses": 208, "prof": 0}
    rec = {"rss": 10 * M, "resident": 10 * M, "in_use": 1 * M, "tcache": 8 * M, "central": 0,
           "span_tails": 0, "pageheap_free": 0, "metadata": 1 * M, "allocated": 1 * M,
           "active": 9 * M, "mapped": 12 * M, "large": 0, "peak_active": 9 * M}
    with open(path, "w") as f:
        f.write(json.dumps(head) + "\n")
        for i in range(11):
            r = dict(rec, t=0.1 * i, seq=i + 1)
            if i >= 5:
                r.update(rss=26 * M, resident=11 * M, in_use=9 * M, tcache=1 * M, allocated=9 * M)
            f.write(json.dumps(r) + "\n")


def plot(alloy, d):
    os.makedirs(d, exist_ok=True)
    t = os.path.join(d, "t.jsonl")
    svg, png, two = (os.path.join(d, n) for n in ("t.svg", "t.png", "two.svg"))
    for f in (svg, png, two):
        if os.path.exists(f):
            os.unlink(f)
    p = run([alloy, "plot", t, "-o", svg])
    if p.returncode != 0:
        fail("alloy plot: %d %r" % (p.returncode, p.stderr))
    check_svg(svg, 1)
    phase = [line for line in p.stdout.splitlines()
             if re.search(r"phase \d: RSS grew .* size class 4096 \(class \d+\), in use", line)]
    if not phase:
        fail("no phase names class 4096, in use:\n" + p.stdout)
    ok("SVG parsed (one panel); the summary: %s" % phase[0].strip())
    p = run([alloy, "plot", "-o", png, t])
    if p.returncode != 0:
        fail("alloy plot -o png: %d %r" % (p.returncode, p.stderr))
    ok("PNG decoded, %dx%d" % check_png(png))
    p = run([alloy, "plot", t, t, "-o", two])
    if p.returncode != 0 or "peak RSS: t.jsonl" not in p.stdout:
        fail("alloy plot A B: %d %r %r" % (p.returncode, p.stdout, p.stderr))
    check_svg(two, 3)
    ok("two timelines: overlaid, SVG parsed (three panels)")
    # a chart that exists is not replaced, but with --force
    before = os.stat(svg).st_mtime_ns
    p = run([alloy, "plot", t, "-o", svg])
    if p.returncode != 2 or len(p.stderr.splitlines()) != 1 or "exists" not in p.stderr \
            or "--force" not in p.stderr or os.stat(svg).st_mtime_ns != before:
        fail("alloy plot onto an existing chart: %d %r" % (p.returncode, p.stderr))
    ok("an existing chart is kept: %s" % p.stderr.strip())
    p = run([alloy, "plot", "--force", t, "-o", svg])
    if p.returncode != 0 or os.stat(svg).st_mtime_ns == before:
        fail("alloy plot --force: %d %r" % (p.returncode, p.stderr))
    check_svg(svg, 1)
    ok("--force replaces it")
    # parts that change by more than the total are given in MiB, not as
    # shares of it above 100%
    parts = os.path.join(d, "parts.jsonl")
    parts_timeline(parts)
    out = os.path.join(d, "parts.svg")
    if os.path.exists(out):
        os.unlink(out)
    p = run([alloy, "plot", parts, "-o", out])
    phase = [line for line in p.stdout.splitlines() if "phase 1:" in line]
    if p.returncode != 0 or not phase or any(int(x) > 100 for x in re.findall(r"(\d+)%", p.stdout)) \
            or "in use +8.0 MiB" not in phase[0] or "thread caches -7.0 MiB" not in phase[0]:
        fail("alloy plot %s: %d\n%s%s" % (parts, p.returncode, p.stdout, p.stderr))
    ok("parts in MiB: %s" % phase[0].strip())


def plot_errors(alloy, d):
    os.makedirs(d, exist_ok=True)
    bad = os.path.join(d, "bad.jsonl")
    open(bad, "w").write("hello\n")
    cases = [([bad], 2, "not an alloy timeline"),
             ([os.path.join(d, "missing.jsonl")], 2, "No such file"),
             ([bad, "-o", os.path.join(d, "x.pdf")], 2, "is an .svg or a .png file")]
    for args, status, text in cases:
        p = run([alloy, "plot"] + args)
        if p.returncode != status or text not in p.stderr or len(p.stderr.splitlines()) != 1 \
                or not p.stderr.startswith("alloy plot: "):
            fail("alloy plot %s: %d %r" % (args, p.returncode, p.stderr))
        ok("alloy plot %s: status %d, %s" % (" ".join(args), status, p.stderr.strip()))
    good = os.path.join(d, "good.jsonl")
    open(good, "w").write('{"alloy_timeline":1,"version":"0","pid":1,"cmd":"x",'
                          '"interval_ms":100,"start_unix_ms":0,"nclasses":208,"prof":0}\n')
    nompl = os.path.join(d, "python-without-site")
    open(nompl, "w").write('#!/bin/sh\nexec /usr/bin/python3 -S "$@"\n')
    os.chmod(nompl, 0o755)
    for py, text in ((nompl, "needs matplotlib for Python 3 (Debian package python3-matplotlib)"),
                     ("/nonexistent/python3", "apt-get install python3-matplotlib")):
        p = run([alloy, "plot", good, "-o", os.path.join(d, "x.svg")],
                env={"ALLOY_PLOT_PYTHON": py})
        if p.returncode != 1 or text not in p.stderr or not p.stderr.startswith("alloy plot: "):
            fail("without matplotlib (%s): %d %r" % (py, p.returncode, p.stderr))
        ok("without matplotlib: status 1, %s" % p.stderr.strip())


# ---- alloy top ----

def start_server(alloy, prog, extra=()):
    p = subprocess.Popen([alloy, "run", "--live"] + list(extra) + ["--", prog, "serve"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    if p.stdout.readline().strip() != "ready":
        fail("observe_prog serve did not start")
    seg = "/dev/shm/alloy.%d" % p.pid
    wait_until(lambda: os.path.exists(seg), seg)
    return p, seg


def stop_server(p, seg):
    p.stdin.close()
    if p.wait(timeout=WAIT) != 0:
        fail("observe_prog serve: status %d" % p.returncode)
    if os.path.exists(seg):
        fail("%s is still there after the process exited" % seg)


def top(alloy, prog, d):
    p, seg = start_server(alloy, prog)
    st = os.stat(seg)
    if stat.S_IMODE(st.st_mode) != 0o600 or st.st_uid != os.getuid():
        fail("%s: mode %o, uid %d" % (seg, stat.S_IMODE(st.st_mode), st.st_uid))
    ok("%s: mode 0600, ours" % seg)
    r = run([alloy, "top", "--once", str(p.pid)])
    want = ["alloy top - pid %d (observe_prog)" % p.pid, "resident breakdown", "  in use",
            "  thread caches", "  central caches", "  page heap free", "  metadata",
            "rates ", "threads ", "RSS over the last", "size classes with the most unused bytes",
            "tier      thread caches; not per CPU: the setting percpu:off"]
    missing = [w for w in want if w not in r.stdout]
    if r.returncode != 0 or missing:
        fail("alloy top --once: %d, missing %s:\n%s%s" % (r.returncode, missing, r.stdout,
                                                          r.stderr))
    ok("alloy top --once: %d lines with every section" % len(r.stdout.splitlines()))
    r = run([alloy, "top", "--json", str(p.pid)])
    s = json.loads(r.stdout)
    if s["pid"] != p.pid or s["cmd"] != "observe_prog" or sum(s[k] for k in PARTS) != \
            s["resident"] or s["allocated"] < 20000 * 64 or len(s["rss_history"]) < 1 or \
            s.get("percpu_mode") != "thread" or s.get("percpu_why") != "the setting percpu:off" or \
            any(s.get(k, 1) for k in PERCPU):
        fail("alloy top --json: %r" % s)
    ok("alloy top --json: the breakdown adds up to resident %d; allocated %d"
       % (s["resident"], s["allocated"]))
    # refreshed, into a pipe: plain screens one after another, no escape codes
    q = subprocess.Popen([alloy, "top", str(p.pid)], stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(2.5)
    q.terminate()
    out, err = q.communicate(timeout=WAIT)
    screens = out.count(b"alloy top - pid %d" % p.pid)
    if b"\033" in out or screens < 2 or err:
        fail("alloy top into a pipe: %d screens, escape codes %s, stderr %r:\n%r"
             % (screens, b"\033" in out, err, out[:300]))
    ok("alloy top into a pipe: %d screens, no escape codes" % screens)
    stop_server(p, seg)
    ok("the segment is removed at exit")


def percpu(alloy, prog, d, doc):
    """Per CPU (the environment's ALLOY_CONF=percpu:auto): the timeline's
    header and records, and alloy top's screen and JSON, have the per-CPU
    figures that alloy_ctl read in a quiet spell, none of them 0 but
    scavenges."""
    os.makedirs(d, exist_ok=True)
    t = os.path.join(d, "p.jsonl")
    if os.path.exists(t):
        os.unlink(t)
    p = subprocess.Popen([alloy, "run", "--live", "--timeline", t, "--", prog, "percpu"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    q = json.loads(p.stdout.readline())
    if p.stdout.readline().strip() != "ready":
        fail("observe_prog percpu did not start")
    seg = "/dev/shm/alloy.%d" % p.pid
    if q["mode"] != "percpu":
        p.stdin.close()
        p.wait(timeout=WAIT)
        print("skipped: percpu.mode is %s (%s)" % (q["mode"], q["why"]))
        sys.exit(77)
    want = {k: q[k] for k in ("bytes", "caches", "misses", "overflows", "scavenges", "drains",
                              "moves")}
    if q["why"] or not all(want[k] > 0 for k in ("bytes", "caches", "misses", "overflows",
                                                    "drains")):
        fail("alloy_ctl read %r: a per-CPU figure is 0 after misses, overflows and a flush" % q)
    name = {"bytes": "percpu"}
    wait_until(lambda: os.path.exists(seg), seg)
    r = run([alloy, "top", "--json", str(p.pid)])
    s = json.loads(r.stdout)
    got = {k: s.get(name.get(k, "percpu_" + k)) for k in want}
    if (s.get("percpu_mode"), s.get("percpu_why")) != ("percpu", "") or got != want:
        fail("alloy top --json: mode %r, why %r, %r; alloy_ctl read %r"
             % (s.get("percpu_mode"), s.get("percpu_why"), got, want))
    ok("alloy top --json: the per-CPU figures alloy_ctl read: %r" % got)
    r = run([alloy, "top", "--once", str(p.pid)])
    tier = ("tier      per-CPU caches, %d set up; since start: %d misses, %d overflows, "
            "%d scavenges, %d drains, %d moves" % (q["caches"], q["misses"], q["overflows"],
                                                   q["scavenges"], q["drains"], q["moves"]))
    rows = re.search(r"^  per-CPU caches +(\S+) .*\n  thread caches ", r.stdout, re.M)
    if r.returncode != 0 or tier not in r.stdout or not rows:
        fail("alloy top --once: no %r line, or no per-CPU and thread caches rows:\n%s%s"
             % (tier, r.stdout, r.stderr))
    ok("alloy top --once: %s; the breakdown's per-CPU caches row %s" % (tier, rows.group(1)))
    stop_server(p, seg)
    header, records = load(t)
    check_schema(header, records, doc)
    if (header["percpu_mode"], header["percpu_why"]) != ("percpu", ""):
        fail("timeline header: %r" % header)
    quiet = [r for r in records if r["unix_ms"] > q["quiet_start_ms"] and not r.get("last")]
    if not quiet:
        fail("no record in the quiet spell")
    for r in quiet:
        got = {k: r[name.get(k, "percpu_" + k)] for k in want}
        if got != want or r["percpu"] > r["tcache"]:
            fail("record %d: %r (tcache %d); alloy_ctl read %r" % (r["seq"], got, r["tcache"],
                                                                   want))
    ok("timeline: header mode percpu; %d records of the quiet spell have the figures alloy_ctl "
       "read" % len(quiet))


def tmux(sock, *args):
    return subprocess.run(["tmux", "-L", sock] + list(args), capture_output=True, text=True,
                          timeout=WAIT)


def top_tmux(alloy, prog, d):
    if not os.path.exists("/usr/bin/tmux"):
        fail("tmux is missing: tools/install-deps.sh installs it")
    p, seg = start_server(alloy, prog)
    sock = "alloy-observe-%d" % os.getpid()
    cmd = "%s top %d; echo top-exit-status:$?; sleep %d" % (alloy, p.pid, WAIT)
    tmux(sock, "-u", "new-session", "-d", "-s", "top", "-x", "100", "-y", "40", cmd)
    try:
        screens = []

        def screen_with(text):
            s = tmux(sock, "capture-pane", "-p", "-t", "top").stdout
            screens.append(s)
            return text in s
        wait_until(lambda: screen_with("q quits"), "the screen of alloy top")
        first = re.search(r"snapshot (\d+)", screens[-1])
        for want in ("alloy top - pid %d" % p.pid, "resident breakdown", "RSS over the last",
                     "size classes with the most unused bytes"):
            if want not in screens[-1]:
                fail("the screen lacks %r:\n%s" % (want, screens[-1]))

        def refreshed():
            screen_with("q quits")
            m = re.search(r"snapshot (\d+)", screens[-1])
            return m and first and int(m.group(1)) > int(first.group(1))
        wait_until(refreshed, "a refresh of the screen")
        ok("the interactive screen, refreshed (snapshot %s, then %s):\n%s" % (
            first.group(1), re.search(r"snapshot (\d+)", screens[-1]).group(1),
            "\n".join(screens[-1].splitlines()[:12])))
        tmux(sock, "send-keys", "-t", "top", "q")
        wait_until(lambda: screen_with("top-exit-status:0"), "alloy top to quit on q")
        ok("q quits, status 0")
    finally:
        tmux(sock, "kill-server")
    stop_server(p, seg)


def dead_pid():
    q = subprocess.Popen(["true"])
    q.wait()
    return q.pid


def fake_segment(pid, version=1, mode=0o600, uid=None, magic=0x4d48535f594f4c41):
    path = "/dev/shm/alloy.%d" % pid
    with open(path, "wb") as f:
        f.write(struct.pack("<QIIQQ", magic, version, 1128, pid, 0) + bytes(2000))
    os.chmod(path, mode)
    if uid is not None:
        os.chown(path, uid, -1)
    return path


def top_case(alloy, pid, text, what):
    r = run([alloy, "top", "--once", str(pid)])
    if r.returncode != 1 or text not in r.stderr or len(r.stderr.splitlines()) != 1 \
            or not r.stderr.startswith("alloy top: "):
        fail("%s: %d %r" % (what, r.returncode, r.stderr))
    ok("%s: status 1, %s" % (what, r.stderr.strip()))


def top_errors(alloy, prog, d):
    sleeper = subprocess.Popen(["sleep", str(WAIT)])
    try:
        top_case(alloy, sleeper.pid, "publishes no alloy statistics", "a process not on alloy")
        top_case(alloy, dead_pid(), "is running", "no such process")
        path = fake_segment(sleeper.pid, version=99)
        top_case(alloy, sleeper.pid, "is a segment of version 99", "a segment of another version")
        os.chmod(path, 0o644)
        top_case(alloy, sleeper.pid, "has mode 0644, not 0600", "a segment of another mode")
        if os.getuid() == 0:
            os.chmod(path, 0o600)
            os.chown(path, 65534, -1)
            top_case(alloy, sleeper.pid, "not to you", "a segment of another user")
        else:
            print("note: not root, so the case of another user's segment is not made here")
        os.unlink(path)
        fake_segment(sleeper.pid, magic=0x1234)
        top_case(alloy, sleeper.pid, "is not an alloy statistics segment", "a file that is no segment")
        os.unlink(path)
    finally:
        sleeper.kill()
    gone = dead_pid()
    path = fake_segment(gone)
    top_case(alloy, gone, "removed its stale segment", "a stale segment")
    if os.path.exists(path):
        fail("alloy top left the stale segment %s" % path)
    gone = dead_pid()
    path = fake_segment(gone)
    p, seg = start_server(alloy, prog)
    if os.path.exists(path):
        fail("a process started with stats_shm left the stale segment %s" % path)
    stop_server(p, seg)
    ok("a process started with stats_shm removes stale segments of its user")


def doc(alloy, path, d):
    """The summary docs/OBSERVING.md shows is what alloy plot prints for the
    timeline committed beside it."""
    os.makedirs(d, exist_ok=True)
    text = open(path, encoding="utf-8").read()
    m = re.search(r"<!-- summary:begin -->\n```\n(.*?)```\n<!-- summary:end -->", text, re.S)
    if not m:
        fail("%s has no summary block" % path)
    timeline = os.path.join(os.path.dirname(path), "observing-grow.jsonl")
    p = run([alloy, "plot", "--force", timeline, "-o", os.path.join(d, "doc.svg")])
    got = "".join(line + "\n" for line in p.stdout.splitlines() if not line.startswith("chart:"))
    if p.returncode != 0 or got != m.group(1):
        fail("alloy plot %s prints:\n%s\nthe docs show:\n%s" % (timeline, got, m.group(1)))
    ok("the summary in %s is what alloy plot prints (%d lines)"
       % (os.path.basename(path), len(got.splitlines())))


def main(argv):
    what = argv[1]
    if what == "timeline":
        timeline(*argv[2:6])
    elif what == "timeline-errors":
        timeline_errors(*argv[2:5])
    elif what == "plot":
        plot(*argv[2:4])
    elif what == "plot-errors":
        plot_errors(*argv[2:4])
    elif what == "top":
        top(*argv[2:5])
    elif what == "top-tmux":
        top_tmux(*argv[2:5])
    elif what == "top-errors":
        top_errors(*argv[2:5])
    elif what == "doc":
        doc(*argv[2:5])
    elif what == "percpu":
        percpu(*argv[2:6])
    else:
        fail("unknown check %r" % what)
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(main(sys.argv))
