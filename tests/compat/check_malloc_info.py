#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""check_malloc_info.py PROGRAM DIR - alloy's malloc_info against glibc's
schema and against alloy's own figures.

PROGRAM (test_glibc_api) writes malloc_info to DIR/malloc_info.xml with a
few blocks live (one a 40 MiB direct map) and prints mallinfo2's hblks,
hblkhd and arena + hblkhd (= stats.mapped) as key=value.  The document must
be <malloc version="1"> with a <heap nr=...> per heap, each with its free
objects by class (<size from to total count>: ascending, disjoint ranges,
total = count * to) and its totals, then the totals over heaps: fast and
rest the sums of the heaps', mmap the direct maps (hblks, hblkhd), system
the mapped bytes.  Exit 1 with one line per problem.
"""
import os
import subprocess
import sys
import xml.etree.ElementTree as ET


def attr_int(el, name):
    return int(el.get(name))


def totals(el):
    """{type: (count, size)} of el's <total> children."""
    return {t.get("type"): (attr_int(t, "count"), attr_int(t, "size")) for t in el.findall("total")}


def check_heap(heap, problems):
    nr = heap.get("nr")
    sizes = heap.find("sizes")
    if sizes is None:
        problems.append("heap %s has no <sizes>" % nr)
        return (0, 0), (0, 0)
    last_to, count = 0, 0
    for s in sizes.findall("size"):
        lo, hi, tot, n = (attr_int(s, k) for k in ("from", "to", "total", "count"))
        if lo <= last_to or lo > hi:
            problems.append("heap %s: size range %d-%d not after %d" % (nr, lo, hi, last_to))
        if tot != n * hi or n <= 0:
            problems.append("heap %s: size %d-%d: total %d is not count %d * %d" % (nr, lo, hi, tot, n, hi))
        last_to, count = hi, count + n
    t = totals(heap)
    if set(t) != {"fast", "rest"}:
        problems.append("heap %s: totals %s, not fast and rest" % (nr, sorted(t)))
        return (0, 0), (0, 0)
    if count != t["fast"][0] + t["rest"][0]:
        problems.append("heap %s: %d free objects by size, %d in the totals" % (nr, count, t["fast"][0] + t["rest"][0]))
    for kind in ("system", "aspace"):
        if len(heap.findall(kind)) != 2:
            problems.append("heap %s: not two <%s> elements" % (nr, kind))
    return t["fast"], t["rest"]


def main(argv):
    prog, out_dir = argv[1], argv[2]
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "malloc_info.xml")
    r = subprocess.run([prog, "xml", path], capture_output=True, text=True)
    if r.returncode != 0:
        print("check_malloc_info: %s xml failed: %s" % (prog, r.stderr.strip()))
        return 1
    want = {k: int(v) for k, v in (kv.split("=") for kv in r.stdout.split())}
    problems = []
    root = ET.parse(path).getroot()
    if root.tag != "malloc" or root.get("version") != "1":
        problems.append("root is <%s version=%s>, not <malloc version=1>" % (root.tag, root.get("version")))
    heaps = root.findall("heap")
    if not heaps or [h.get("nr") for h in heaps] != sorted((h.get("nr") for h in heaps), key=int):
        problems.append("no heaps, or heaps out of order")
    fast, rest = [0, 0], [0, 0]
    for h in heaps:
        f, r_ = check_heap(h, problems)
        fast = [fast[0] + f[0], fast[1] + f[1]]
        rest = [rest[0] + r_[0], rest[1] + r_[1]]
    t = totals(root)
    if t.get("fast") != tuple(fast) or t.get("rest") != tuple(rest):
        problems.append("totals fast %s rest %s, heaps sum to %s and %s" % (t.get("fast"), t.get("rest"), fast, rest))
    if t.get("mmap") != (want["hblks"], want["hblkhd"]) or want["hblks"] < 1 or want["hblkhd"] < 40 << 20:
        problems.append("mmap total %s, mallinfo2 says (%d, %d)" % (t.get("mmap"), want["hblks"], want["hblkhd"]))
    system = [attr_int(e, "size") for e in root.findall("system")]
    if system != [want["mapped"], want["mapped"]]:
        problems.append("system sizes %s, stats.mapped is %d" % (system, want["mapped"]))
    for p in problems:
        print("check_malloc_info:", p)
    if not problems:
        print("check_malloc_info: %d heaps, totals and direct maps agree (%s)" % (len(heaps), path))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
