#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""check_refs.py - every reference to a document, a section of one or a
source file, in the code and the docs, names something that exists.

    check_refs.py ROOT [--pending FILE] [--expect-fail TEXT]

It reads the files under src/, tests/, tools/, bench/ and sim/ (C, C++,
Python, shell, CMake; fixtures/ directories left out), README.md and the
Markdown files of docs/ (the benchmark and simulator results under
docs/bench-results and docs/sim-results left out: they are output).  A
comment that wraps is read as one line: the line breaks, and the `*`, `#`
or `//` that starts each continued line, count as one space.

A reference is:
  - a document: `NAME.md` in capitals, or a path under docs/, maybe after
    `docs/` or `../`.  It must exist beside the file that names it, at the
    root or in docs/.
  - an anchor: `NAME.md#anchor`, or `(#anchor)` in a Markdown link: the
    document must have a heading whose GitHub anchor that is (lower case,
    punctuation dropped, spaces as dashes, -1, -2 for repeats).
  - a section: `NAME.md, "Section"`, `NAME.md ("Section")`, `NAME.md
    "Section"`, or `README, "Section"` (the README at the root); more
    quoted names after the first (`README, "Hardening", "Costs"`) are
    sections too.  Each must be a heading of the document (case and
    backquotes aside; the name may stop before the heading's end at a
    comma, a colon, a dash or a parenthesis: "Process set-up" names
    "Process set-up, TLS and dlopen").
  - a source file: `src/X.c` or `src/X.h` in a comment of any C, C++,
    Python, shell or CMake file read, or a bare `X.c`/`X.h` in a comment of
    a C file of src/: it must exist (src/X in the first case, a file of
    that name under src/, tests/, tools/, bench/, sim/ or include/ in the
    other).

