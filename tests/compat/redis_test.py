#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""redis_test.py LIBALLOY - Debian's redis-server under alloy (issue 24's
acceptance test).

redis-server is built against jemalloc: besides malloc it calls mallctl,
nallocx and malloc_stats_print, and reads the allocator's figures into
INFO memory, MEMORY DOCTOR and MEMORY PURGE.  With liballoy.so preloaded,
alloy must answer all of them.  The test starts its own server on a unix
socket in a temporary directory (no TCP port), and checks:

  1. with 1,000,000 keys (DEBUG POPULATE): INFO memory's allocator_allocated,
     allocator_active and allocator_resident are within 5% of alloy's own
     report read right after (MEMORY MALLOC-STATS, which is alloy's report),
     and allocator_allocated is not below 90% of Redis's used_memory (the
     bug: jemalloc, which allocated nothing, said 28 KB);
  2. MEMORY DOCTOR finds nothing wrong with the allocator of that healthy
     instance, and alloy's resident figure is the process's anonymous RSS;
  3. MEMORY PURGE gives memory back: after a mass DEL of 300,000 keys, the
     server's RSS falls by at least 10 MiB when it purges.  The test first
     sets decay to "never" through Redis's own DEBUG MALLCTL (jemalloc's
     arenas.dirty_decay_ms, alloy's decay_ms), so that only the purge can
     give the pages back.  A synchronous FLUSHALL purges too (Redis asks
     for arena.<narenas>.purge after it): 10 MiB at least, again;
  4. the server shuts down cleanly.

mem_allocator is printed as Redis reports it: a string compiled into
redis-server ("jemalloc-5.3.0"), not asked of the library.

Exit 0 when every check passes, 1 otherwise, 77 (skipped) when
redis-server or redis-cli is not installed (tools/install-deps.sh installs
them).
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SKIP = 77
UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


