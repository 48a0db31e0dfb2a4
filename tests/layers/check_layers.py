#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""check_layers.py - the module graph of src/ (includes and calls) against
the layer order that docs/ARCHITECTURE.md writes down, and the module graph
of tools/ (the `alloy` command), which must have no cycle.

    check_layers.py ROOT [--expect-fail TEXT]

ROOT holds docs/ARCHITECTURE.md and src/, and maybe tools/.  The doc's table
under "## Layers" has a layer number in its first column and the layer's
modules, in backquotes, in its third ("modules") column; a module is a file
of src/ without its extension (src/pageheap.{h,c} is `pageheap`,
src/hot/pool.c is `hot/pool`; `hot/*` names every module of src/hot).

The graph has an edge from module A to module B when a file of A includes
a header of B, or when a function that A defines (in its .c, or inline in
its .h) calls a function that B defines.  Calls are read from the text:
definitions are the ay_*/alloy_* functions defined at file scope, calls are
those names followed by "(" inside a definition's body (comments and
strings left out).  Reading calls, not only includes, sees the cycles that a
header shared by several .c files would hide.

tools/ is read the same way, with its own names: a module of tools/ is one
of its C files without the extension (tools/alloy_util.{h,c} is
`alloy_util`), and its functions are named as the command names them
(usage_error, cmd_stats, main), so a definition there is any function
defined at file scope, and the functions another module can call are those
a .c file defines without `static`, and those a header defines.  tools/ has
no layer table: the `alloy` command is a dispatcher (alloy.c), a file per
subcommand and the helpers they share (docs/ALLOY-COMMAND.md, "The command's
files"), and the rule that keeps it so is that its graph has no cycle.

Calls of the libc-level names that src/ defines are edges too: a function
of src/ defined at file scope without `static` (or AY_INLINE) whose name is
not ay_*/alloy_* (override.c's malloc and free, checked.c's memcpy and read,
glibc_api.c's mallinfo2, ...) is the module's, and a call of it from any
function of another module (static ones included) is an edge to that
module.  A header of src/ that redeclares such a name with an asm label
(`void *memcpy(...) __asm__("ay_unchecked_memcpy")`, src/unchecked.h) sends
the calls to the function the label names.  The modules that the doc names
in a line "Calls through the process's names: `hot/*`." call the process's
malloc, whichever it is (the hot-path allocators), and their calls of the
libc names are not edges.

It fails when:
  - a module of src/ is in no layer, or the table names a module that does
    not exist;
  - a module of src/ includes or calls a module of a higher layer (an edge
    against the order);
  - the module graph of src/, or that of tools/, has a cycle (also within a
    layer), named with one call or include per edge;
  - a header of src/ or of tools/ declares a function that another module
    defines (one header per module, declaring only its own functions).
Exit status 0, or 1 with one line per problem.  With --expect-fail TEXT, it
inverts: it succeeds only if the check fails and a problem line contains
TEXT (for the fixtures that show the check can fail).
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def definition_re(name):
    """A definition at file scope of a function whose name matches name: a
    line starting at column 0 with the return type, the name, the
    parameters (maybe over several lines), then "{"."""
    return re.compile(r'^(?!typedef\b|struct\b|enum\b|union\b|#)[A-Za-z_][^;{}()=]*?\b(' + name +
                      r')\s*\(([^;{}]*?)\)\s*\{', re.M | re.S)


def declaration_re(name):
    """A declaration at file scope, not static, of a function whose name
    matches name."""
    return re.compile(r'^(?!static\b|typedef\b|extern\b|#|\s)[^;(){}=]*?\b(' + name +
                      r')\s*\([^;{]*\)[^;{]*;', re.M)


SRC_NAME = r'(?:ay|alloy)_\w+'
DEFN = definition_re(SRC_NAME)
CALL = re.compile(r'\b(' + SRC_NAME + r')\s*\(')
DECL = declaration_re(SRC_NAME)
# tools/: any name; a call is not a member's (s.f(, s->f()
TOOLS_NAME = r'[A-Za-z_]\w*'
TOOLS_DEFN = definition_re(TOOLS_NAME)
TOOLS_CALL = re.compile(r'(?<!\.)(?<!->)\b(' + TOOLS_NAME + r')\s*\(')
TOOLS_DECL = declaration_re(TOOLS_NAME)
ATTRIBUTE = r'__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)'


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
    return re.sub(ATTRIBUTE, '', text)


def definitions(text, pattern=DEFN):
    """[(name, body, is_static)] of the functions a file defines at file
    scope."""
    out = []
    for m in pattern.finditer(text):
        i, depth = m.end(), 1
        while depth and i < len(text):
            depth += {'{': 1, '}': -1}.get(text[i], 0)
            i += 1
        out.append((m.group(1), text[m.end():i], re.match(r'static\b', m.group(0)) is not None))
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


def process_names_exempt(doc):
    """The module patterns of the doc's line "Calls through the process's
    names: `a`, `b`."."""
    m = re.search(r"^Calls through the process's names:([^\n]*)", doc, re.M)
    return re.findall(r'`([^`]+)`', m.group(1)) if m else []


def strip_comments_only(text):
    """The text without comments, strings kept (an asm label is one)."""
    text = re.sub(r'/\*.*?\*/', lambda m: '\n' * m.group(0).count('\n'), text, flags=re.S)
    return re.sub(r'//[^\n]*', '', text)


RENAME = re.compile(r'\b(\w+)\s*\([^;{}()]*\)\s*__asm__\s*\(\s*"(\w+)"\s*\)\s*;')
LIBC_DEFN = definition_re(TOOLS_NAME)
LIBC_CALL = TOOLS_CALL


def read_tree(top, strip=strip_comments):
    """{path relative to top: text without comments} of its C files."""
    files = {}
    for dirpath, _, names in os.walk(top):
        for n in names:
            if n.endswith(('.c', '.h')):
                rel = os.path.relpath(os.path.join(dirpath, n), top)
                files[rel] = strip(read(os.path.join(dirpath, n)))
    return files


def module(rel):
    return os.path.splitext(rel)[0]


class Graph:
    """The module graph of one tree (src/ or tools/): edges from includes
    and calls, each with one reason; layer(module) gives its layer, or None,
    and an edge to a higher layer is a problem."""

    def __init__(self, top, files, problems, layer=lambda mod: None):
        self.top, self.files, self.problems, self.layer = top, files, problems, layer
        self.modules = sorted({module(f) for f in files})
        self.edges, self.why, self.calls = {}, {}, 0
        self.defined = {}  # function -> modules that define it (that others can call)

    def edge(self, a, b, reason):
        self.edges.setdefault(a, set()).add(b)
        self.why.setdefault((a, b), reason)
        la, lb = self.layer(a), self.layer(b)
        if la is not None and lb is not None and la < lb:
            self.problems.append(f'{reason}: module {a} (layer {la}) uses module {b} '
                                 f'(layer {lb}): an edge against the layer order')

    def include_edges(self):
        for rel, text in sorted(self.files.items()):
            a = module(rel)
            for inc in INCLUDE.findall(text):
                here = os.path.normpath(os.path.join(os.path.dirname(rel), inc))
                target = here if here in self.files else (inc if inc in self.files else None)
                if target is None:
                    continue  # a public header (include/), another tree's or a system one
                b = module(target)
                if b != a:
                    self.edge(a, b, f'{self.top}/{rel} includes {inc}')

    def call_edges(self, defn, call, callable_def):
        """Who defines each function (callable_def(rel, is_static) says
        whether other files can call it), then who calls it."""
        bodies = []  # (module, file, function, body)
        for rel, text in sorted(self.files.items()):
            for name, body, is_static in definitions(text, defn):
                if callable_def(rel, is_static):
                    self.defined.setdefault(name, set()).add(module(rel))
                bodies.append((module(rel), rel, name, body))
        for a, rel, fn, body in bodies:
            for callee in sorted(set(call.findall(body))):
                for b in sorted(self.defined.get(callee, ())):
                    if b != a:
                        self.calls += 1
                        self.edge(a, b, f'{self.top}/{rel}: {fn} calls {callee}')

    def cycles(self):
        """Depth-first search, reporting each cycle once."""
        state, stack, seen_cycles = {}, [], set()

        def visit(m):
            state[m] = 1
            stack.append(m)
            for n in sorted(self.edges.get(m, ())):
                if state.get(n) == 1:
                    cyc = stack[stack.index(n):] + [n]
                    key = frozenset(cyc)
                    if key not in seen_cycles:
                        seen_cycles.add(key)
                        steps = '; '.join(self.why[(x, y)] for x, y in zip(cyc, cyc[1:]))
                        self.problems.append('cycle: ' + ' -> '.join(cyc) + f' ({steps})')
                elif n not in state:
                    visit(n)
            stack.pop()
            state[m] = 2

        for m in self.modules:
            if m not in state:
                visit(m)

    def own_declarations(self, decl):
        """One header per module: a header declares only its own module's
        functions."""
        for rel, text in sorted(self.files.items()):
            if not rel.endswith('.h'):
                continue
            owner = module(rel)
            for name in decl.findall(text):
                for d in sorted(self.defined.get(name, ())):
                    if d != owner:
                        self.problems.append(f'{self.top}/{rel} declares {name}, which module {d} '
                                             f'defines: a header declares only its own module\'s '
                                             f'functions')

    def libc_edges(self, raw, exempt):
        """Calls of the libc-level names that the tree defines (see the
        module's comment): raw is {file: text with comments}, for the asm
        labels of the renames."""
        names = {}
        for rel, text in sorted(self.files.items()):
            for m in LIBC_DEFN.finditer(text):
                head, name = m.group(0), m.group(1)
                if re.match(r'(static|AY_INLINE)\b', head) or re.match(r'(ay|alloy)_', name) \
                        or name == 'main':
                    continue
                names.setdefault(name, set()).add(module(rel))
        renames = {}
        for rel, text in sorted(raw.items()):
            if rel.endswith('.h'):
                for name, label in RENAME.findall(text):
                    if name in names:
                        renames[name] = (label, rel)
        for rel, text in sorted(self.files.items()):
            a = module(rel)
            if any(a == e or (e.endswith('/*') and os.path.dirname(a) + '/*' == e) for e in exempt):
                continue
            for fn, body, _ in definitions(text, LIBC_DEFN):
                for callee in sorted(set(LIBC_CALL.findall(body)) & set(names)):
                    if callee in renames:
                        label, header = renames[callee]
                        for b in sorted(self.defined.get(label, ())):
                            if b != a:
                                self.calls += 1
                                self.edge(a, b, f'{self.top}/{rel}: {fn} calls {callee} '
                                                f'({header} renames it {label})')
                        continue
                    for b in sorted(names[callee]):
                        if b != a:
                            self.calls += 1
                            self.edge(a, b, f'{self.top}/{rel}: {fn} calls {callee}, '
                                            f'the libc name that module {b} defines')

    def edge_count(self):
        return sum(len(v) for v in self.edges.values())


def check_src(root, problems):
    doc = read(os.path.join(root, 'docs', 'ARCHITECTURE.md'))
    table = layer_table(doc)
    if not table:
        problems.append('docs/ARCHITECTURE.md has no layer table under "## Layers"')
        table = {}

    def layer(mod):
        if mod in table:
            return table[mod]
        star = os.path.dirname(mod) + '/*'
        return table.get(star)

    g = Graph('src', read_tree(os.path.join(root, 'src')), problems, layer)
    for mod in g.modules:
        if layer(mod) is None:
            problems.append(f'module {mod} is in no layer of docs/ARCHITECTURE.md')
    for name in table:
        if not name.endswith('/*') and name not in g.modules:
            problems.append(f'docs/ARCHITECTURE.md names module {name}, which src/ does not have')
    g.include_edges()
    g.call_edges(DEFN, CALL, lambda rel, is_static: True)
    g.libc_edges(read_tree(os.path.join(root, 'src'), strip_comments_only), process_names_exempt(doc))
    g.cycles()
    g.own_declarations(DECL)
    return (f'check_layers: {len(g.modules)} modules, {g.edge_count()} module edges (from '
            f'includes and {g.calls} calls), all in layer order, no cycle')


def check_tools(root, problems):
    """tools/: no cycle, and one header per module; None without tools/."""
    top = os.path.join(root, 'tools')
    if not os.path.isdir(top):
        return None

    def strip(text):  # an attribute first on a line leaves the line at column 0
        return strip_comments(re.sub(ATTRIBUTE + r'[ \t]*', '', text))

    g = Graph('tools', read_tree(top, strip), problems)
    g.include_edges()
    # a static function of a .c file is its own; a header's is its includers'
    g.call_edges(TOOLS_DEFN, TOOLS_CALL, lambda rel, is_static: rel.endswith('.h') or not is_static)
    g.cycles()
    g.own_declarations(TOOLS_DECL)
    return (f'check_layers: tools/: {len(g.modules)} modules, {g.edge_count()} module edges (from '
            f'includes and {g.calls} calls), no cycle')


def main(argv):
    root = argv[1]
    expect = argv[3] if len(argv) > 3 and argv[2] == '--expect-fail' else None
    problems = []
    summaries = [check_src(root, problems), check_tools(root, problems)]

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
        for s in summaries:
            if s:
                print(s)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
