#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test_runner.py - tests of the benchmark runner: its statistics (median,
nearest-rank percentiles, geomean), the parsing of workload output, the ratio
table and both sets of targets (each workload against the best peer, and the
whole suite's geometric means and bounds)
evaluated on synthetic data that meets and misses them, finding the peers that
build-peers.sh builds (and reporting them, with the script's reason, when it
cannot; its search for the archives is test_build_peers.py's), the handling
of crashing and hanging runs, and bad input (unknown allocator or workload,
malformed arguments) both in run.py and in the workload programs.  Asserts no
timing, and needs none of the peers installed or built.

usage: test_runner.py [--build-dir DIR]   (DIR holds the built workload programs)
"""
import argparse
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import benchstats as bs  # noqa: E402
import run  # noqa: E402

BUILD_DIR = None
PY = sys.executable or "/usr/bin/python3"


class Stats(unittest.TestCase):
    def test_median_odd_even(self):
        self.assertEqual(bs.median([3, 1, 2]), 2)
        self.assertEqual(bs.median([4, 1, 3, 2]), 2.5)
        self.assertEqual(bs.median([7]), 7)
        self.assertEqual(bs.median([5, 5, 1, 9, 9]), 5)

    def test_median_empty(self):
        with self.assertRaises(ValueError):
            bs.median([])

    def test_percentile_nearest_rank(self):
        xs = list(range(1, 101))          # 1..100
        self.assertEqual(bs.percentile(xs, 50), 50)
        self.assertEqual(bs.percentile(xs, 99), 99)
        self.assertEqual(bs.percentile(xs, 99.9), 100)
        self.assertEqual(bs.percentile(xs, 0), 1)
        self.assertEqual(bs.percentile(xs, 100), 100)
        self.assertEqual(bs.percentile([10, 20, 30, 40], 50), 20)
        self.assertEqual(bs.percentile([10, 20, 30, 40], 51), 30)
        self.assertEqual(bs.percentile(list(reversed(xs)), 25), 25)   # unsorted input

    def test_percentile_bad(self):
        for q in (-1, 101):
            with self.assertRaises(ValueError):
                bs.percentile([1, 2], q)
        with self.assertRaises(ValueError):
            bs.percentile([], 50)

    def test_summarize(self):
        self.assertEqual(bs.summarize([3, 9, 1]), (3, 1, 9, 3))


class Parsing(unittest.TestCase):
    def test_parse_output(self):
        text = ("info malloc_from=/lib/libc.so.6\n"
                "info ticks_per_ns=2.1 timer_overhead_ns=10.0\n"
                "res case=size_8 ns_per_op=6.5 p99_ns=10\n"
                "ts case=mixed t_ms=5 rss=100 live=50\n"
                "ts case=mixed t_ms=9 rss=120 live=60\n"
                "res case=mixed time_ms=1.5\n")
        info, res, ser = bs.parse_output(text)
        self.assertEqual(info["malloc_from"], "/lib/libc.so.6")
        self.assertEqual(res["size_8"], {"ns_per_op": 6.5, "p99_ns": 10.0})
        self.assertEqual(res["mixed"], {"time_ms": 1.5})
        self.assertEqual(ser["mixed"], [(5.0, 100.0, 50.0), (9.0, 120.0, 60.0)])

    def test_parse_rejects_junk(self):
        for bad in ("hello world", "res ns_per_op=3", "res case=x novalue", "res case=x =3"):
            with self.assertRaises(ValueError, msg=bad):
                bs.parse_line(bad)
        with self.assertRaises(ValueError):
            bs.parse_output("res case=a x=notanumber\n")

    def test_allocator_list(self):
        a = run.parse_allocators("glibc,alloy,mine=/x/y.so", "bd")
        self.assertEqual(a, [("glibc", None), ("alloy", "bd/liballoy.so"), ("mine", "/x/y.so")])
        a = run.parse_allocators("mimalloc3,snmalloc,rpmalloc,mimalloc", "bd")
        self.assertEqual([lib is run.BUILT for _, lib in a], [True, True, True, False])
        self.assertEqual(run.DEFAULT_ALLOCATORS, ["glibc", "jemalloc", "tcmalloc", "mimalloc",
                                                  "mimalloc3", "snmalloc", "rpmalloc", "alloy"])
        for bad in ("glibc,nosuch", "glibc,,alloy", "glibc,glibc", "=x.so", "x="):
            with self.assertRaises(run.UsageError, msg=bad):
                run.parse_allocators(bad, "bd")

    def test_conf_for(self):
        names = ["alloy", "tl"]
        self.assertEqual(run.parse_conf_for(["tl=timeline_ms:100,stats_shm:true"], names),
                         {"tl": "timeline_ms:100,stats_shm:true"})
        self.assertEqual(run.parse_conf_for([], names), {})
        for bad in ("nosuch=a:b", "tl=", "tl", "=a:b"):
            with self.assertRaises(run.UsageError, msg=bad):
                run.parse_conf_for([bad], names)

    def test_workload_list(self):
        self.assertEqual(run.parse_workloads("frag,sizes"), ["frag", "sizes"])
        for bad in ("frag,nosuch", "", "sizes,sizes"):
            with self.assertRaises(run.UsageError, msg=bad):
                run.parse_workloads(bad)

    def test_case_sort(self):
        cases = ["size_4096", "size_8", "size_512", "size_64"]
        self.assertEqual(sorted(cases, key=run.case_sort),
                         ["size_8", "size_64", "size_512", "size_4096"])

    def test_progress_estimate(self):
        p = run.Progress({"a": 3, "b": 2}, enabled=False)
        self.assertEqual(p.eta(), "?")
        p.step("a", 10.0)                 # a: 10 s per run, b unknown: use the overall mean
        self.assertEqual(p.eta(), "0m40s")
        p.step("b", 1.0)
        self.assertEqual(p.eta(), "0m21s")

    def test_modes_cover_every_workload(self):
        for name, mode in run.MODES.items():
            for w in run.WORKLOADS:
                self.assertIn(w, mode, "%s mode lacks %s" % (name, w))
            for w in mode.get("reps_for", {}):
                self.assertIn(w, run.WORKLOADS)

    def test_malloc_test_at_16_and_100_threads(self):
        for name in ("short", "full"):
            threads = sorted(int(a[-3]) for a in run.MODES[name]["malloc_test"])
            self.assertEqual(threads, [16, 100], name)

    def test_every_row_metric_is_known(self):
        for w, (_, _, metrics) in run.WORKLOADS.items():
            for m, _ in metrics:
                self.assertIn(m, bs.METRICS, "%s: %s" % (w, m))

    def test_verdict_kind(self):
        self.assertEqual(run.verdict_kind("sizes", "ns_per_op", "st"), "time")
        self.assertEqual(run.verdict_kind("larson", "mops_per_s", "mt"), "time")
        self.assertEqual(run.verdict_kind("threads", "mops_per_s", None), None)   # threads_1
        self.assertEqual(run.verdict_kind("handoff", "peak_rss", None), "mem")
        self.assertEqual(run.verdict_kind("large", "faults", None), "faults")
        self.assertEqual(run.verdict_kind("mixed", "faults", None), None)
        self.assertEqual(run.verdict_kind("malloc_test", "ctx_switches", None), "ctx")


class BuiltPeers(unittest.TestCase):
    """build-peers.sh is replaced by small scripts: the real one is not needed."""

    def script(self, d, body):
        path = os.path.join(d, "build-peers.sh")
        with open(path, "w") as f:
            f.write("#!/bin/sh\n" + body + "\n")
        return path

    def test_parse_peer_lines(self):
        text = "building...\nmimalloc3 /p/libmimalloc.so.3\nsnmalloc relative.so\nrpmalloc /r.so\n"
        self.assertEqual(run.parse_peer_lines(text),
                         {"mimalloc3": "/p/libmimalloc.so.3", "rpmalloc": "/r.so"})

    def test_script_missing(self):
        found, missing = run.resolve_built_peers(["mimalloc3"], "/nonexistent/build-peers.sh", "/x")
        self.assertEqual(found, {})
        self.assertIn("/nonexistent/build-peers.sh not found", missing["mimalloc3"])
        self.assertIn(run.PEERS_SCRIPT_ENV, missing["mimalloc3"])

    def test_script_fails(self):
        with tempfile.TemporaryDirectory() as d:
            sc = self.script(d, "echo 'cmake: no compiler' >&2; exit 3")
            found, missing = run.resolve_built_peers(["mimalloc3", "rpmalloc"], sc, d)
            self.assertEqual(found, {})
            for n in ("mimalloc3", "rpmalloc"):
                self.assertIn("failed (exit 3): cmake: no compiler", missing[n])

    def test_library_missing_or_not_printed(self):
        with tempfile.TemporaryDirectory() as d:
            lib = os.path.join(d, "libsn.so")
            open(lib, "w").close()
            sc = self.script(d, 'echo "mimalloc3 %s/gone.so"; echo "snmalloc %s"; echo "$1" > %s/arg'
                             % (d, lib, d))
            found, missing = run.resolve_built_peers(["mimalloc3", "snmalloc", "rpmalloc"], sc,
                                                     os.path.join(d, "out"))
            self.assertEqual(found, {"snmalloc": lib})
            self.assertIn("gone.so: library missing", missing["mimalloc3"])
            self.assertIn("no rpmalloc line", missing["rpmalloc"])
            with open(os.path.join(d, "arg")) as f:          # OUTDIR is passed on
                self.assertEqual(f.read().strip(), os.path.join(d, "out"))

    def test_missing_lines_give_the_reason(self):
        # bench/build-peers.sh: exit 1, the peers it has on stdout, one line per
        # missing peer on stderr with its reason
        self.assertEqual(run.parse_missing_lines(
            "build-peers.sh: building rpmalloc from /a (ALLOY_PEERS_SRC)\n"
            "build-peers.sh: snmalloc MISSING: no /s; download of u failed: curl: (6) x\n"
            "snmalloc MISSING badly formed\n"),
            {"snmalloc": "no /s; download of u failed: curl: (6) x"})
        with tempfile.TemporaryDirectory() as d:
            lib = os.path.join(d, "librp.so")
            open(lib, "w").close()
            sc = self.script(d, 'echo "rpmalloc %s"; echo "build-peers.sh: mimalloc3 MISSING: '
                             'checksum mismatch" >&2; echo "done" >&2; exit 1' % lib)
            found, missing = run.resolve_built_peers(["mimalloc3", "snmalloc", "rpmalloc"], sc, d)
            self.assertEqual(found, {"rpmalloc": lib})
            self.assertEqual(missing["mimalloc3"], "checksum mismatch")
            self.assertIn("failed (exit 1): done", missing["snmalloc"])   # named by no line

    def test_nothing_wanted_runs_nothing(self):
        self.assertEqual(run.resolve_built_peers([], "/nonexistent", "/x"), ({}, {}))

    def test_default_script_path(self):
        env = dict(os.environ)
        try:
            os.environ.pop(run.PEERS_SCRIPT_ENV, None)
            root = os.path.dirname(HERE)
            self.assertEqual(run.peers_script(), os.path.join(root, "bench", "build-peers.sh"))
            os.environ[run.PEERS_SCRIPT_ENV] = "/elsewhere/b.sh"
            self.assertEqual(run.peers_script(), "/elsewhere/b.sh")
        finally:
            os.environ.clear()
            os.environ.update(env)


class Ratios(unittest.TestCase):
    def test_lower_is_better(self):
        best, r = bs.ratio_vs_best({"glibc": 10, "jemalloc": 8, "alloy": 10}, "alloy", "ns_per_op")
        self.assertEqual(best, "jemalloc")
        self.assertAlmostEqual(r, 1.25)

    def test_higher_is_better(self):
        best, r = bs.ratio_vs_best({"glibc": 50, "mimalloc": 100, "alloy": 80}, "alloy",
                                   "mops_per_s")
        self.assertEqual(best, "mimalloc")
        self.assertAlmostEqual(r, 1.25)      # > 1: alloy is worse

    def test_nonpositive_best(self):
        self.assertEqual(bs.ratio_vs_best({"glibc": -1.5, "alloy": 0.6}, "alloy",
                                          "rss_growth_pct"), ("glibc", None))
        self.assertEqual(bs.ratio_vs_best({"glibc": 0.0, "alloy": 0.6}, "alloy",
                                          "rss_growth_pct"), ("glibc", None))

    def test_other_alloy_builds_are_not_peers(self):
        best, r = bs.ratio_vs_best({"glibc": 10, "alloy-5509715": 5, "alloy": 8}, "alloy",
                                   "time_ms")
        self.assertEqual(best, "glibc")
        self.assertAlmostEqual(r, 0.8)
        self.assertTrue(bs.is_peer("alloyish", "alloy"))

    def test_no_alloy_or_no_peer(self):
        self.assertEqual(bs.ratio_vs_best({"glibc": 1}, "alloy", "time_ms"), ("glibc", None))
        self.assertEqual(bs.ratio_vs_best({"alloy": 1}, "alloy", "time_ms"), (None, None))

    def row(self, group, metric, **vals):
        return {"workload": "w", "case": "c", "metric": metric, "group": group, "values": vals}

    def test_targets(self):
        rows = [self.row("st", "ns_per_op", glibc=10, jemalloc=9, alloy=9.5),     # 1.056
                self.row("st", "ns_per_op", glibc=10, jemalloc=9, alloy=8),       # fastest
                self.row("mt", "mops_per_s", glibc=10, jemalloc=100, alloy=70),   # 1.43
                self.row("mem", "peak_rss", glibc=100, jemalloc=120, alloy=105)]  # 1.05
        res = {t: (met, d) for t, met, d in bs.evaluate_targets(rows)}
        st_all = [v for k, v in res.items() if "every workload" in k][0]
        st_half = [v for k, v in res.items() if "at least half" in k][0]
        mt_glibc = [v for k, v in res.items() if "beats glibc" in k][0]
        mt_25 = [v for k, v in res.items() if "within 25%" in k][0]
        mem = [v for k, v in res.items() if "memory" in k][0]
        self.assertTrue(st_all[0])
        self.assertTrue(st_half[0])
        self.assertTrue(mt_glibc[0])
        self.assertFalse(mt_25[0])
        self.assertIn("1.43", mt_25[1])
        self.assertTrue(mem[0])
        rows.append(self.row("st", "time_ms", glibc=10, tcmalloc=5, alloy=6))      # 1.2
        res = {t: met for t, met, _ in bs.evaluate_targets(rows)}
        self.assertFalse([v for k, v in res.items() if "every workload" in k][0])

    def vrow(self, verdict, workload, case, metric, **vals):
        return {"workload": workload, "case": case, "metric": metric, "group": None,
                "verdict": verdict, "values": vals}

    def verdicts(self, rows):
        res = {}
        for text, met, detail in bs.evaluate_verdicts(rows):
            key = ("time-geomean" if text.startswith("time: geomean") else
                   "time-row" if text.startswith("time: no workload") else
                   "mem-geomean" if text.startswith("memory: peak-RSS geomean") else
                   "mem-row" if text.startswith("memory: no workload") else
                   "faults" if text.startswith("faults") else
                   "ctx" if text.startswith("contention") else text)
            res[key] = (met, detail)
        return res

    def meeting_rows(self):
        """Synthetic results that meet every suite-wide target."""
        return [
            self.vrow("time", "sizes", "size_8", "ns_per_op", glibc=10, mimalloc3=5, alloy=4),
            self.vrow("time", "larson", "larson_4", "mops_per_s", glibc=10, mimalloc3=20,
                      alloy=21),
            self.vrow("mem", "mixed", "mixed", "peak_rss", glibc=100, mimalloc3=120, alloy=95),
            self.vrow("mem", "handoff", "handoff_30", "peak_rss", glibc=10, mimalloc3=9,
                      alloy=10),
            self.vrow("faults", "large", "calloc", "faults", glibc=5000, mimalloc3=40, alloy=5000),
            self.vrow("ctx", "malloc_test", "T16_N200000_S16", "ctx_switches", glibc=100,
                      mimalloc=50, mimalloc3=20, alloy=40),
            self.vrow("ctx", "malloc_test", "T100_N50000_S16", "ctx_switches", glibc=100,
                      mimalloc=30, mimalloc3=60, alloy=60),
        ]

    def test_verdicts_met(self):
        res = self.verdicts(self.meeting_rows())
        for k in ("time-geomean", "time-row", "mem-geomean", "mem-row", "faults", "ctx"):
            self.assertTrue(res[k][0], (k, res[k]))
        # sizes 0.40, larson 0.48 against glibc; 0.80 and 0.95 against mimalloc3
        self.assertIn("glibc 0.44", res["time-geomean"][1])
        self.assertIn("mimalloc3 0.87", res["time-geomean"][1])
        self.assertIn("against mimalloc3's 20.0 = 2.00x", res["ctx"][1])   # the best mimalloc
        self.assertIn("against mimalloc's 30.0 = 2.00x", res["ctx"][1])

    def test_verdicts_missed(self):
        rows = self.meeting_rows()
        rows[0]["values"]["alloy"] = 5.5            # 1.10x and 0.95x mimalloc3: geomean 1.02
        res = self.verdicts(rows)
        self.assertFalse(res["time-geomean"][0])
        self.assertIn("mimalloc3 1.02", res["time-geomean"][1])
        self.assertTrue(res["time-row"][0])         # 1.10 is within 1.15
        rows[0]["values"]["alloy"] = 5.8            # 1.16x the best peer
        res = self.verdicts(rows)
        self.assertFalse(res["time-row"][0])
        self.assertIn("sizes size_8 1.16x mimalloc3", res["time-row"][1])

        rows = self.meeting_rows()
        rows[2]["values"]["alloy"] = 106            # 1.06 and 1.0 against glibc: 1.03 > 1.0
        res = self.verdicts(rows)
        self.assertFalse(res["mem-geomean"][0])
        self.assertTrue(res["mem-row"][0])
        rows[3]["values"]["alloy"] = 11.3           # 1.26x the leanest (mimalloc3, 9)
        self.assertFalse(self.verdicts(rows)["mem-row"][0])

        rows = self.meeting_rows()
        rows[4]["values"]["alloy"] = 5001           # one fault more than glibc
        self.assertFalse(self.verdicts(rows)["faults"][0])
        rows[5]["values"]["alloy"] = 41             # 2.05x mimalloc3's
        res = self.verdicts(rows)
        self.assertFalse(res["ctx"][0])
        self.assertIn("2.05x", res["ctx"][1])

    def test_verdicts_not_measured(self):
        rows = self.meeting_rows()
        res = self.verdicts([r for r in rows if r["case"] != "T100_N50000_S16"])
        self.assertIsNone(res["ctx"][0])            # both 16 and 100 threads are needed
        self.assertIn("100", res["ctx"][1])
        no_mim = [dict(r, values={a: v for a, v in r["values"].items() if "mimalloc" not in a})
                  for r in rows]
        self.assertIsNone(self.verdicts(no_mim)["ctx"][0])
        no_glibc = [dict(r, values={a: v for a, v in r["values"].items() if a != "glibc"})
                    for r in rows]
        res = self.verdicts(no_glibc)
        self.assertIsNone(res["faults"][0])
        self.assertTrue(all(met is None for _, met, _ in bs.evaluate_verdicts(
            [self.vrow("time", "sizes", "size_8", "ns_per_op", glibc=10)])))

    def test_geomean(self):
        self.assertAlmostEqual(bs.geomean([2, 8]), 4.0)
        self.assertAlmostEqual(bs.geomean([3]), 3.0)
        for bad in ([], [1, 0], [2, -1]):
            with self.assertRaises(ValueError):
                bs.geomean(bad)
        self.assertAlmostEqual(bs.oriented_ratio(12, 10, "time_ms"), 1.2)
        self.assertAlmostEqual(bs.oriented_ratio(8, 10, "mops_per_s"), 1.25)
        self.assertIsNone(bs.oriented_ratio(8, None, "time_ms"))
        self.assertIsNone(bs.oriented_ratio(0, 10, "time_ms"))

    def test_targets_without_alloy(self):
        rows = [self.row("st", "ns_per_op", glibc=10)]
        self.assertTrue(all(met is None for _, met, _ in bs.evaluate_targets(rows)))

    def test_markdown(self):
        rows = [{"workload": "sizes", "case": "size_8", "metric": "ns_per_op", "group": "st",
                 "stats": {"glibc": (10, 9, 11, 3), "alloy": (12, 11, 13, 3)},
                 "values": {"glibc": 10, "alloy": 12}}]
        env = {"mode": "short", "date": "d", "cpu": "c", "ncpu": 2, "kernel": "k",
               "commit": "x", "loadavg": "0", "reps": 3, "missing": {"tcmalloc": "install"}}
        md = run.render_markdown(rows, ["glibc", "alloy"], "alloy", env, [], [], {})
        self.assertIn("10.0 (9.00–11.0)", md)
        self.assertIn("**1.20** ✗", md)
        self.assertIn("tcmalloc: MISSING", md)
        self.assertIn("missed", md)
        self.assertIn("### Targets: each workload against the best peer", md)
        self.assertIn("### Targets: the whole suite's geometric means and bounds", md)
        self.assertNotIn("issue", md)


class Processes(unittest.TestCase):
    def test_run_one_statuses(self):
        self.assertEqual(run.run_one(["true"], None, 10)[0], "ok")
        self.assertEqual(run.run_one(["sh", "-c", "exit 3"], None, 10)[0], "exit:3")
        self.assertEqual(run.run_one(["sh", "-c", "kill -SEGV $$"], None, 10)[0], "crash:SIGSEGV")
        st = run.run_one(["sh", "-c", "sleep 30 & sleep 30"], None, 0.5)
        self.assertEqual(st[0], "timeout")

    def cli(self, *args):
        return subprocess.run([PY, os.path.join(HERE, "run.py"), "--build-dir", BUILD_DIR] +
                              list(args), capture_output=True, text=True, timeout=120)

    def test_cli_bad_input(self):
        for args, needle in ((["--allocators", "glibc,nosuch"], "unknown allocator 'nosuch'"),
                             (["--workloads", "nosuch"], "unknown workload 'nosuch'"),
                             (["--reps", "0"], "must be at least 1"),
                             (["--reps", "three"], "not an integer"),
                             (["--timeout", "-5"], "must be positive"),
                             (["--mode", "huge"], "invalid choice"),
                             (["--bogus"], "unrecognized arguments")):
            r = self.cli(*args)
            self.assertEqual(r.returncode, 2, args)
            self.assertIn(needle, r.stderr, args)
            self.assertEqual(r.stdout, "", args)

    def test_cli_missing_build(self):
        r = subprocess.run([PY, os.path.join(HERE, "run.py"), "--build-dir", "/nonexistent"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2)
        self.assertIn("build first", r.stderr)

    def test_missing_allocator_reported(self):
        with tempfile.TemporaryDirectory() as out:
            r = self.cli("--mode", "smoke", "--workloads", "realloc", "--no-charts",
                         "--allocators", "glibc,ghost=/nonexistent/libghost.so", "--out", out)
            self.assertEqual(r.returncode, 0, r.stderr)      # reported, not fatal...
            self.assertIn("ghost MISSING", r.stderr)
            self.assertIn("ghost: MISSING", r.stdout)        # ...and in the table
            with open(os.path.join(out, "raw.csv")) as f:
                head = f.readline().strip()
                self.assertEqual(head, "workload,args,case,allocator,rep,status,metric,value")
            r = self.cli("--mode", "smoke", "--workloads", "realloc", "--no-charts", "--strict",
                         "--allocators", "glibc,ghost=/nonexistent/libghost.so", "--out", out)
            self.assertEqual(r.returncode, 1)                # --strict makes it an error

    def test_built_peer_found_through_the_script(self):
        # A stand-in build-peers.sh that offers liballoy.so as "mimalloc3"
        lib = os.path.abspath(os.path.join(BUILD_DIR, "liballoy.so"))
        with tempfile.TemporaryDirectory() as out:
            sc = os.path.join(out, "build-peers.sh")
            with open(sc, "w") as f:
                f.write("#!/bin/sh\necho mimalloc3 %s\n" % lib)
            env = dict(os.environ, **{run.PEERS_SCRIPT_ENV: sc})
            r = subprocess.run([PY, os.path.join(HERE, "run.py"), "--build-dir", BUILD_DIR,
                                "--mode", "smoke", "--workloads", "realloc", "--no-charts",
                                "--allocators", "glibc,mimalloc3", "--out", out, "--strict"],
                               capture_output=True, text=True, timeout=120, env=env)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertNotIn("MISSING", r.stdout)
            self.assertIn("| glibc | mimalloc3 |", r.stdout)
            with open(os.path.join(out, "commands.txt")) as f:
                self.assertIn("LD_PRELOAD=%s " % lib, f.read())

    def test_built_peer_missing_is_reported(self):
        with tempfile.TemporaryDirectory() as out:
            env = dict(os.environ, **{run.PEERS_SCRIPT_ENV: "/nonexistent/build-peers.sh"})
            args = [PY, os.path.join(HERE, "run.py"), "--build-dir", BUILD_DIR, "--mode",
                    "smoke", "--workloads", "realloc", "--no-charts", "--allocators",
                    "glibc,snmalloc", "--out", out]
            r = subprocess.run(args, capture_output=True, text=True, timeout=120, env=env)
            self.assertEqual(r.returncode, 0, r.stderr)      # reported, not fatal...
            self.assertIn("snmalloc MISSING: /nonexistent/build-peers.sh not found", r.stderr)
            self.assertIn("**snmalloc: MISSING** (/nonexistent/build-peers.sh not found", r.stdout)
            with open(os.path.join(out, "summary.md")) as f:  # ...in summary.md too
                self.assertIn("**snmalloc: MISSING**", f.read())
            r = subprocess.run(args + ["--strict"], capture_output=True, text=True, timeout=120,
                               env=env)
            self.assertEqual(r.returncode, 1)

    def test_summarize_again_and_alloy_builds(self):
        # A second build of alloy in the run is shown, never taken as a peer; --summarize rewrites the same summary.md from results.json.
        lib = os.path.abspath(os.path.join(BUILD_DIR, "liballoy.so"))
        with tempfile.TemporaryDirectory() as out:
            r = self.cli("--mode", "smoke", "--workloads", "realloc", "--no-charts",
                         "--allocators", "alloy,alloy-again=" + lib, "--out", out)
            self.assertEqual(r.returncode, 0, r.stderr)
            path = os.path.join(out, "summary.md")
            with open(path) as f:
                first = f.read()
            rows = [l for l in first.splitlines() if l.startswith("| realloc |")]
            self.assertTrue(rows)
            for row in rows:
                cells = [c.strip() for c in row.strip().strip("|").split("|")]
                self.assertEqual(cells[-2:], ["-", "-"], row)   # no peer, so no best peer
            os.remove(path)
            r = subprocess.run([PY, os.path.join(HERE, "run.py"), "--summarize", out, "--no-charts"],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(path) as f:
                self.assertEqual(f.read(), first)
            r = subprocess.run([PY, os.path.join(HERE, "run.py"), "--summarize", "/nonexistent"],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 2)
            self.assertIn("cannot read", r.stderr)

    def test_preload_that_does_not_take(self):
        # A real library that does not define malloc: the run must be flagged.
        lib = "/lib/x86_64-linux-gnu/libm.so.6"
        if not os.path.exists(lib):
            self.skipTest("no libm at " + lib)
        with tempfile.TemporaryDirectory() as out:
            r = self.cli("--mode", "smoke", "--workloads", "realloc", "--no-charts",
                         "--allocators", "glibc,fake=" + lib, "--out", out)
            self.assertEqual(r.returncode, 1)
            self.assertIn("NOT-PRELOADED", r.stdout)

    def faulty_run(self, mode, *extra):
        lib = os.path.join(BUILD_DIR, "bench", "libbench_faulty.so")
        if not os.path.exists(lib):
            self.fail("%s not built" % lib)
        env = dict(os.environ, BENCH_FAULTY=mode)
        with tempfile.TemporaryDirectory() as out:
            r = subprocess.run([PY, os.path.join(HERE, "run.py"), "--build-dir", BUILD_DIR,
                                "--mode", "smoke", "--workloads", "realloc,sizes", "--no-charts",
                                "--allocators", "bad=%s,glibc" % lib, "--out", out] + list(extra),
                               capture_output=True, text=True, timeout=120, env=env)
            with open(os.path.join(out, "raw.csv")) as f:
                rows = f.read().splitlines()
        return r, rows

    def test_crash_is_recorded_and_the_run_goes_on(self):
        r, rows = self.faulty_run("crash")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("crash:SIGSEGV", r.stdout)                   # in "Failed runs"
        self.assertTrue(any(",bad,0,crash:SIGSEGV," in x for x in rows), rows)
        # the allocator after the crashing one still ran, every workload
        self.assertTrue(any(x.startswith("realloc,") and ",glibc,0,ok,time_ms," in x for x in rows))
        self.assertTrue(any(x.startswith("sizes,") and ",glibc,0,ok,ns_per_op," in x for x in rows))

    def test_hang_is_recorded_as_timeout(self):
        r, rows = self.faulty_run("hang", "--timeout", "1")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertTrue(any(",bad,0,timeout," in x for x in rows), rows)
        self.assertTrue(any(",glibc,0,ok," in x for x in rows))
        self.assertIn("**TIMEOUT**", r.stdout)

    def test_workload_programs_reject_bad_arguments(self):
        cases = [("bench_sizes", ["-n", "abc"]), ("bench_sizes", ["-s", "8,,x"]),
                 ("bench_sizes", ["-n", "-5"]), ("bench_threads", ["-t", "0"]),
                 ("malloc_test", ["4", "100"]), ("malloc_test", ["4", "100", "16x"]),
                 ("bench_mixed", ["-m", "huge"]), ("bench_frag", ["-n", "99999999999999999999999"]),
                 ("bench_xthread", ["-q", "1000"]), ("bench_realloc", ["extra"]),
                 ("bench_sizes", ["-z"]), ("bench_mixed", ["-L", "100"]),
                 ("bench_frag", ["-m", "bogus"]), ("bench_frag", ["-m", "reuse", "-l", "1k"]),
                 ("bench_large", ["-m", "zero"]), ("bench_large", ["-l", "5M", "-u", "1M"]),
                 ("bench_large", ["-k", "0"]), ("bench_handoff", ["-p", "101"]),
                 ("bench_handoff", ["-t", "x"]), ("bench_idle", ["-f", "0"]),
                 ("bench_idle", ["-s", "0"]), ("bench_larson", ["-t", "0"]),
                 ("bench_larson", ["-l", "100", "-u", "10"]), ("bench_larson", ["-g", "2x"]),
                 ("bench_sparse", ["-l", "100", "-L", "10"]), ("bench_sparse", ["-w", "0"])]
        for prog, args in cases:
            r = subprocess.run([os.path.join(BUILD_DIR, prog)] + args, capture_output=True,
                               text=True, timeout=30)
            self.assertEqual(r.returncode, 2, (prog, args, r.stderr))
            self.assertIn(prog, r.stderr)
            self.assertNotIn("res ", r.stdout)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", default="build")
    a, rest = ap.parse_known_args()
    BUILD_DIR = a.build_dir
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=1)
