#!/usr/bin/env python3
"""Fails when the `#[preempt::app]` macro emits `unsafe` without its safety argument.

Comments do not survive into a token stream, so the generated code cannot carry its
`// SAFETY:` comments: the audit happens in the macro's source. This check finds every
`unsafe` token inside a `quote!`/`quote_spanned!`/`parse_quote!`/`parse_quote_spanned!`
invocation in crates/preempt-macros/src/ and requires, in the block of comment and
attribute lines directly above the line that holds it:

- for an `unsafe` block, expression or impl: a `// SAFETY` comment (`// SAFETY:` or
  `// SAFETY (`callee`):`), the invariant the generated code relies on;
- for an `unsafe fn`: a `# Safety` section in its `///` docs, the caller's contract.

Usage: scripts/check_macro_safety.py [--self-test] [DIR]
Exit status: 0 when every site is documented, 1 when one is not (each is listed as
file:line), 2 on a usage error. `--self-test` first runs the checker on built-in samples
(one documented site, one undocumented block, one undocumented `unsafe fn`, unsafe outside a
macro, the word inside strings and comments) and fails if it misjudges any of them.
Standard library only.
"""

import os
import re
import sys

MACROS = ("quote", "quote_spanned", "parse_quote", "parse_quote_spanned")
OPEN = {"(": ")", "[": "]", "{": "}"}
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def code_mask(src):
    """`src` with comments, string and char literals blanked (newlines kept), so that
    token positions and line numbers stay those of the source."""
    out = list(src)
    i, n = 0, len(src)

    def blank(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif src.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            blank(i, j)
            i = j
        elif c == "r" and re.match(r'r#*"', src[i:i + 300]) and not (
            i > 0 and (src[i - 1].isalnum() or src[i - 1] == "_")
        ):
            hashes = re.match(r'r(#*)"', src[i:]).group(1)
            end = src.find('"' + hashes, i + 2 + len(hashes))
            j = n if end < 0 else end + 1 + len(hashes)
            blank(i, j)
            i = j
        elif c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            blank(i, j + 1)
            i = j + 1
        elif c == "'":
            # A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
            if i + 1 < n and src[i + 1] == "\\":
                j = src.find("'", i + 2)
                blank(i, j + 1)
                i = j + 1
            elif i + 2 < n and src[i + 2] == "'":
                blank(i, i + 3)
                i += 3
            else:
                i += 1
        else:
            i += 1
    return "".join(out)


def macro_spans(code):
    """(start, end) offsets of the bodies of the quoting macros in masked `code`."""
    spans = []
    for m in IDENT.finditer(code):
        if m.group(0) not in MACROS:
            continue
        if m.start() > 0 and code[m.start() - 1] in ":" and code[m.start() - 2:m.start()] != "::":
            continue
        j = m.end()
        while j < len(code) and code[j].isspace():
            j += 1
        if j >= len(code) or code[j] != "!":
            continue
        j += 1
        while j < len(code) and code[j].isspace():
            j += 1
        if j >= len(code) or code[j] not in OPEN:
            continue
        stack, k = [OPEN[code[j]]], j + 1
        while k < len(code) and stack:
            if code[k] in OPEN:
                stack.append(OPEN[code[k]])
            elif stack and code[k] == stack[-1]:
                stack.pop()
            k += 1
        spans.append((j, k))
    return spans


def header_block(lines, index):
    """The comment and attribute lines directly above line `index` (0-based)."""
    block = []
    k = index - 1
    while k >= 0:
        t = lines[k].strip()
        if t.startswith("//") or t.startswith("#[") or t.startswith("#(#") or t.startswith("#!["):
            block.append(t)
            k -= 1
        else:
            break
    return block


def check_source(src):
    """The undocumented emitted `unsafe` sites of one file: [(line, kind)]."""
    code = code_mask(src)
    lines = src.split("\n")
    found = set()
    for start, end in macro_spans(code):
        for m in re.finditer(r"\bunsafe\b", code[start:end]):
            pos = start + m.start()
            line = code.count("\n", 0, pos)
            after = code[pos + len("unsafe"):pos + 200]
            is_fn = re.match(r'\s*(extern\s*(\s*)?)?fn\b', after) is not None
            block = header_block(lines, line)
            if is_fn:
                ok = any(re.match(r"///\s*#\s*Safety\b", t) for t in block)
                kind = "unsafe fn without a `# Safety` doc section"
            else:
                ok = any(re.match(r"//\s*SAFETY\b", t) for t in block)
                kind = "unsafe without a `// SAFETY` comment directly above"
            if not ok:
                found.add((line + 1, kind))
    return sorted(found)


def check_dir(root):
    problems = []
    for dirpath, _, files in os.walk(root):
        for f in sorted(files):
            if f.endswith(".rs"):
                path = os.path.join(dirpath, f)
                with open(path, encoding="utf-8") as fh:
                    for line, kind in check_source(fh.read()):
                        problems.append((path, line, kind))
    return [f"{p}:{line}: {kind}" for p, line, kind in sorted(problems)]


SAMPLES = [
    # (name, source, expected undocumented lines)
    ("documented block and fn", '''
fn a() -> TokenStream {
    quote! {
        // SAFETY: the cell was written before any reader runs.
        let x = unsafe { CELL.get() };
        /// Builds it.
        ///
        /// # Safety
        /// Once.
        #[inline]
        pub unsafe fn new() -> Self { Self }
    }
}
''', []),
    ("missing SAFETY comment", '''
fn a() -> TokenStream {
    let st = 1;
    quote!(#ident: unsafe { super::#st.get_mut() },)
}
''', [4]),
    ("SAFETY comment separated by code", '''
fn a() -> TokenStream {
    quote! {
        // SAFETY: this talks about the line below, not the unsafe one.
        let y = 1;
        let x = unsafe { f() };
    }
}
''', [6]),
    ("unsafe fn without # Safety", '''
fn a() -> TokenStream {
    quote_spanned! {span=>
        // SAFETY: a block comment is not a contract.
        pub unsafe fn f() {}
    }
}
''', [5]),
    ("not emitted, or not code", '''
fn a() -> TokenStream {
    let x = unsafe { g() };
    let s = quote!(let msg = "unsafe { }"; let c = 'u'; let l: &'a u8; /* unsafe */);
    // unsafe in a comment: quote!(unsafe { x })
    s
}
''', []),
    ("nested delimiters and SAFETY with the callee named", '''
fn a() -> TokenStream {
    quote! {
        match m {
            #(#cfgs)*
            // SAFETY (`AsyncTask::start`): one thread.
            M::A(x) => unsafe { h.start(x) },
            #(#cfgs)*
            M::B => unsafe { h.poll() },
        }
    }
}
''', [9]),
]


def self_test():
    failed = 0
    for name, src, want in SAMPLES:
        got = [line for line, _ in check_source(src)]
        if got != want:
            print(f"self-test `{name}`: reported lines {got}, expected {want}", file=sys.stderr)
            failed += 1
    if failed:
        print(f"check_macro_safety: self-test FAILED ({failed} sample(s))", file=sys.stderr)
        return False
    print(f"check_macro_safety: self-test passed ({len(SAMPLES)} samples)")
    return True


def main(argv):
    args = argv[1:]
    if "--self-test" in args:
        args.remove("--self-test")
        if not self_test():
            return 1
    if len(args) > 1 or any(a.startswith("-") for a in args):
        print("usage: scripts/check_macro_safety.py [--self-test] [DIR]", file=sys.stderr)
        return 2
    root = args[0] if args else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "crates", "preempt-macros", "src"
    )
    if not os.path.isdir(root):
        print(f"check_macro_safety: {root} is not a directory (pass the macro crate's src/)",
              file=sys.stderr)
        return 2
    problems = check_dir(root)
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"check_macro_safety: {len(problems)} emitted unsafe site(s) lack their safety "
              "argument: write the invariant the generated code relies on above each",
              file=sys.stderr)
        return 1
    print(f"check_macro_safety: every emitted unsafe in {os.path.normpath(root)} is documented")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
