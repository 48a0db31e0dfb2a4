#!/usr/bin/python3
"""test_runner.py - tests of the benchmark runner: its statistics (median,
nearest-rank percentiles), the parsing of workload output, the ratio table and
target evaluation on synthetic data, the handling of crashing and hanging
runs, and bad input (unknown allocator or workload, malformed arguments) both
in run.py and in the workload programs.  Asserts no timing.

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
        for bad in ("glibc,nosuch", "glibc,,alloy", "glibc,glibc", "=x.so", "x="):
            with self.assertRaises(run.UsageError, msg=bad):
                run.parse_allocators(bad, "bd")

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
                 ("bench_sizes", ["-z"])]
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
