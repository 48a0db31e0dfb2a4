#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""check_layers.py - the module graph of src/ (includes and calls) against
the layer order that docs/ARCHITECTURE.md writes down.

    check_layers.py ROOT [--expect-fail TEXT]

ROOT holds docs/ARCHITECTURE.md and src/.  The doc's table under "## Layers"
has a layer number in its first column and the layer's modules, in
backquotes, in its third ("modules") column; a module is a file of src/
without its extension (src/pageheap.{h,c} is `pageheap`, src/hot/pool.c is
`hot/pool`; `hot/*` names every module of src/hot).

The graph has an edge from module A to module B when a file of A includes
a header of B, or when a function that A defines (in its .c, or inline in
its .h) calls a function that B defines.  Calls are read from the text:
definitions are the ay_*/alloy_* functions defined at file scope, calls are
those names followed by "(" inside a definition's body (comments and
strings left out).  Reading calls, not only includes, sees the cycles that a
header shared by several .c files would hide.

It fails when:
  - a module of src/ is in no layer, or the table names a module that does
    not exist;
  - a module includes or calls a module of a higher layer (an edge against
    the order);
  - the module graph has a cycle (also within a layer), named with one call
    or include per edge;
  - a header declares a function that another module defines (one header
    per module, declaring only its own functions).
Exit status 0, or 1 with one line per problem.  With --expect-fail TEXT, it
inverts: it succeeds only if the check fails and a problem line contains
TEXT (for the fixtures that show the check can fail).
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
# a definition at file scope: a line starting at column 0 with the return
# type, the name, the parameters (maybe over several lines), then "{"
DEFN = re.compile(r'^(?!typedef\b|struct\b|enum\b|union\b|#)[A-Za-z_][^;{}()=]*?\b((?:ay|alloy)_\w+)'
                  r'\s*\(([^;{}]*?)\)\s*\{', re.M | re.S)
CALL = re.compile(r'\b((?:ay|alloy)_\w+)\s*\(')
DECL = re.compile(r'^(?!static\b|typedef\b|extern\b|#|\s)[^;(){}=]*?\b((?:ay|alloy)_\w+)\s*\([^;{]*\)[^;{]*;', re.M)
FUNC_START = r'^(?!static\b|#|\s)[^;(){}=]*?\b'


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def strip_comments(text):
    """The text without comments, string and character literals, and
    __attribute__((...)) lists (kept line for line)."""
    text = re.sub(r'/\*.*?\*/', lambda m: '\n' * m.group(0).count('\n'), text, flags=re.S)
    text = re.sub(r'//[^\n]*', '', text)
    text = re.sub(r'^(?!\s*#\s*include)(.*)$',  # strings, but not an include's name
                  lambda m: re.sub(r'"(?:\\.|[^"\\\n])*"', '""', m.group(0)), text, flags=re.M)
    text = re.sub(r"'(?:\\.|[^'\\\n])*'", "''", text)
    return re.sub(r'__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)', '', text)


def definitions(text):
    """[(name, body)] of the functions a file defines at file scope."""
    out = []
    for m in DEFN.finditer(text):
        i, depth = m.end(), 1
        while depth and i < len(text):
            depth += {'{': 1, '}': -1}.get(text[i], 0)
            i += 1
        out.append((m.group(1), text[m.end():i]))
    return out


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

    # edges between modules: includes, then calls; why[(a, b)] says one reason
    edges, why = {}, {}

    def edge(a, b, reason):
        edges.setdefault(a, set()).add(b)
        why.setdefault((a, b), reason)
        la, lb = layer(a), layer(b)
        if la is not None and lb is not None and la < lb:
            problems.append(f'{reason}: module {a} (layer {la}) uses module {b} '
                            f'(layer {lb}): an edge against the layer order')

    for rel, text in sorted(files.items()):
        a = module(rel)
        for inc in INCLUDE.findall(text):
            here = os.path.normpath(os.path.join(os.path.dirname(rel), inc))
            target = here if here in files else (inc if inc in files else None)
            if target is None:
                continue  # a public header (include/) or a system one
            b = module(target)
            if b != a:
                edge(a, b, f'src/{rel} includes {inc}')

    # call edges: who defines each function, then who calls it
    defined = {}  # function -> modules that define it
    bodies = []   # (module, file, function, body)
    for rel, text in sorted(files.items()):
        for name, body in definitions(text):
            defined.setdefault(name, set()).add(module(rel))
            bodies.append((module(rel), rel, name, body))
    calls = 0
    for a, rel, fn, body in bodies:
        for callee in sorted(set(CALL.findall(body))):
            for b in sorted(defined.get(callee, ())):
                if b != a:
                    calls += 1
                    edge(a, b, f'src/{rel}: {fn} calls {callee}')

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
                    steps = '; '.join(why[(x, y)] for x, y in zip(cyc, cyc[1:]))
                    problems.append('cycle: ' + ' -> '.join(cyc) + f' ({steps})')
            elif n not in state:
                visit(n)
        stack.pop()
        state[m] = 2

    for m in modules:
        if m not in state:
            visit(m)

    # one header per module: a header declares only its own module's functions
    for rel, text in sorted(files.items()):
        if not rel.endswith('.h'):
            continue
        owner = module(rel)
        for name in DECL.findall(text):
            for d in sorted(defined.get(name, ())):
                if d != owner:
                    problems.append(f'src/{rel} declares {name}, which module {d} defines: '
                                    f'a header declares only its own module\'s functions')

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
        print(f'check_layers: {len(modules)} modules, {sum(len(v) for v in edges.values())} '
              f'module edges (from includes and {calls} calls), all in layer order, no cycle')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
