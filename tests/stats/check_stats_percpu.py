#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""check_stats_percpu.py - the first tier in the statistics report, on
percpu_report (percpu_report.c), run under the environment ctest gives it:

    check_stats_percpu.py percpu PROG ALLOY   per-CPU mode (ALLOY_CONF=percpu:auto):
        the summary's "percpu:" line and the JSON's alloy.percpu and
        stats.percpu_* fields, equal to alloy_ctl's percpu.* at the same
        quiet moment, with non-zero bytes, caches, misses, overflows and
        drains; skipped (77) when percpu.mode says thread (valgrind,
        GLIBC_TUNABLES=glibc.pthread.rseq=0, an old kernel)
    check_stats_percpu.py thread PROG ALLOY [WHY]   thread caches: the
        summary's line says "mode thread" and why not per CPU, as
        percpu.why does (WHY: a part of it that must be there)

Both check that the summary keeps to its 30 lines and that `alloy stats
--summary` renders the JSON as the library printed the text.  Uses the
standard library only.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_stats_report import check_summary, fmt_bytes  # noqa: E402

COUNTS = ("bytes", "caches", "misses", "overflows", "scavenges", "drains", "moves")


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def run_prog(prog):
    p = subprocess.run([prog], capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        fail(f"{prog}: status {p.returncode}: {p.stderr}")
    head, _, rest = p.stdout.partition("--- text\n")
    text, _, js = rest.partition("--- json\n")
    ctl = {}
    for line in head.splitlines():
        m = re.match(r"^ctl percpu\.(\w+) ?(.*)$", line)
        if m:
            ctl[m.group(1)] = m.group(2)
    if "mode" not in ctl or not text or not js:
        fail(f"{prog} printed no ctl lines, text and JSON:\n{p.stdout}")
    return ctl, text, json.loads(js)["alloy"]


def check_render(alloy, doc, text):
    """alloy stats --summary on the JSON prints the text the library printed."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"alloy": doc}, f)
    try:
        p = subprocess.run([alloy, "stats", "--summary", f.name], capture_output=True, text=True)
    finally:
        os.unlink(f.name)
    if p.returncode != 0 or p.stdout != text:
        fail(f"alloy stats --summary does not print the library's summary (status "
             f"{p.returncode}):\n{p.stdout}{p.stderr}\nthe library's:\n{text}")


def percpu_line(text):
    """The summary's "percpu:" line, its continuation lines joined."""
    lines = text.split("\n")
    for i, l in enumerate(lines):
        if l.startswith("percpu:"):
            j = i + 1
            while j < len(lines) and lines[j].startswith("    "):
                j += 1
            return " ".join(x.strip() for x in lines[i:j])
    fail(f"no percpu: line in the summary:\n{text}")


def main():
    if len(sys.argv) < 4:
        fail(__doc__)
    want, prog, alloy = sys.argv[1], sys.argv[2], sys.argv[3]
    ctl, text, doc = run_prog(prog)
    if want == "percpu" and ctl["mode"] != "percpu":
        print(f"skipped: percpu.mode is {ctl['mode']} ({ctl.get('why')})")
        sys.exit(77)
    if ctl["mode"] != want:
        fail(f"percpu.mode is {ctl['mode']}, want {want} ({ctl.get('why')})")
    check_summary(text)
    pj = doc.get("percpu")
    if pj != {"mode": ctl["mode"], "why": ctl["why"]}:
        fail(f"alloy.percpu is {pj!r}, alloy_ctl says mode {ctl['mode']!r}, why {ctl['why']!r}")
    setting = "off" if "percpu:off" in ctl["why"] else "auto"
    if doc["opt"].get("percpu") != setting:
        fail(f"alloy.opt.percpu is {doc['opt'].get('percpu')!r}, want {setting!r}")
    s = doc["stats"]
    line = percpu_line(text)
    if want == "percpu":
        for k in COUNTS:
            if s.get("percpu_" + k) != int(ctl[k]):
                fail(f"stats.percpu_{k} is {s.get('percpu_' + k)}, percpu.{k} {ctl[k]}")
        for k in ("bytes", "caches", "misses", "overflows", "drains"):
            if not s["percpu_" + k] > 0:
                fail(f"stats.percpu_{k} is 0 after misses, overflows and a flush")
        if not s["percpu_bytes"] <= s["tcache_bytes"] or not s["percpu_caches"] <= os.cpu_count():
            fail(f"percpu_bytes {s['percpu_bytes']} above tcache_bytes {s['tcache_bytes']}, or "
                 f"{s['percpu_caches']} caches on {os.cpu_count()} CPUs")
        heap0 = next(h for h in doc["heaps"] if h["id"] == 0)
        if any(heap0["percpu_" + k] != s["percpu_" + k] for k in COUNTS):
            fail("heap 0 does not have the per-CPU figures of the totals")
        expect = (f"percpu: mode percpu, caches {s['percpu_caches']}, bytes "
                  f"{fmt_bytes(s['percpu_bytes'])}, misses {s['percpu_misses']}, overflows "
                  f"{s['percpu_overflows']}, scavenges {s['percpu_scavenges']}, drains "
                  f"{s['percpu_drains']}, moves {s['percpu_moves']}")
        if line != expect:
            fail(f"the summary's line is\n  {line!r}\nwant\n  {expect!r}")
    else:
        why = ctl["why"]
        if not why or (len(sys.argv) > 4 and sys.argv[4] not in why):
            fail(f"percpu.why is {why!r}" + (f", without {sys.argv[4]!r}" if len(sys.argv) > 4 else ""))
        if line != f"percpu: mode thread, not per CPU: {why}":
            fail(f"the summary's line is {line!r}, not the mode and percpu.why {why!r}")
        if any(s["percpu_" + k] for k in COUNTS):
            fail("per-CPU figures not 0 with thread caches: "
                 + ", ".join(f"{k} {s['percpu_' + k]}" for k in COUNTS))
    check_render(alloy, doc, text)
    print(f"ok: {line}")


if __name__ == "__main__":
    main()
