#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""check_layers.py - the #include graph of src/ against the layer order that
docs/ARCHITECTURE.md writes down.

    check_layers.py ROOT [--expect-fail TEXT]

ROOT holds docs/ARCHITECTURE.md and src/.  The doc's table under "## Layers"
has a layer number in its first column and the layer's modules, in
backquotes, in its third ("modules") column; a module is a file of src/
without its extension (src/pageheap.{h,c} is `pageheap`, src/hot/pool.c is
`hot/pool`; `hot/*` names every module of src/hot).

It fails when:
  - a module of src/ is in no layer, or the table names a module that does
    not exist;
  - a file includes a module of a higher layer (an edge against the order);
  - the include graph of the modules has a cycle (also within a layer);
  - a header declares a function that is defined in a module of another
    layer (a lower layer calling up through a declaration it does not own).
Exit status 0, or 1 with one line per problem.  With --expect-fail TEXT, it
inverts: it succeeds only if the check fails and a problem line contains
TEXT (for the fixtures that show the check can fail).
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
DECL = re.compile(r'^(?!static\b|typedef\b|extern\b|#|\s)[^;(){}=]*?\b((?:ay|alloy)_\w+)\s*\([^;{]*\)[^;{]*;', re.M)
FUNC_START = r'^(?!static\b|#|\s)[^;(){}=]*?\b'


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def strip_comments(text):
    """The text without comments and without __attribute__((...)) lists."""
    text = re.sub(r'/\*.*?\*/', lambda m: '\n' * m.group(0).count('\n'), text, flags=re.S)
    text = re.sub(r'__attribute__\s*\(\(.*?\)\)', '', text)
    return re.sub(r'//[^\n]*', '', text)


def layer_table(doc):
    """{module pattern: layer number} from the table under '## Layers'."""
    m = re.search(r'^## Layers\b(.*?)(?=^## )', doc, re.M | re.S)
    if not m:
        return None
    table = {}
    for line in m.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip('|').split('|')]
        if len(cells) < 3 or not cells[0].isdigit():
            continue
        for name in re.findall(r'`([^`]+)`', cells[2]):
            table[name] = int(cells[0])
    return table


def main(argv):
    root = argv[1]
    expect = argv[3] if len(argv) > 3 and argv[2] == '--expect-fail' else None
    problems = []
    src = os.path.join(root, 'src')
    table = layer_table(read(os.path.join(root, 'docs', 'ARCHITECTURE.md')))
    if not table:
        problems.append('docs/ARCHITECTURE.md has no layer table under "## Layers"')
        table = {}

    files = {}  # path relative to src -> text without comments
    for dirpath, _, names in os.walk(src):
        for n in names:
            if n.endswith(('.c', '.h')):
                rel = os.path.relpath(os.path.join(dirpath, n), src)
                files[rel] = strip_comments(read(os.path.join(dirpath, n)))

    def module(rel):
        return os.path.splitext(rel)[0]

    def layer(mod):
        if mod in table:
            return table[mod]
        star = os.path.dirname(mod) + '/*'
        return table.get(star)

    modules = sorted({module(f) for f in files})
    for mod in modules:
        if layer(mod) is None:
            problems.append(f'module {mod} is in no layer of docs/ARCHITECTURE.md')
    for name in table:
        if not name.endswith('/*') and name not in modules:
            problems.append(f'docs/ARCHITECTURE.md names module {name}, which src/ does not have')

    # include edges between modules
    edges = {}
    for rel, text in sorted(files.items()):
        a = module(rel)
        for inc in INCLUDE.findall(text):
            here = os.path.normpath(os.path.join(os.path.dirname(rel), inc))
            target = here if here in files else (inc if inc in files else None)
            if target is None:
                continue  # a public header (include/) or a system one
            b = module(target)
            if b == a:
                continue
            edges.setdefault(a, set()).add(b)
            la, lb = layer(a), layer(b)
            if la is not None and lb is not None and la < lb:
                problems.append(f'src/{rel} (layer {la}) includes {inc} of module {b} '
                                f'(layer {lb}): an edge against the layer order')

    # cycles: depth-first search, reporting each cycle once
    state, stack, seen_cycles = {}, [], set()

    def visit(m):
        state[m] = 1
        stack.append(m)
        for n in sorted(edges.get(m, ())):
            if state.get(n) == 1:
                cyc = stack[stack.index(n):] + [n]
                key = frozenset(cyc)
                if key not in seen_cycles:
                    seen_cycles.add(key)
                    problems.append('include cycle: ' + ' -> '.join(cyc))
            elif n not in state:
                visit(n)
        stack.pop()
        state[m] = 2

    for m in modules:
        if m not in state:
            visit(m)

    # declarations owned by the layer that defines them
    for rel, text in sorted(files.items()):
        if not rel.endswith('.h'):
            continue
        owner = module(rel)
        for name in DECL.findall(text):
            where = [module(f) for f, t in files.items()
                     if f.endswith('.c') and re.search(FUNC_START + re.escape(name) + r'\s*\([^;]*$', t, re.M)]
            for d in where:
                if layer(d) != layer(owner):
                    problems.append(f'src/{rel} (layer {layer(owner)}) declares {name}, which '
                                    f'{d} (layer {layer(d)}) defines: a call against the layer order')

    if expect is not None:
        hit = [p for p in problems if expect in p]
        if hit:
            print('expected failure seen:', hit[0])
            return 0
        print(f'check_layers: expected a problem containing {expect!r}, got:',
              problems or 'none')
        return 1
    for p in problems:
        print('check_layers:', p)
    if not problems:
        print(f'check_layers: {len(modules)} modules, '
              f'{sum(len(v) for v in edges.values())} include edges, all in layer order, no cycle')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
