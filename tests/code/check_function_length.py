#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""check_function_length.py - no function in src/ and tools/ is longer than
80 lines, unless it is a table.

    check_function_length.py ROOT [--expect-fail TEXT]

Reads every .c and .h file under ROOT/src and ROOT/tools (sub-folders
included) and finds each function definition: a `{` at file level whose
declaration ends with a parameter list `)` (after any trailing
`__attribute__((...))`), so that struct, union and enum bodies and
initializers (`= {`) are not functions.  Comments, string and character
literals and preprocessor lines (with their `\\` continuations) are blanked
before the braces are counted, and `extern "C" {` opens no function.  So
multi-line signatures, `static inline`, attributes and macros before the
name (`AY_INLINE`, `__attribute__((noinline))`) and braces attached or on
their own line are all read the same way.

A function's length is counted from the first line of its declaration (the
first line after the previous declaration, directive or comment, and after
any macro call standing alone on lines before it, such as ctl.c's
`GETTER(...)` lines: return type, storage class and attributes included) to
the line of its closing brace, both included.  More than 80 lines is a
problem.

The one exemption is a table: a function whose body is a table (a list of
cases or rows, one a line) may be longer if the line directly before its
first line is a comment holding `function-length: table`, e.g.

    /* function-length: table (one row per opcode) */
    static const char *op_name(int op) {

or `// function-length: table`.  Today no function needs it.

Exit status 0, or 1 with one line per function too long ("FILE:LINE: FUNCTION is
N lines (limit 80)") or per file it cannot read (unbalanced braces).  With
--expect-fail TEXT it inverts: it succeeds only when the check fails and
every problem line contains TEXT, so a fixture tree with one long function
beside near misses (an 80-line function after macro calls, a marked table,
a long initializer) shows both that the check fails and that it flags
nothing else (the test function-length-fixture).
"""
import os
import re
import sys

LIMIT = 80
MARK = 'function-length: table'
NOT_NAMES = {'if', 'for', 'while', 'switch', 'return', 'sizeof', '__attribute__', '_Alignas',
             'alignas', '__typeof__', 'typeof', '_Generic', '__declspec', 'void', 'char', 'short',
             'int', 'long', 'float', 'double', 'signed', 'unsigned', 'const', 'volatile'}


def blank(text):
    """The text with comments, literals and preprocessor lines turned into
    spaces, newlines kept, so that offsets and line numbers stay the same."""
    out = list(text)
    i, n = 0, len(text)
    line_start = True

    def wipe(a, b):
        for k in range(a, b):
            if out[k] != '\n':
                out[k] = ' '

    while i < n:
        c = text[i]
        if line_start and c in ' \t':
            i += 1
            continue
        if line_start and c == '#':
            j = i
            while j < n:
                if text[j] == '\n' and text[j - 1] != '\\':
                    break
                if text.startswith('/*', j):  # a comment may run past the line
                    e = text.find('*/', j + 2)
                    j = n if e < 0 else e + 2
                    continue
                j += 1
            wipe(i, j)
            i = j
            continue
        line_start = False
        if c == '\n':
            line_start = True
            i += 1
        elif text.startswith('//', i):
            j = text.find('\n', i)
            j = n if j < 0 else j
            wipe(i, j)
            i = j
        elif text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            wipe(i, j)
            i = j
        elif c in '"\'':
            j = i + 1
            while j < n and text[j] != c and text[j] != '\n':
                j += 2 if text[j] == '\\' else 1
            wipe(i + 1, min(j, n))
            i = j + 1
        else:
            i += 1
    return ''.join(out)


def strip_trailing_attributes(head):
    """head without its trailing `__attribute__((...))` groups and spaces."""
    while True:
        head = head.rstrip()
        if not head.endswith(')'):
            return head
        open_at = matching_open(head, len(head) - 1)
        if open_at is None:
            return head
        before = head[:open_at].rstrip()
        m = re.search(r'(__attribute__|__declspec)$', before)
        if not m:
            return head
        head = before[:m.start()]


def matching_open(text, close_at):
    depth = 0
    for k in range(close_at, -1, -1):
        if text[k] == ')':
            depth += 1
        elif text[k] == '(':
            depth -= 1
            if depth == 0:
                return k
    return None


def function_name(head):
    """The name a declaration `head` (the text before a file-level `{`)
    defines, or None when it is no function (struct, initializer...)."""
    head = strip_trailing_attributes(head)
    if not head.endswith(')') or re.search(r'=\s*$', head):
        return None
    open_at = matching_open(head, len(head) - 1)
    if open_at is None:
        return None
    m = re.search(r'([A-Za-z_]\w*)\s*$', head[:open_at])
    if m and m.group(1) not in NOT_NAMES:
        return m.group(1)
    # a declarator in parentheses, as in `void (*pick(int k))(void) {`
    for m in re.finditer(r'([A-Za-z_]\w*)\s*\(', head):
        if m.group(1) not in NOT_NAMES:
            return m.group(1)
    return None


def decl_start(head):
    """Where in head (the text between the previous file-level `;` or `}`
    and a `{`) the declaration begins: its first non-blank character, after
    any macro call standing alone before it (a line that ends with `)`
    outside parentheses, `GETTER(a, b)`, but not `__attribute__((...))`)."""
    start, depth, pos = 0, 0, 0
    for line in head.split('\n'):
        for ch in line:
            depth += (ch == '(') - (ch == ')')
        pos += len(line) + 1
        text = line.rstrip()
        if depth == 0 and text.endswith(')') and head[pos:].strip() and \
                strip_trailing_attributes(text).endswith(')'):
            start = pos
    return start + len(head[start:]) - len(head[start:].lstrip())


def functions(text):
    """(name, first line, last line) of each function defined in text;
    raises ValueError on unbalanced braces."""
    code = blank(text)
    found = []
    stack = []  # per open brace: (kind, name, first line)
    depth = 0  # open braces other than extern "C"'s
    head_start = 0  # offset where the current file-level declaration begins
    for i, c in enumerate(code):
        if c == ';' and depth == 0:
            head_start = i + 1
        elif c == '{':
            if depth:
                stack.append(('block', None, 0))
                depth += 1
                continue
            head = code[head_start:i]
            if re.search(r'\bextern\s*"\s*"\s*$', head):
                stack.append(('extern', None, 0))
                head_start = i + 1
                continue
            name = function_name(head)
            start = head_start + decl_start(head)
            first = code.count('\n', 0, start) + 1
            stack.append(('function' if name else 'other', name, first))
            depth += 1
        elif c == '}':
            if not stack:
                raise ValueError('a } with no {, line %d' % (code.count('\n', 0, i) + 1))
            kind, name, first = stack.pop()
            if kind != 'extern':
                depth -= 1
            if kind == 'function':
                found.append((name, first, code.count('\n', 0, i) + 1))
            if depth == 0:
                head_start = i + 1
    if stack:
        raise ValueError('%d { left open at the end' % len(stack))
    return found


def is_table(lines, first):
    return first >= 2 and MARK in lines[first - 2]


def check_file(path, rel):
    with open(path, encoding='utf-8', errors='replace') as f:
        text = f.read()
    try:
        found = functions(text)
    except ValueError as e:
        return [f'{rel}: cannot read its functions ({e})'], 0
    lines = text.split('\n')
    problems = []
    for name, first, last in found:
        length = last - first + 1
        if length > LIMIT and not is_table(lines, first):
            problems.append(f'{rel}:{first}: {name} is {length} lines (limit {LIMIT})')
    return problems, len(found)


def main(root, expect=None):
    problems = []
    files = count = 0
    for top in ('src', 'tools'):
        for dirpath, dirs, names in os.walk(os.path.join(root, top)):
            dirs.sort()
            for n in sorted(names):
                if not n.endswith(('.c', '.h')):
                    continue
                path = os.path.join(dirpath, n)
                p, k = check_file(path, os.path.relpath(path, root))
                problems += p
                files += 1
                count += k
    if expect is not None:
        ok = bool(problems) and all(expect in p for p in problems)
        if ok:
            print('expected failure seen:', *problems, sep='\n  ')
        else:
            print(f'check_function_length: expected only problems with {expect!r}, got:',
                  *(problems or ['none']), sep='\n  ')
        return 0 if ok else 1
    for p in problems:
        print('check_function_length:', p)
    if not problems:
        print(f'check_function_length: {count} functions in {files} files, '
              f'none over {LIMIT} lines')
    return 1 if problems else 0


if __name__ == '__main__':
    args = sys.argv[1:]
    expect = args[2] if len(args) > 2 and args[1] == '--expect-fail' else None
    sys.exit(main(args[0] if args else '.', expect))