--pending FILE names problems known and being fixed elsewhere, one a line
("src/x.h: README, \"Old\"": a problem of that file containing that text);
they are printed but do not fail the check, and an entry that no longer
matches a problem fails it, so that the list only shrinks.  This script's
own text is not read (its examples name no real document).
Exit status 0, or 1 with one line per reference that does not resolve
(file:line: what it names, and why).  With --expect-fail TEXT it inverts:
it succeeds only when the check fails with a problem line containing TEXT
(the test refs-fixture, on tests/code/fixtures/refs, shows it can fail).
"""
import os
import re
import sys

TREES = ('src', 'tests', 'tools', 'bench', 'sim')
CODE_EXTS = ('.c', '.h', '.cpp', '.hpp', '.py', '.sh', '.cmake', '.in', '.txt')
SKIP_DIRS = ('fixtures', '__pycache__')
SKIP_DOC_DIRS = ('bench-results', 'sim-results')

DOC = r'(?:(?:\.\./)*(?:docs/[\w./-]*?[\w-]+|[A-Z][A-Z0-9_-]*)\.md)'
# a document named, maybe with an anchor; not part of a longer path or a
# shell variable ($stage/.../DEPLOYING.md is a file installed, not a doc)
DOC_REF = re.compile(r'(?<![\w/$.{}-])(' + DOC + r')(?:#([\w-]+))?')
QUOTED = r'"([A-Za-z0-9`][^"]*)"'
# sections after a document: NAME.md, "S" / NAME.md ("S") / NAME.md "S";
# README, "S" / README ("S"); then , "T" ...
SECTION_REF = re.compile(r'(?<![\w/$.{}-])(' + DOC + r'|README)(?:,\s*|\s*\(\s*|\s+)' + QUOTED +
                         r'((?:\s*,\s*' + QUOTED + r')*)')
LOCAL_ANCHOR = re.compile(r'\]\(#([\w-]+)\)')
SOURCE_REF = re.compile(r'(?<![\w/.$-])((?:src/)?(?:[\w-]+/)*[\w-]+\.[ch])\b(?![\w.(-])')


def read(path):
    with open(path, encoding='utf-8', errors='replace') as f:
        return f.read()


def joined(text):
    """The text as one line per paragraph of comment: each line break, with
    the next line's indentation and comment leader, becomes one space.
    Returns (text, starts) where starts[i] is the offset of line i+1."""
    out, starts, pos = [], [], 0
    for line in text.split('\n'):
        starts.append(pos)
        m = re.match(r'\s*(?:\*(?!/)|//+|#+(?=\s)|(?=\S))', line) if pos else None
        body = line[m.end():] if m else line
        piece = (' ' if pos else '') + body
        out.append(piece)
        pos += len(piece)
    return ''.join(out), starts


def line_of(starts, offset):
    lo, hi = 0, len(starts)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if starts[mid] <= offset:
            lo = mid
        else:
            hi = mid
    return lo + 1


def slug(heading):
    s = heading.strip().lower()
    s = re.sub(r'[^\w\- ]', '', s)
    return s.replace(' ', '-')


def norm(heading):
    return re.sub(r'\s+', ' ', heading.replace('`', '').replace('*', '')).strip().lower()


class Docs:
    def __init__(self, root):
        self.root, self.cache = root, {}

    def resolve(self, name, here):
        """The path of document name, named from directory here, or None."""
        if name == 'README':
            name = 'README.md'
        for base in (here, self.root, os.path.join(self.root, 'docs')):
            path = os.path.normpath(os.path.join(base, name))
            if os.path.isfile(path):
                return path
        return None

    def headings(self, path):
        """(anchors, names) of a Markdown file's headings."""
        if path not in self.cache:
            anchors, names, seen, fence = set(), [], {}, False
            for line in read(path).splitlines():
                if line.lstrip().startswith(('```', '~~~')):
                    fence = not fence
                    continue
                m = None if fence else re.match(r'#{1,6}\s+(.*?)\s*#*\s*$', line)
                if not m:
                    continue
                s = slug(m.group(1))
                n = seen.get(s, 0)
                seen[s] = n + 1
                anchors.add(s if n == 0 else f'{s}-{n}')
                names.append(norm(m.group(1)))
            self.cache[path] = (anchors, names)
        return self.cache[path]

    def has_section(self, path, section):
        want = norm(section).rstrip('.,;:')
        for h in self.headings(path)[1]:
            if h == want:
                return True
            if h.startswith(want) and h[len(want):len(want) + 2] in (' (', ': ', ', ', ' -'):
                return True
        return False


def files_to_read(root):
    for top in TREES:
        for dirpath, dirs, names in os.walk(os.path.join(root, top)):
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
            for n in sorted(names):
                if n.endswith(CODE_EXTS) and (n == 'CMakeLists.txt' or not n.endswith('.txt')):
                    yield os.path.join(dirpath, n)
    if os.path.isfile(os.path.join(root, 'README.md')):
        yield os.path.join(root, 'README.md')
    for dirpath, dirs, names in os.walk(os.path.join(root, 'docs')):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DOC_DIRS)
        for n in sorted(names):
            if n.endswith('.md'):
                yield os.path.join(dirpath, n)


def source_names(root):
    names = set()
    for top in TREES + ('include',):
        for dirpath, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
            names.update(f for f in files if f.endswith(('.c', '.h')))
    return names


COMMENT = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"', re.S)
HASH_COMMENT = re.compile(r'(?:^|(?<=\s))#(?![!{])[^\n]*', re.M)


def source_refs(text, c_like=True):
    """The matches of SOURCE_REF inside the comments of C text (or of a
    script's # comments)."""
    for c in (COMMENT if c_like else HASH_COMMENT).finditer(text):
        if c.group(0).startswith('"'):
            continue
        for m in SOURCE_REF.finditer(text, c.start(), c.end()):
            yield m


