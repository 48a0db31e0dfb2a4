# check_stats_json.py - the JSON form of alloy_stats_print parses, and its
# numbers hold together: allocated <= active <= resident <= mapped, and the
# totals are the sums over heaps.  Reads the JSON on stdin.
import json, sys
d = json.load(sys.stdin)["alloy"]
s = d["stats"]
assert d["version"], "version"
assert s["allocated"] >= 3 << 20, s
assert s["allocated"] <= s["active"] <= s["resident"] <= s["mapped"], s
heaps = d["heaps"]
assert len(heaps) == d["opt"]["heaps"], heaps
for key in ("allocated", "active", "tcache_bytes", "central_bytes", "slow_path_calls"):
    assert s[key] == sum(h[key] for h in heaps), key
assert s["mapped"] == sum(h["mapped"] for h in heaps) + s["metadata"]
assert any(c["size"] == 16 for c in d["classes"])
print("stats JSON ok:", len(heaps), "heaps,", len(d["classes"]), "classes")
