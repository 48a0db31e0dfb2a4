#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""check_spdx.py - every source file of the tree says its licence in its
first lines, and the tree has its LICENSE.

    check_spdx.py ROOT [--expect-fail TEXT]

A source file is C or C++ (.c .h .cpp .hpp), Python, shell, CMake
(CMakeLists.txt, .cmake), a template (.in: manual pages, pkg-config, CMake
and Debian control files) or .ci/run.  Its SPDX line, `SPDX-License-Identifier:
MIT`, must be on line 1, or on line 2 after a `#!` line.  Build directories
(build*, out) and .git are not read.  Exit status 0, or 1 with one line per
file that lacks it.  With --expect-fail TEXT it inverts: it succeeds only
when the check fails with a problem line containing TEXT (the test
spdx-fixture, on a tree made to lack the line, shows it can fail).
"""
import os
import sys

EXTS = ('.c', '.h', '.cpp', '.hpp', '.py', '.sh', '.cmake', '.in')
NAMES = ('CMakeLists.txt',)
TAG = 'SPDX-License-Identifier: MIT'


def is_source(rel):
    name = os.path.basename(rel)
    return name.endswith(EXTS) or name in NAMES or rel == os.path.join('.ci', 'run')


def head_ok(path):
    with open(path, encoding='utf-8', errors='replace') as f:
        lines = [f.readline() for _ in range(2)]
    if lines[0].startswith('#!'):
        return TAG in lines[1]
    return TAG in lines[0]


def main(root, expect=None):
    problems = []
    if not os.path.isfile(os.path.join(root, 'LICENSE')):
        problems.append('LICENSE: missing')
    count = 0
    for dirpath, dirs, names in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        dirs[:] = [d for d in dirs if not (rel_dir == '.' and (d.startswith('build') or d in ('out', '.git')))]
        for n in names:
            rel = os.path.normpath(os.path.join(rel_dir, n))
            if not is_source(rel):
                continue
            count += 1
            if not head_ok(os.path.join(root, rel)):
                problems.append(f'{rel}: no "{TAG}" line at its top')
    if expect is not None:
        hit = [p for p in problems if expect in p]
        print('expected failure seen:' if hit else 'check_spdx: expected a problem with %r, got:' % expect,
              hit[0] if hit else problems or 'none')
        return 0 if hit else 1
    for p in problems:
        print('check_spdx:', p)
    if not problems:
        print(f'check_spdx: {count} source files, each with its SPDX line')
    return 1 if problems else 0


if __name__ == '__main__':
    args = sys.argv[1:]
    expect = args[2] if len(args) > 2 and args[1] == '--expect-fail' else None
    sys.exit(main(args[0] if args else '.', expect))