class Redis:
    def __init__(self, lib, workdir):
        self.sock = os.path.join(workdir, "redis.sock")
        self.log = os.path.join(workdir, "redis.log")
        env = dict(os.environ, LD_PRELOAD=lib)
        env.pop("ALLOY_CONF", None)
        self.proc = subprocess.Popen(
            ["redis-server", "--port", "0", "--unixsocket", self.sock, "--unixsocketperm", "700",
             "--save", "", "--appendonly", "no", "--enable-debug-command", "yes",
             "--jemalloc-bg-thread", "no", "--dir", workdir, "--logfile", self.log],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for _ in range(200):
            if os.path.exists(self.sock) and self.cli("PING").strip() == "PONG":
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError("redis-server did not answer PING: %s" % self.tail_log())

    def cli(self, *args, timeout=60):
        r = subprocess.run(["redis-cli", "-s", self.sock] + list(args), capture_output=True,
                           text=True, timeout=timeout)
        return r.stdout

    def info_memory(self):
        out = {}
        for line in self.cli("INFO", "memory").splitlines():
            k, sep, v = line.strip().partition(":")
            if sep:
                out[k] = v
        return out

    def proc_bytes(self, name, key):
        """The figure in kB on the line `key:` of /proc/PID/name, in bytes (0: none)."""
        with open("/proc/%d/%s" % (self.proc.pid, name)) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
        return 0

    def rss(self):
        return self.proc_bytes("status", "VmRSS")

    def anon(self):
        """The process's resident anonymous memory, bytes."""
        return self.proc_bytes("smaps_rollup", "Anonymous")

    def maps_has(self, what):
        with open("/proc/%d/maps" % self.proc.pid) as f:
            return what in f.read()

    def tail_log(self):
        try:
            with open(self.log) as f:
                return " | ".join(f.read().splitlines()[-5:])
        except OSError:
            return "(no log)"

    def stop(self):
        if self.proc.poll() is None:
            self.cli("SHUTDOWN", "NOSAVE")
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.send_signal(signal.SIGKILL)
                self.proc.wait()
        return self.proc.returncode


def report_figures(text):
    """allocated, active, resident from alloy's report (MEMORY MALLOC-STATS)."""
    out = {}
    for name in ("allocated", "active", "resident"):
        m = re.search(r"^\s*%s:\s+([\d.]+)([KMGT]?)\s*$" % name, text, re.M)
        if m:
            out[name] = float(m.group(1)) * UNITS[m.group(2)]
    return out


def main(argv):
    lib = os.path.abspath(argv[1])
    for tool in ("redis-server", "redis-cli"):
        if not shutil.which(tool):
            print("SKIPPED: %s is not installed (tools/install-deps.sh installs redis-server)" % tool)
            return SKIP
    problems = []

    def check(ok, what):
        print("%s: %s" % ("ok" if ok else "FAIL", what))
        if not ok:
            problems.append(what)

    work = tempfile.mkdtemp(prefix="alloy-redis-")
    server = None
    try:
        server = Redis(lib, work)
        check(server.maps_has("liballoy"), "liballoy.so is mapped into redis-server")

        # 1. INFO memory is alloy's
        server.cli("DEBUG", "POPULATE", "1000000")
        info = server.info_memory()
        stats = server.cli("MEMORY", "MALLOC-STATS")
        print("mem_allocator: %s (compiled into redis-server, whatever allocator runs)"
              % info.get("mem_allocator"))
        check(stats.startswith("___ alloy"), "MEMORY MALLOC-STATS is alloy's report")
        fig = report_figures(stats)
        for name in ("allocated", "active", "resident"):
            got = int(info.get("allocator_" + name, "0"))
            want = fig.get(name, 0)
            close = want > 0 and abs(got - want) <= 0.05 * want
            check(close, "INFO allocator_%s %d within 5%% of alloy's %s %.0f" % (name, got, name, want))
        used = int(info.get("used_memory", "0"))
        allocated = int(info.get("allocator_allocated", "0"))
        check(allocated >= 0.9 * used > 0,
              "allocator_allocated %d covers used_memory %d" % (allocated, used))

        # 2. a healthy instance is found healthy.  Redis's doctor also
        # warns when the process holds more than 10 MiB beyond what the
        # allocator reports (its libraries: about 10 MiB here, libcrypto
        # and the binary among them), which is not the allocator's to
        # answer; what is, is that alloy's resident figure is the
        # process's anonymous memory (within 5%), and the doctor's
        # allocator findings (fragmentation, RSS overhead).
        doctor = server.cli("MEMORY", "DOCTOR")
        findings = [l.strip() for l in doctor.splitlines() if l.strip().startswith("*")]
        allocator_findings = [l for l in findings if "high allocator" in l.lower()]
        check("can't find any memory issue" in doctor or (findings and not allocator_findings),
              "MEMORY DOCTOR finds no allocator issue (%s)" % "; ".join(findings)[:400])
        resident, anon = int(server.info_memory().get("allocator_resident", "0")), server.anon()
        check(abs(resident - anon) <= 0.05 * anon,
              "allocator_resident %d within 5%% of the process's anonymous RSS %d" % (resident, anon))

        # 3. MEMORY PURGE gives the pages of freed memory back
        check(server.cli("DEBUG", "MALLCTL", "arenas.dirty_decay_ms", "-1").strip() == "1000",
              "DEBUG MALLCTL arenas.dirty_decay_ms -1 (was 1000 ms)")
        server.cli("FLUSHALL")  # (Redis purges after a FLUSHALL: arena.<narenas>.purge)
        server.cli("DEBUG", "POPULATE", "300000", "purge")
        held = server.rss()
        deleted = server.cli("EVAL", "local n = 0 for i = 0, 299999 do "
                             "n = n + redis.call('DEL', 'purge:' .. i) end return n", "0")
        check(deleted.strip() == "300000", "a mass DEL of the 300,000 keys (%s)" % deleted.strip())
        before = server.rss()
        check(server.cli("MEMORY", "PURGE").strip() == "OK", "MEMORY PURGE answers OK")
        after = server.rss()
        print("RSS: %.1f MiB with 300,000 keys, %.1f MiB after DEL, %.1f MiB after MEMORY PURGE"
              % (held / 2**20, before / 2**20, after / 2**20))
        check(after + (10 << 20) <= before, "MEMORY PURGE gave at least 10 MiB back")
        server.cli("DEBUG", "POPULATE", "300000", "flush")
        held = server.rss()
        server.cli("FLUSHALL")
        after = server.rss()
        print("RSS: %.1f MiB with 300,000 keys, %.1f MiB after FLUSHALL" % (held / 2**20, after / 2**20))
        check(after + (10 << 20) <= held, "FLUSHALL (Redis purges after it) gave at least 10 MiB back")
        server.cli("DEBUG", "MALLCTL", "arenas.dirty_decay_ms", "1000")

        # 4. a clean shutdown
        status = server.stop()
        check(status == 0, "redis-server exited with status %s" % status)
    except (RuntimeError, subprocess.TimeoutExpired, OSError) as e:
        problems.append(str(e))
        print("FAIL:", e)
    finally:
        if server:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)
    print("redis_test: %s" % ("all checks passed" if not problems else "%d failed" % len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