def check_file(root, path, docs, sources, problems):
    rel = os.path.relpath(path, root)
    here = os.path.dirname(path)
    text, starts = joined(read(path))

    def problem(offset, what):
        problems.append(f'{rel}:{line_of(starts, offset)}: {what}')

    count = 0
    for m in DOC_REF.finditer(text):
        count += 1
        name, anchor = m.group(1), m.group(2)
        target = docs.resolve(name, here)
        if target is None:
            problem(m.start(), f'{name}: no such document')
        elif anchor and anchor not in docs.headings(target)[0]:
            problem(m.start(), f'{name}#{anchor}: {name} has no heading with that anchor')
    for m in SECTION_REF.finditer(text):
        name = m.group(1)
        target = docs.resolve(name, here)
        if target is None:
            continue  # reported above (README alone is always there or reported below)
        sections = [m.group(2)] + re.findall(QUOTED, m.group(3) or '')
        for s in sections:
            count += 1
            s = re.sub(r'\s+', ' ', s)
            if not docs.has_section(target, s):
                problem(m.start(), f'{name}, "{s}": {name} has no such section')
    if path.endswith('.md'):
        anchors = docs.headings(path)[0]
        for m in LOCAL_ANCHOR.finditer(text):
            count += 1
            if m.group(1) not in anchors:
                problem(m.start(), f'#{m.group(1)}: {rel} has no heading with that anchor')
    if not path.endswith('.md'):
        # (the raw text: a joined line would lose where a # comment ends)
        raw = read(path)
        raw_starts = [0] + [i + 1 for i, ch in enumerate(raw) if ch == '\n']
        for m in source_refs(raw, path.endswith(('.c', '.h', '.cpp', '.hpp'))):
            if m.group(1).startswith('src/'):
                count += 1
                if not os.path.isfile(os.path.join(root, m.group(1))):
                    problems.append(f'{rel}:{line_of(raw_starts, m.start())}: {m.group(1)}: '
                                    f'no such source file')
    if rel.startswith('src' + os.sep) and path.endswith(('.c', '.h')):
        for m in source_refs(text):
            name = m.group(1)
            count += 1
            if name.startswith('src/') or '/' in name and name.split('/')[0] not in TREES + ('include',):
                continue  # checked above, or a system header (linux/mman.h)
            if '/' in name:
                ok = os.path.isfile(os.path.join(root, name))
            else:
                ok = name in sources
            if not ok:
                problem(m.start(), f'{name}: no such source file')
    return count


def apply_pending(path, problems):
    """problems without those the file at path lists, plus one for each of
    its entries that matches none."""
    out, used = [], set()
    entries = [l.strip() for l in read(path).splitlines() if l.strip() and not l.startswith('#')]
    for p in problems:
        hit = [e for e in entries if p.startswith(e.split(': ', 1)[0] + ':') and e.split(': ', 1)[1] in p]
        if hit:
            used.update(hit)
            print('check_refs: pending:', p)
        else:
            out.append(p)
    for e in entries:
        if e not in used:
            out.append(f'{os.path.basename(path)}: {e!r} matches no problem any more: remove it')
    return out


def main(argv):
    root, args = argv[1], argv[2:]
    opts = dict(zip(args[::2], args[1::2]))
    expect = opts.get('--expect-fail')
    docs, sources, problems = Docs(root), source_names(root), []
    count = nfiles = 0
    for path in files_to_read(root):
        if os.path.abspath(path) == os.path.abspath(__file__):
            continue
        nfiles += 1
        count += check_file(root, path, docs, sources, problems)
    if '--pending' in opts:
        problems = apply_pending(opts['--pending'], problems)
    if expect is not None:
        hit = [p for p in problems if expect in p]
        if hit:
            print('expected failure seen:', hit[0])
            return 0
        print(f'check_refs: expected a problem containing {expect!r}, got:', problems or 'none')
        return 1
    for p in problems:
        print('check_refs:', p)
    if not problems:
        print(f'check_refs: {count} references in {nfiles} files, all resolve')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
