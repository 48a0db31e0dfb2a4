#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""check_leaks.py ALLOY LIB PROG - alloy's leak report against Valgrind's.

Runs PROG (prof_leaks.c) under `valgrind --leak-check=full
--show-leak-kinds=all` without alloy, and under `ALLOY run --leaks --conf
prof_sample:1,leak_exit_code:23`.  From each report it takes, for every
leak, the first frame in PROG's own source (prof_leaks.c:LINE) and the
bytes and blocks, and checks that both found the same call sites with the
same bytes and blocks.  It also checks the exit status (23 with leaks, the
program's own 0 without: `PROG clean`), that the report is symbolised
(function names and file:line), and that leak_malloc's frame gives the
object+offset that `addr2line -f -e OBJECT OFFSET` turns into its name.  Exit status 0, or 1.
"""
import re
import subprocess
import sys

SRC = 'prof_leaks.c'


def valgrind_sites(prog):
    out = subprocess.run(['valgrind', '--leak-check=full', '--show-leak-kinds=all',
                          '--num-callers=30', prog], capture_output=True, text=True).stderr
    sites = {}
    for block in re.split(r'\n==\d+== \n', out):
        m = re.search(r'([\d,]+) bytes in ([\d,]+) blocks are', block)
        if not m:
            continue
        line = re.search(r'\((' + re.escape(SRC) + r':\d+)\)', block)
        if line:
            b, n = int(m.group(1).replace(',', '')), int(m.group(2).replace(',', ''))
            old = sites.get(line.group(1), (0, 0))
            sites[line.group(1)] = (old[0] + b, old[1] + n)
    return sites, out


def alloy_sites(alloy, prog, *args):
    run = subprocess.run([alloy, 'run', '--leaks', '--conf', 'prof_sample:1,leak_exit_code:23',
                          '--', prog, *args], capture_output=True, text=True)
    sites = {}
    for block in run.stderr.split('\n\n'):
        m = re.search(r'alloy: (\d+) bytes? in (\d+) objects? allocated from:', block)
        if not m:
            continue
        line = re.search(r' in \w+ \S*?(' + re.escape(SRC) + r':\d+)', block)
        if line:
            b, n = int(m.group(1)), int(m.group(2))
            old = sites.get(line.group(1), (0, 0))
            sites[line.group(1)] = (old[0] + b, old[1] + n)
    return sites, run


def main(alloy, prog):
    vg, vg_out = valgrind_sites(prog)
    ours, run = alloy_sites(alloy, prog)
    bad = 0
    print(f'check_leaks: valgrind: {sorted(vg.items())}')
    print(f'check_leaks: alloy:    {sorted(ours.items())}')
    if len(vg) < 4:
        print('check_leaks: valgrind found fewer than the 4 leaking sites:\n' + vg_out)
        bad += 1
    if vg != ours:
        print('check_leaks: the two reports differ\n' + run.stderr)
        bad += 1
    if run.returncode != 23:
        print(f'check_leaks: exit status {run.returncode} with leaks, expected 23')
        bad += 1
    for name in ('leak_malloc', 'leak_calloc', 'leak_strdup', 'leak_realloc'):
        if not re.search(r' in ' + name + r' \S*' + re.escape(SRC) + r':\d+', run.stderr):
            print(f'check_leaks: the report does not name {name} with its file:line')
            bad += 1
    # each frame also gives object+offset, which addr2line reads (PROG is PIE)
    m = re.search(r' in leak_malloc \S+ \((\S+)\+(0x[0-9a-f]+)\)\n', run.stderr)
    a2l = subprocess.run(['addr2line', '-f', '-e', m.group(1), m.group(2)], capture_output=True,
                         text=True).stdout.split('\n') if m else []
    if not a2l or a2l[0] != 'leak_malloc' or SRC not in a2l[1]:
        print(f'check_leaks: leak_malloc\'s frame has no object+offset that addr2line reads: {a2l}')
        bad += 1
    clean_sites, clean = alloy_sites(alloy, prog, 'clean')
    if clean.returncode != 0 or clean_sites or 'no sampled allocation is still live' not in clean.stderr:
        print(f'check_leaks: a clean run: status {clean.returncode}, report:\n{clean.stderr}')
        bad += 1
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1], sys.argv[3]))
