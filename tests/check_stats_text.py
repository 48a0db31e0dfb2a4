# check_stats_text.py - the text form of alloy_stats_print: it has the
# header and every section, each heap and class entry has every field, its
# numbers hold together, and it says exactly what the JSON form printed at
# the same quiescent point says (same keys, same order, same values).
# Reads `stats_dump both` on stdin: the text report, "--- json ---", the JSON.
import json, sys

raw = sys.stdin.read()
text, sep, js = raw.partition("--- json ---\n")
assert sep, "no JSON part"
lines = text.splitlines()

TOTALS = ["allocated", "active", "resident", "mapped", "retained", "metadata", "peak_active",
          "large_allocated", "tcache_bytes", "central_bytes", "pageheap_free_bytes",
          "pageheap_purged_bytes", "slow_path_calls", "short_fetches", "objects_fetched",
          "objects_released", "spans_allocated", "spans_freed", "central_lock_contended",
          "purges", "threads", "tcache_overflows", "tcache_scavenges"]
OPT = ["batch_policy", "batch_budget", "batch_cap", "return_threshold_halves", "tcache",
       "tcache_max_bytes", "decay_ms", "heaps", "background_thread"]
CLASS = ["class", "size", "batch_limit", "terminal_batch", "slow_path_calls", "short_fetches",
         "objects_fetched", "objects_released", "spans_allocated", "lock_contended",
         "tcache_bytes", "central_bytes", "allocated"]


def value(s):
    if s == "true":
        return True
    if s == "false":
        return False
    if s.lstrip("-").isdigit():
        return int(s)
    return s


def parse(lines):
    """The text report as a tree of (key, value) lists, from its indentation:
    "key:" opens an object (an array when its members are "[i]"), "key: v" is
    a value, "[i]" opens an array element.  Two spaces per level below the
    top-level object, whose members are not indented."""
    assert lines and lines[0] == "alloy:", "header: %r" % lines[:1]
    root = []
    # stack of (indent of members, container); the top object's members sit at 0
    stack = [(0, root)]
    pending = None  # (key, indent) of a "key:" line whose kind is not known yet
    for n, line in enumerate(lines[1:], 2):
        assert line.strip(), "blank line %d" % n
        indent = len(line) - len(line.lstrip(" "))
        assert indent % 2 == 0, "odd indent at line %d: %r" % (n, line)
        body = line.strip()
        if pending is not None:
            key, at = pending
            pending = None
            node = []
            # the new container's members are indented one level more
            assert indent == at + 2, "line %d: members of %s at indent %d" % (n, key, indent)
            stack[-1][1].append((key, node))
            stack.append((indent, node))
        while indent < stack[-1][0]:
            stack.pop()
        assert indent == stack[-1][0], "line %d: indent %d, expected %d: %r" % (n, indent, stack[-1][0], line)
        if body.startswith("[") and body.endswith("]"):
            node = []
            stack[-1][1].append((int(body[1:-1]), node))
            stack.append((indent + 2, node))
        elif body.endswith(":"):
            pending = (body[:-1], indent)
        else:
            key, colon, v = body.partition(": ")
            assert colon, "line %d: not key: value: %r" % (n, line)
            stack[-1][1].append((key, value(v)))
    assert pending is None, "section %s left empty" % pending[0]
    return root


def to_plain(node):
    """Text tree -> the JSON shapes: lists of (int, x) become lists, of
    (str, x) dicts (ordered)."""
    if not isinstance(node, list):
        return node
    if node and all(isinstance(k, int) for k, _ in node):
        assert [k for k, _ in node] == list(range(len(node))), "array numbering"
        return [to_plain(v) for _, v in node]
    keys = [k for k, _ in node]
    assert len(keys) == len(set(keys)), "duplicate keys %s" % keys
    return {k: to_plain(v) for k, v in node}


tree = to_plain(parse(lines))
doc = json.loads(js)["alloy"]

# the header and every section, in order
assert list(tree) == ["version", "opt", "stats", "heaps", "classes"], list(tree)
assert list(doc) == list(tree), list(doc)
assert isinstance(tree["version"], str) and tree["version"].count(".") == 2, tree["version"]
assert list(tree["opt"]) == OPT, list(tree["opt"])
assert list(tree["stats"]) == TOTALS, list(tree["stats"])
assert len(tree["heaps"]) >= 2, "heaps"
for h in tree["heaps"]:
    assert list(h) == ["id", "explicit"] + TOTALS, list(h)
assert tree["classes"], "classes"
for c in tree["classes"]:
    assert list(c) == CLASS, list(c)

# text and JSON say the same, key by key, in the same order
def same(a, b, where):
    assert type(a) == type(b), "%s: %r vs %r" % (where, a, b)
    if isinstance(a, dict):
        assert list(a) == list(b), "%s: keys %s vs %s" % (where, list(a), list(b))
        for k in a:
            same(a[k], b[k], where + "." + k)
    elif isinstance(a, list):
        assert len(a) == len(b), "%s: %d vs %d elements" % (where, len(a), len(b))
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, "%s[%d]" % (where, i))
    else:
        assert a == b, "%s: text %r, JSON %r" % (where, a, b)
same(tree, doc, "alloy")

# and the numbers hold together
s, heaps, classes = tree["stats"], tree["heaps"], tree["classes"]
assert s["allocated"] >= 3 << 20, s["allocated"]  # stats_dump holds a 3 MiB block
assert s["allocated"] <= s["active"] <= s["resident"] <= s["mapped"], s
assert s["large_allocated"] <= s["allocated"] and s["large_allocated"] >= (3 << 20) + 400000, s
assert s["retained"] == s["pageheap_purged_bytes"], s
assert s["peak_active"] >= s["active"], s
assert s["objects_released"] <= s["objects_fetched"] and s["short_fetches"] <= s["slow_path_calls"], s
assert s["spans_freed"] <= s["spans_allocated"], s
auto = [h for h in heaps if not h["explicit"]]
assert len(auto) == tree["opt"]["heaps"], (len(auto), tree["opt"]["heaps"])
assert [h["id"] for h in heaps] == sorted(h["id"] for h in heaps), "heap ids"
assert [h["id"] for h in auto] == list(range(len(auto))), "automatic heaps first"
assert any(h["explicit"] and h["allocated"] > 400000 for h in heaps), "the explicit heap"
for key in TOTALS:
    if key in ("metadata", "mapped", "resident", "peak_active", "threads"):
        continue
    assert s[key] == sum(h[key] for h in heaps), key
assert s["mapped"] == sum(h["mapped"] for h in heaps) + s["metadata"], "mapped"
assert s["resident"] >= sum(h["resident"] for h in heaps), "resident"
for h in heaps:
    assert h["metadata"] == 0 and h["allocated"] <= h["active"] <= h["resident"] <= h["mapped"], h
sizes = [c["size"] for c in classes]
assert sizes == sorted(sizes) and len(set(sizes)) == len(sizes), "class sizes"
for c in classes:
    assert c["terminal_batch"] <= c["batch_limit"] == max(1, min(262144 // c["size"], 1024)), c
    assert (c["objects_fetched"] - c["objects_released"]) * c["size"] == c["allocated"] + c["tcache_bytes"], c
small = sum(c["allocated"] for c in classes)
assert small + s["large_allocated"] == s["allocated"], (small, s["large_allocated"], s["allocated"])
assert sum(c["tcache_bytes"] for c in classes) == s["tcache_bytes"], "tcache bytes"
print("stats text ok: %d lines, %d heaps, %d classes, equal to the JSON" % (len(lines), len(heaps), len(classes)))
