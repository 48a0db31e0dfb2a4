#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""check_pprof.py ALLOY PROG DIR - heap profiles through google-pprof.

Runs PROG (prof_sites.c: allocation sites of known sizes, built without
frame pointers) under `ALLOY run --prof` with prof_sample:65536, then reads
the final profile with `google-pprof --text --show_bytes PROG FILE` and
checks that each site's function holds its live bytes (flat) within the
sampling error: 4.5 standard deviations of the estimate, which for N
allocations of S bytes sampled with p = 1 - exp(-S/R) is sqrt(N S^2 (1-p)/p).
It then checks that `alloy prof` gives the same attribution, that
`alloy prof --folded` has a line per site ending in the site, and that the
freed site holds nothing.  Exit status 0, or 1 with what was wrong.
"""
import glob
import math
import os
import re
import subprocess
import sys

R = 65536


def main(alloy, prog, out):
    os.makedirs(out, exist_ok=True)
    for f in glob.glob(os.path.join(out, 'sites.*.heap')):
        os.remove(f)
    run = subprocess.run([alloy, 'run', '--prof', '--conf',
                          f'prof_sample:{R},prof_prefix:{out}/sites', '--', prog],
                         capture_output=True, text=True, check=True)
    sites = {}
    for line in run.stdout.splitlines():
        name, live, count, size = line.split()
        sites[name] = (int(live), int(count), int(size))
    files = glob.glob(os.path.join(out, 'sites.*.f.heap'))
    if len(files) != 1:
        print(f'check_pprof: expected one final profile in {out}, found {files}')
        return 1
    pprof = subprocess.run(['google-pprof', '--text', '--show_bytes', prog, files[0]],
                           capture_output=True, text=True, check=True).stdout
    flat = {}
    for line in pprof.splitlines():
        m = re.match(r'\s*(\d+)\s+[\d.]+%\s+[\d.]+%\s+(\d+)\s+[\d.]+%\s+(\S+)', line)
        if m:
            flat[m.group(3)] = int(m.group(1))
    ours = subprocess.run([alloy, 'prof', '--top', '50', files[0]], capture_output=True,
                          text=True, check=True).stdout
    folded = subprocess.run([alloy, 'prof', '--folded', files[0]], capture_output=True,
                            text=True, check=True).stdout
    bad = 0
    for name, (live, count, size) in sites.items():
        p = 1 - math.exp(-size / R)
        sd = math.sqrt(count * size * size * (1 - p) / p) if count else 0
        got = flat.get(name, 0)
        ok = abs(got - live) <= 4.5 * sd + 1
        print(f'check_pprof: {name}: {got} bytes in google-pprof, {live} allocated live, '
              f'sd {sd:.0f}: {"ok" if ok else "WRONG"}')
        bad += not ok
        row = [l for l in ours.splitlines() if re.search(r'\s' + name + r' \(', l)]
        if live and not row:
            print(f'check_pprof: alloy prof has no row for {name}:\n{ours}')
            bad += 1
        if live and not any(l.split(' ')[0].endswith(';' + name) for l in folded.splitlines()):
            print(f'check_pprof: alloy prof --folded has no stack ending in {name}')
            bad += 1
        if live and not re.search(r'prof_sites\.c:\d+', row[0] if row else ''):
            print(f'check_pprof: alloy prof gives no file:line for {name}: {row}')
            bad += 1
    if any(not l.split(' ')[0].startswith('_start;') for l in folded.splitlines() if l.strip()):
        print('check_pprof: a folded stack does not start at _start (a broken unwind?):\n' + folded)
        bad += 1
    if bad:
        print(pprof)
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main(*sys.argv[1:4]))
