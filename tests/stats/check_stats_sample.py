#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""check_stats_sample.py DOC ALLOY - the sample summary in DOC (docs/STATS.md)
is what alloy prints today: the command of its first block that starts with
"$ alloy run --stats -- " is run with ALLOY (the alloy command), and the two
summaries must have the same words in the same order once every figure is
masked (figures differ from run to run and machine to machine; names,
settings, sections and the order of the counters do not).  The parts the
summary shows only when they are not zero (the span_tails line, central's
sparse note) are left out of both.  Exit 77 (skipped) where the sample
shows per-CPU caches and thread caches ran (no rseq here).  Uses the
standard library only.
"""
import re
import shlex
import subprocess
import sys

FIGURE = re.compile(r"^-?[0-9][0-9.]*[KMGTPE%]?,?$")
PROMPT = "$ alloy run --stats -- "


def words(text):
    out = []
    for line in text.splitlines():
        if line.lstrip().startswith("span_tails:"):
            continue
        line = re.sub(r"\s+\([^)]* of it in spans <25% used\)", "", line)
        for w in line.split():
            out.append("N" if FIGURE.match(w) else w)
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    doc, alloy = sys.argv[1], sys.argv[2]
    text = open(doc, encoding="utf-8").read()
    m = re.search(r"```\n(\$ alloy run --stats -- [^\n]*)\n(.*?)```", text, re.S)
    if not m:
        print(f"FAIL: no block in {doc} that starts with {PROMPT!r}")
        sys.exit(1)
    cmd = [alloy, "run", "--stats", "--"] + shlex.split(m.group(1)[len(PROMPT):])
    p = subprocess.run(cmd, capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
    if p.returncode != 0:
        print(f"FAIL: {cmd}: status {p.returncode}: {p.stderr}")
        sys.exit(1)
    want, got = words(m.group(2)), words(p.stderr)
    if "mode percpu," in m.group(2) and "percpu: mode thread," in p.stderr:
        print("skipped: the sample is of per-CPU caches, and thread caches ran here: "
              + p.stderr.split("percpu: ", 1)[1].split("\n", 1)[0])
        sys.exit(77)
    if want != got:
        import difflib
        print(f"FAIL: {doc}'s sample summary is not what alloy prints today (figures masked as N):")
        print("\n".join(difflib.unified_diff(want, got, doc, "today", lineterm="", n=4)))
        print("today's summary:\n" + p.stderr)
        sys.exit(1)
    print(f"ok: {doc}'s sample summary has today's {len(want)} words, figures aside")


if __name__ == "__main__":
    main()
