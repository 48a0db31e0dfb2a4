# SPDX-License-Identifier: MIT
# check_stats_json.py - the JSON form of alloy_stats_print parses, and its
# numbers hold together (docs/STATS.md, "Identities"):
#   allocated <= active <= resident <= mapped;
#   the totals are the sums over heaps (+ metadata for mapped and resident),
#   but allocated: a heap's figure subtracts what the threads bound to it
#   cache, which may be another heap's blocks, and is never below 0, so the
#   heaps' figures sum to at least the total and to at most the total plus
#   the thread-cache bytes (and a heap's breakdown is over its resident by
#   at most its thread-cache bytes);
#   the resident breakdown sums to resident, in the totals and in each heap;
#   each node's totals are the sums of its heaps';
#   each class: 0 <= utilisation <= 1, utilisation = objects in use / capacity,
#   capacity * size + tails = span bytes, waste = span bytes - allocated;
#   sparse_bytes is part of central_bytes (beside transfer_bytes), in each
#   class, heap and the totals, and the classes' sum is the total's;
#   the per-CPU figures (percpu_*) are heap 0's and the totals', 0 in every
#   other heap, percpu_bytes is part of tcache_bytes, and alloy.percpu says
#   the mode (thread: why, all 0; percpu: no why).
# Reads the JSON on stdin, or from the file given as argv[1].
import json, sys

d = json.load(open(sys.argv[1]) if len(sys.argv) > 1 else sys.stdin)["alloy"]
s = d["stats"]
assert d["version"], "version"
assert d["pid"] > 0 and d["cmd"], (d.get("pid"), d.get("cmd"))  # the process
assert s["allocated"] >= 3 << 20, s
assert s["allocated"] <= s["active"] <= s["resident"] <= s["mapped"], s
heaps = d["heaps"]
assert len(heaps) == d["opt"]["heaps"], heaps
for key in ("active", "tcache_bytes", "central_bytes", "slow_path_calls", "sparse_bytes",
            "span_tail_bytes", "pageheap_free_bytes", "spans"):
    assert s[key] == sum(h[key] for h in heaps), key
over = sum(h["allocated"] for h in heaps) - s["allocated"]
assert 0 <= over <= s["tcache_bytes"], ("allocated over heaps", over, s["tcache_bytes"])
assert s["mapped"] == sum(h["mapped"] for h in heaps) + s["metadata"]
assert s["resident"] == sum(h["resident"] for h in heaps) + s["metadata_resident"]
assert 0 < s["metadata_resident"] <= s["metadata"], s

b = d["resident_breakdown"]
parts = ("in_use", "tcache", "central", "span_tails", "pageheap_free", "metadata")
assert sum(b[k] for k in parts) == b["total"] == s["resident"], (b, s["resident"])
assert b["in_use"] == s["allocated"] and b["metadata"] == s["metadata_resident"], b
for h in heaps:
    got = (h["allocated"] + h["tcache_bytes"] + h["central_bytes"] + h["span_tail_bytes"]
           + h["pageheap_free_bytes"])
    over = got - h["resident"]
    assert 0 <= over <= h["tcache_bytes"], ("heap breakdown", h["id"], got, h["resident"])
    assert 0 <= h["utilisation"] <= 1, h
    assert h["sparse_bytes"] <= h["central_bytes"] - h["transfer_bytes"], h

# the first tier: per-CPU figures in heap 0 only, a part of the thread-cache bytes
pc = ("percpu_bytes", "percpu_caches", "percpu_misses", "percpu_overflows",
      "percpu_scavenges", "percpu_drains", "percpu_moves")
for key in pc:
    assert s[key] == sum(h[key] for h in heaps) == [h for h in heaps if h["id"] == 0][0][key], key
assert s["percpu_bytes"] <= s["tcache_bytes"], s
assert d["percpu"]["mode"] in ("percpu", "thread") and d["opt"]["percpu"] in ("auto", "off"), d
if d["percpu"]["mode"] == "thread":
    assert d["percpu"]["why"] and not any(s[k] for k in pc), (d["percpu"], s)
else:
    assert d["percpu"]["why"] == "" and d["opt"]["percpu"] == "auto", d

# NUMA: every heap names its node; each node's totals are the sums of its heaps
assert isinstance(d["opt"]["numa"], bool), d["opt"]
nodes = d["nodes"]
assert [n["node"] for n in nodes] == sorted({h["node"] for h in heaps}), (nodes, heaps)
for n in nodes:
    mine = [h for h in heaps if h["node"] == n["node"]]
    assert n["heaps"] == len(mine), n
    for key in ("allocated", "active", "resident", "mapped", "tcache_bytes", "central_bytes",
                "pageheap_free_bytes", "threads", "slow_path_calls", "spans"):
        assert n[key] == sum(h[key] for h in mine), (key, n)
for key in ("active", "resident", "threads"):
    assert sum(n[key] for n in nodes) == sum(h[key] for h in heaps), key

classes = d["classes"]
assert any(c["size"] == 16 for c in classes)
for c in classes:
    assert 0 <= c["utilisation"] <= 1, c
    assert c["objects_in_use"] == c["allocated"] // c["size"], c
    assert c["objects_in_use"] <= c["capacity"], c
    want = c["objects_in_use"] / c["capacity"] if c["capacity"] else 0
    assert abs(c["utilisation"] - want) <= 0.00005, (c["utilisation"], want)
    assert c["capacity"] * c["size"] <= c["span_bytes"], c
    assert c["waste"] == c["span_bytes"] - c["allocated"], c
    assert c["spans"] == c["spans_allocated"] - c["spans_freed"], c
    assert c["sparse_bytes"] <= c["central_bytes"] - c["transfer_bytes"], c
    assert c["sparse_bytes"] % c["size"] == 0, c
assert s["sparse_bytes"] <= s["central_bytes"] - s["transfer_bytes"], s
assert s["sparse_bytes"] == sum(c["sparse_bytes"] for c in classes), s
assert s["span_tail_bytes"] == sum(c["span_bytes"] - c["capacity"] * c["size"] for c in classes)
print("stats JSON ok:", len(heaps), "heaps,", len(classes), "classes")
