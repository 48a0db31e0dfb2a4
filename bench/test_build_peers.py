#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test_build_peers.py - tests of bench/build-peers.sh's search for the peers'
archives: ALLOY_PEERS_SRC first, then ../shared/peers beside the repository,
then a download kept in OUTDIR/downloads; every archive checked against
peers.sha256, a mismatch refused and named, a peer it cannot get named with
every reason, the others still had.  The script is copied into a made-up tree
(TMP/repo/bench/, with TMP/shared/peers beside it or not) with small fake
archives and a peers.sha256 of their own; ALLOY_PEERS_URL_BASE points the
download at a file:// folder or at 127.0.0.1:9, where nothing listens.  So
nothing is downloaded and the real peers are never built: the checks use
--fetch-only, and the one full run builds a fake rpmalloc (one C line) and
sees a fake mimalloc fail in cmake.

usage: test_build_peers.py
"""
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "build-peers.sh")
sys.path.insert(0, HERE)
import run  # noqa: E402

ARCHIVES = {"mimalloc3": "mimalloc-3.4.3", "snmalloc": "snmalloc-0.7.5", "rpmalloc": "rpmalloc-2.0.1"}
UNREACHABLE = "http://127.0.0.1:9"


def fake_archive(path, top, files):
    """A .tar.gz at PATH holding TOP/NAME for each NAME: TEXT in FILES."""
    with tarfile.open(path, "w:gz") as t:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo("%s/%s" % (top, name))
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class Tree:
    """TMP/repo/bench/{build-peers.sh,peers.sha256}, the fake archives in
    TMP/good, and TMP/src, TMP/shared/peers, TMP/out to fill."""

    def __init__(self, tmp):
        self.tmp = tmp
        self.bench = os.path.join(tmp, "repo", "bench")
        os.makedirs(self.bench)
        self.script = os.path.join(self.bench, "build-peers.sh")
        shutil.copy(SCRIPT, self.script)
        self.good = os.path.join(tmp, "good")
        os.makedirs(self.good)
        lines = ["# fake checksums for the test"]
        for name, top in ARCHIVES.items():
            files = {"README": "fake %s\n" % name}
            if name == "rpmalloc":         # small enough to build for real
                files["rpmalloc/rpmalloc.c"] = "int fake_rpmalloc;\n"
            p = self.archive(top)
            fake_archive(p, top, files)
            lines.append("%s  %s.tar.gz" % (sha256(p), top))
        with open(os.path.join(self.bench, "peers.sha256"), "w") as f:
            f.write("\n".join(lines) + "\n")
        self.src = os.path.join(tmp, "src")
        self.shared = os.path.join(tmp, "shared", "peers")
        self.out = os.path.join(tmp, "out")

    def archive(self, top):
        return os.path.join(self.good, top + ".tar.gz")

    def put(self, folder, *names, bad=False):
        """Copies the good archives of NAMES into FOLDER, or (bad) archives of
        the same name with other contents."""
        os.makedirs(folder, exist_ok=True)
        for n in names:
            top = ARCHIVES[n]
            dest = os.path.join(folder, top + ".tar.gz")
            if bad:
                fake_archive(dest, top, {"README": "not the archive peers.sha256 records\n"})
            else:
                shutil.copy(self.archive(top), dest)

    def run(self, *args, src=None, url=UNREACHABLE, hardened=False):
        env = {k: v for k, v in os.environ.items() if not k.startswith("ALLOY_PEERS")}
        env["ALLOY_PEERS_URL_BASE"] = url          # never GitHub
        env["ALLOY_PEERS_JOBS"] = "1"
        if hardened:
            env["ALLOY_PEERS_HARDENED"] = "1"
        if src is not None:
            env["ALLOY_PEERS_SRC"] = src
        return subprocess.run(["bash", self.script] + list(args), capture_output=True,
                              text=True, timeout=120, env=env)

    def fetch(self, **kw):
        """--fetch-only: (status, {name: (archive, origin)}, {name: why}, stderr)."""
        r = self.run("--fetch-only", self.out, **kw)
        got = {}
        for line in r.stdout.splitlines():
            m = re.fullmatch(r"(\S+) (\S+) from (\S+)", line)
            if m is None:
                raise AssertionError("build-peers.sh --fetch-only printed %r" % line)
            got[m.group(1)] = (m.group(2), m.group(3))
        return r.returncode, got, run.parse_missing_lines(r.stderr), r.stderr


class Sources(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.t = Tree(self._tmp.name)

    def tearDown(self):
        self._tmp.cleanup()

    def test_all_from_alloy_peers_src(self):
        t = self.t
        t.put(t.src, *ARCHIVES)
        rc, got, missing, err = t.fetch(src=t.src)
        self.assertEqual((rc, missing), (0, {}), err)
        for n, top in ARCHIVES.items():
            self.assertEqual(got[n], (os.path.join(t.src, top + ".tar.gz"), "ALLOY_PEERS_SRC"))

    def test_hardened_builds_only_when_asked(self):
        """ALLOY_PEERS_HARDENED=1: mimalloc3-secure and snmalloc-checks too,
        from mimalloc3's and snmalloc's archives; without it, neither."""
        t = self.t
        t.put(t.src, *ARCHIVES)
        rc, got, missing, err = t.fetch(src=t.src)
        self.assertEqual((rc, missing), (0, {}), err)
        self.assertEqual(sorted(got), sorted(ARCHIVES))
        rc, got, missing, err = t.fetch(src=t.src, hardened=True)
        self.assertEqual((rc, missing), (0, {}), err)
        self.assertEqual(sorted(got), sorted(list(ARCHIVES) + ["mimalloc3-secure", "snmalloc-checks"]))
        self.assertEqual(got["mimalloc3-secure"], got["mimalloc3"])
        self.assertEqual(got["snmalloc-checks"], got["snmalloc"])

    def test_order_src_then_shared(self):
        t = self.t
        t.put(t.src, "mimalloc3")
        t.put(t.shared, *ARCHIVES)
        rc, got, missing, err = t.fetch(src=t.src)
        self.assertEqual((rc, missing), (0, {}), err)
        self.assertEqual(got["mimalloc3"][1], "ALLOY_PEERS_SRC")
        self.assertEqual(got["snmalloc"], (os.path.join(t.shared, "snmalloc-0.7.5.tar.gz"),
                                           "../shared/peers"))
        rc, got, missing, err = t.fetch()             # ALLOY_PEERS_SRC unset
        self.assertEqual(rc, 0, err)
        self.assertEqual({o for _, o in got.values()}, {"../shared/peers"})

    def test_checksum_mismatch_is_refused_and_named(self):
        t = self.t
        t.put(t.src, "mimalloc3", bad=True)
        t.put(t.src, "snmalloc", "rpmalloc")
        rc, got, missing, err = t.fetch(src=t.src)
        self.assertEqual(rc, 1)
        self.assertEqual(sorted(got), ["rpmalloc", "snmalloc"])      # the others are still had
        bad = os.path.join(t.src, "mimalloc-3.4.3.tar.gz")
        self.assertIn("%s: checksum mismatch" % bad, missing["mimalloc3"])
        self.assertIn("no %s" % t.shared, missing["mimalloc3"])
        self.assertIn("download of %s/mimalloc-3.4.3.tar.gz failed" % UNREACHABLE,
                      missing["mimalloc3"])
        # a good archive further down the list is used, and the refused one still named
        t.put(t.shared, "mimalloc3")
        rc, got, missing, err = t.fetch(src=t.src)
        self.assertEqual((rc, missing), (0, {}), err)
        self.assertEqual(got["mimalloc3"][1], "../shared/peers")
        self.assertIn("mimalloc3: refused %s: checksum mismatch" % bad, err)

    def test_mismatch_in_shared_folder(self):
        t = self.t
        t.put(t.shared, *ARCHIVES, bad=True)
        rc, got, missing, err = t.fetch()
        self.assertEqual((rc, got), (1, {}))
        for n, top in ARCHIVES.items():
            self.assertIn("%s/%s.tar.gz: checksum mismatch" % (t.shared, top), missing[n])

    def test_missing_and_download_fails(self):
        t = self.t
        t.put(t.src, "mimalloc3", "rpmalloc")
        rc, got, missing, err = t.fetch(src=t.src)
        self.assertEqual(rc, 1)
        self.assertEqual(sorted(got), ["mimalloc3", "rpmalloc"])
        why = missing["snmalloc"]
        self.assertIn("no snmalloc-0.7.5.tar.gz in ALLOY_PEERS_SRC=%s (it must hold the archives "
                      "bench/peers.sha256 names, each with the sha256 recorded there)" % t.src, why)
        self.assertIn("no %s" % t.shared, why)
        m = re.search(r"download of %s/snmalloc-0.7.5.tar.gz failed: (.+)" % UNREACHABLE, why)
        self.assertTrue(m and m.group(1).strip(), why)           # with the tool's reason
        self.assertEqual(len([line for line in err.splitlines() if "MISSING" in line]), 1, err)
        self.assertEqual(os.listdir(os.path.join(t.out, "downloads")), [])   # nothing left over
        rc, got, missing, err = t.fetch()
        self.assertIn("ALLOY_PEERS_SRC not set (set it to a directory that holds "
                      "snmalloc-0.7.5.tar.gz, the archive bench/peers.sha256 names, with the "
                      "sha256 recorded there)", missing["snmalloc"])

    @unittest.skipUnless(shutil.which("curl"), "needs curl for file:// URLs")
    def test_download_checked_and_kept(self):
        t = self.t
        mirror = os.path.join(t.tmp, "mirror")
        t.put(mirror, *ARCHIVES)
        rc, got, missing, err = t.fetch(url="file://" + mirror)
        self.assertEqual((rc, missing), (0, {}), err)
        for n, top in ARCHIVES.items():
            self.assertEqual(got[n], (os.path.join(t.out, "downloads", top + ".tar.gz"), "download"))
        shutil.rmtree(mirror)
        rc, got, missing, err = t.fetch()                # kept: no second download
        self.assertEqual((rc, missing), (0, {}), err)
        self.assertEqual({o for _, o in got.values()}, {"earlier-download"})
        shutil.rmtree(os.path.join(t.out, "downloads"))
        t.put(mirror, *ARCHIVES, bad=True)               # a download that does not match
        rc, got, missing, err = t.fetch(url="file://" + mirror)
        self.assertEqual((rc, got), (1, {}))
        for n, top in ARCHIVES.items():
            self.assertIn("download of file://%s/%s.tar.gz: checksum mismatch" % (mirror, top),
                          missing[n])
        self.assertEqual(os.listdir(os.path.join(t.out, "downloads")), [])

    def test_no_checksum_recorded(self):
        t = self.t
        sums = os.path.join(t.bench, "peers.sha256")
        with open(sums) as f:
            kept = [line for line in f if "rpmalloc" not in line]
        with open(sums, "w") as f:
            f.writelines(kept)
        t.put(t.src, *ARCHIVES)
        rc, got, missing, err = t.fetch(src=t.src)
        self.assertEqual(rc, 1)
        self.assertIn("records no sha256 for rpmalloc-2.0.1.tar.gz", missing["rpmalloc"])
        os.remove(sums)
        rc, got, missing, err = t.fetch(src=t.src)
        self.assertEqual(got, {})
        self.assertIn("no checksum file", missing["mimalloc3"])

    def test_built_once_then_only_paths(self):
        t = self.t
        libs = {"mimalloc3": "mimalloc-3.4.3/build/libmimalloc.so.3",
                "snmalloc": "snmalloc-0.7.5/build/libsnmallocshim.so",
                "rpmalloc": "rpmalloc-2.0.1/librpmalloc.so"}
        for rel in libs.values():
            os.makedirs(os.path.dirname(os.path.join(t.out, rel)), exist_ok=True)
            open(os.path.join(t.out, rel), "w").close()
        r = t.run(t.out)                                 # no archive anywhere: none needed
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        self.assertEqual(r.stdout.splitlines(),
                         ["%s %s" % (n, os.path.join(t.out, rel)) for n, rel in libs.items()])

    @unittest.skipUnless(shutil.which("cmake") and shutil.which("gcc"), "needs cmake and gcc")
    def test_full_run_builds_what_it_can(self):
        t = self.t
        t.put(t.src, "mimalloc3", "rpmalloc")
        t.put(t.src, "snmalloc", bad=True)
        saved = dict(os.environ)                 # the runner passes its environment on
        try:
            os.environ.update(ALLOY_PEERS_SRC=t.src, ALLOY_PEERS_URL_BASE=UNREACHABLE,
                              ALLOY_PEERS_JOBS="1")
            found, missing = run.resolve_built_peers(list(ARCHIVES), t.script, t.out)
        finally:
            os.environ.clear()
            os.environ.update(saved)
        self.assertEqual(found, {"rpmalloc": os.path.join(t.out, "rpmalloc-2.0.1", "librpmalloc.so")})
        self.assertIn("checksum mismatch", missing["snmalloc"])
        self.assertRegex(missing["mimalloc3"],            # the fake has no CMakeLists.txt
                         r"^build failed \(%s\): .*CMakeLists.txt" % re.escape(
                             os.path.join(t.out, "mimalloc3.log")))
        r = t.run(t.out, src=t.src)                       # again: the build is not redone
        self.assertEqual(r.returncode, 1)
        self.assertIn("rpmalloc %s" % found["rpmalloc"], r.stdout)
        self.assertNotIn("building rpmalloc", r.stderr)

    def test_bad_arguments(self):
        self.assertEqual(self.t.run("--what").returncode, 2)
        self.assertEqual(self.t.run("a", "b").returncode, 2)


class RepoChecksums(unittest.TestCase):
    def test_every_archive_has_a_sha256(self):
        with open(os.path.join(HERE, "peers.sha256")) as f:
            lines = [line.split() for line in f if line.strip() and not line.startswith("#")]
        self.assertEqual(sorted(name for _, name in lines),
                         sorted(top + ".tar.gz" for top in ARCHIVES.values()))
        for digest, _ in lines:
            self.assertRegex(digest, r"^[0-9a-f]{64}$")


if __name__ == "__main__":
    unittest.main()
