#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""check_internal_copies.py - in the secure flavour, alloy's own copies are
not the checked ones it exports.

    check_internal_copies.py LIBRARY CHECKED_C HOT_ARCHIVE [--expect-fail TEXT]

src/checked.c (CHECKED_C) exports memcpy, memset, read and their kin from
liballoy_secure.so, each checking its destination against the block of
alloy's heap that holds it.  alloy's own code must not call them: its copies
are its own business (calloc's zeroing, realloc's copy), and a call from a
lower layer to the front end's checked copies, which report through the
error module, which copies again, is a cycle through the layers.  Internal
copies go to the unchecked ones of src/unchecked.c (src/unchecked.h renames
them).

It disassembles LIBRARY (objdump -d) and reports every function that calls
one of the names checked.c exports (those marked CHECKED there), directly,
through the PLT or through its GOT slot (the library is built with
-fno-plt).  The hot-path allocators (src/hot, the functions that
HOT_ARCHIVE defines) are left out: they use whatever the process has, as a
program would.  Exit status 0, or 1 with one line per calling function.
With --expect-fail TEXT it inverts: it succeeds only if a problem line
contains TEXT (tests/hardening/CMakeLists.txt runs it on a library that
calls the checked memcpy, to show that it can fail).
"""
import re
import subprocess
import sys


def run(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def checked_names(path):
    with open(path, encoding='utf-8') as f:
        text = f.read()
    return set(re.findall(r'^CHECKED\b[^(]*?\b(\w+)\s*\(', text, re.M))


def hot_functions(archive):
    out = run('nm', '--defined-only', archive)
    return {line.split()[-1] for line in out.splitlines()
            if len(line.split()) == 3 and line.split()[1] in 'tTwW'}


def got_slots(library, names):
    """{GOT address: name} of the slots the dynamic relocations fill with
    the address of one of names."""
    slots = {}
    for line in run('objdump', '-R', library).splitlines():
        f = line.split()
        if len(f) == 3 and f[1] in ('R_X86_64_GLOB_DAT', 'R_X86_64_JUMP_SLOT'):
            name = f[2].split('@')[0]
            if name in names:
                slots[int(f[0], 16)] = name
    return slots


def main(argv):
    library, checked_c, hot = argv[1:4]
    expect = argv[5] if len(argv) > 5 and argv[4] == '--expect-fail' else None
    names = checked_names(checked_c)
    if not names:
        print(f'check_internal_copies: {checked_c} marks no function CHECKED')
        return 1
    skip = hot_functions(hot)
    slots = got_slots(library, names)
    calls = {}  # function -> set of names it calls
    fn = None
    direct = re.compile(r'\b(?:call|jmp)\s+[0-9a-f]+ <(\w+)(?:@plt)?>')
    via_got = re.compile(r'\b(?:call|jmp)\s+\*0x[0-9a-f]+\(%rip\)\s+# ([0-9a-f]+) ')
    for line in run('objdump', '-d', '--no-show-raw-insn', library).splitlines():
        m = re.match(r'^[0-9a-f]+ <([^>]+)>:$', line)
        if m:
            fn = m.group(1)
            continue
        m = direct.search(line)
        callee = m.group(1) if m and m.group(1) in names else None
        m = via_got.search(line)
        if m and int(m.group(1), 16) in slots:
            callee = slots[int(m.group(1), 16)]
        if callee and fn and fn.split('@')[0] not in skip and not fn.endswith('@plt') \
                and fn not in names:
            calls.setdefault(fn, set()).add(callee)
    problems = [f'{fn} calls {", ".join(sorted(c))}: the checked cop{"y" if len(c) == 1 else "ies"} '
                f'that src/checked.c exports' for fn, c in sorted(calls.items())]
    if expect is not None:
        hit = [p for p in problems if expect in p]
        if hit:
            print('expected failure seen:', hit[0])
            return 0
        print(f'check_internal_copies: expected a problem containing {expect!r}, got:',
              problems or 'none')
        return 1
    for p in problems:
        print('check_internal_copies:', p)
    if not problems:
        print(f'check_internal_copies: no function of {library} but the hot-path allocators '
              f'calls {", ".join(sorted(names))}')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
