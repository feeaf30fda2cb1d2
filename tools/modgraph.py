#!/usr/bin/env python3
"""The module graph of a Rust crate's src/ (quiche/src by default), drawn from its paths, and
the checks CI runs on it: no import loop, and no module below the public API reaching names
through the crate root's re-exports.

    tools/modgraph.py [--src DIR] [--dot] [--layers] [--why A B] [--self-test]

Exits 1, printing each loop with the lines that make it, when a check fails.

What is an edge. Every path in code that is not a test: `use` declarations (brace trees
expanded) and paths in expressions that start with `crate::`, `super::` or `self::`. A path is
resolved to the module that *defines* the name, following `use` bindings and re-exports (a
`pub use self::rtt::RttStats` in recovery/mod.rs sends `crate::recovery::RttStats` on to
recovery/rtt.rs). Method calls and trait dispatch are invisible to it: it sees what a file
names, which is what a reader sees.

Which graphs. A loop is looked for among siblings: the top-level modules under lib.rs, and
the files and subfolders within each folder. An edge from module A to module B counts in the
graph of their lowest common ancestor, between the two children of it that lead to A and B
(crate::cc::cubic -> crate::recovery::rtt is the edge cc -> recovery of the top-level graph).

How mod.rs counts. A folder's mod.rs (and lib.rs for the crate) is the folder's face: it
declares the children and re-exports their items. Edges between a module and its own
ancestors or descendants are not counted: a parent assembles its children, and a child may
use what its parent defines. Uses of a name a parent re-exports are charged to the child that
defines it, so a re-export never hides a loop.

What is test code. Files named tests.rs, files under a tests/ folder, and items under
`#[cfg(test)]` or `#[cfg(all(test, ...))]`; tests may import anything.

The crate root. lib.rs re-exports the public API (`crate::Error`, `crate::Connection` ...).
Inside the crate, modules name the module that defines an item (`crate::error::Error`); only
the modules that are clients of the public API themselves (ROOT_API_CLIENTS) use the root's
names, and nothing below them uses an item lib.rs defines.

Python 3 standard library only; runs in well under a second.
"""

import argparse
import os
import re
import sys
from collections import defaultdict

# Modules that use the library as its users do, through the crate root's public API.
ROOT_API_CLIENTS = {"h3", "ffi", "testing"}


# ----- reading files -------------------------------------------------------------------------


def strip_comments_and_strings(text):
    """The text with comments, string and char literals blanked (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:i + 10]) and not (
            i and (text[i - 1].isalnum() or text[i - 1] == "_")
        ):
            m = re.match(r'r(#*)"', text[i:])
            end = '"' + m.group(1)
            j = text.find(end, i + len(m.group(0)))
            j = n if j < 0 else j + len(end)
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j + 1
        elif c == "'":
            # A char literal ('a', '\n', '\u{..}') or a lifetime ('a): blank only the literal.
            m = re.match(r"'(\\(u\{[0-9a-fA-F]+\}|x[0-9a-fA-F]{2}|.)|[^\\'])'", text[i:])
            if m:
                out.append("' '")
                i += len(m.group(0))
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def matching_close(text, i):
    """The index just past the bracket that closes the one at text[i]."""
    pairs = {"{": "}", "(": ")", "[": "]"}
    stack = [pairs[text[i]]]
    j = i + 1
    while j < len(text) and stack:
        c = text[j]
        if c in pairs:
            stack.append(pairs[c])
        elif c == stack[-1]:
            stack.pop()
        j += 1
    return j


TEST_CFG = re.compile(r"#\[cfg\(\s*(test|all\(\s*test\b[^\]]*)\)\]")


def strip_test_items(text):
    """The text with every item under #[cfg(test)] or #[cfg(all(test, ...))] blanked."""
    while True:
        m = TEST_CFG.search(text)
        if not m:
            return text
        # The item: up to the first `;` or a balanced `{...}` at depth 0, whichever comes first.
        j = m.end()
        while j < len(text) and text[j] not in ";{":
            if text[j] in "([":
                j = matching_close(text, j)
            else:
                j += 1
        end = j + 1 if j < len(text) and text[j] == ";" else matching_close(text, j)
        text = text[: m.start()] + "\n" * text.count("\n", m.start(), end) + text[end:]


def is_test_file(rel):
    parts = rel.split(os.sep)
    return "tests" in parts[:-1] or parts[-1] == "tests.rs"


def module_of(rel):
    """('cc', 'bbr', 'model') for cc/bbr/model.rs; () for lib.rs."""
    parts = rel[:-3].split(os.sep)
    if parts[-1] in ("mod", "lib"):
        parts = parts[:-1]
    return tuple(parts)


# ----- use trees -----------------------------------------------------------------------------


def split_top(s):
    """Splits a use tree's brace contents at its top-level commas."""
    items, depth, cur = [], 0, []
    for c in s:
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        if c == "," and depth == 0:
            items.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    items.append("".join(cur))
    return [i.strip() for i in items if i.strip()]


def expand_use_tree(tree, prefix=()):
    """[(segments, bound name or None for a glob)] for one use tree."""
    tree = re.sub(r"\s+", "", tree)
    tree = tree.lstrip(":")
    brace = tree.find("{")
    if brace >= 0 and tree.endswith("}"):
        head = [s for s in tree[:brace].split("::") if s]
        out = []
        for item in split_top(tree[brace + 1: -1]):
            out.extend(expand_use_tree(item, prefix + tuple(head)))
        return out
    path_text = tree
    segs = [s for s in path_text.split("::") if s]
    if segs and segs[-1] == "*":
        return [(prefix + tuple(segs[:-1]), None)]
    if segs and segs[-1] == "self":
        segs = segs[:-1]
    full = prefix + tuple(segs)
    return [(full, full[-1] if full else None)]


USE_DECL = re.compile(
    r"(?:^|(?<=[;{}\s]))(?:pub(?:\s*\([^)]*\))?\s+)?use\s+([^;]+);", re.M
)


def parse_use_tree_text(text):
    """[(segments, bound name)] for one `use` body, handling `as` renames before the strip."""
    # Replace `x as y` by a marker the tree expander keeps.
    renamed = re.sub(r"(\w+)\s+as\s+(\w+)", r"\1@\2", text)
    out = []
    for segs, name in expand_use_tree(renamed):
        if segs and "@" in segs[-1]:
            last, alias = segs[-1].split("@")
            segs = segs[:-1] + ((last,) if last != "self" else ())
            name = alias
        out.append((segs, name))
    return out


MOD_DECL = re.compile(r"(?:^|(?<=[;{}\s]))(?:pub(?:\s*\([^)]*\))?\s+)?mod\s+(\w+)\s*;", re.M)

INLINE_PATH = re.compile(r"(?<![\w$:])((?:crate|super|self)(?:\s*::\s*\w+)+)")


# ----- the crate -----------------------------------------------------------------------------


class Crate:
    def __init__(self, src):
        self.src = src
        self.modules = {}  # module path -> file (relative)
        self.code = {}  # module path -> code without comments, strings and tests
        self.uses = defaultdict(list)  # module -> [(absolute segments or None, name, line)]
        self.bindings = defaultdict(dict)  # module -> name -> absolute segments (None: glob)
        self.globs = defaultdict(list)  # module -> [absolute module segments]
        self.refs = []  # (module, absolute segments, line, text)
        for root, dirs, files in os.walk(src):
            dirs.sort()
            for f in sorted(files):
                if not f.endswith(".rs"):
                    continue
                rel = os.path.relpath(os.path.join(root, f), src)
                if is_test_file(rel):
                    continue
                text = open(os.path.join(src, rel), encoding="utf-8").read()
                code = strip_test_items(strip_comments_and_strings(text))
                mod = module_of(rel)
                self.modules[mod] = rel
                self.code[mod] = code
        # Only modules declared (`mod x;`) outside test code, from the root down, are in the
        # graph: a file whose declaration is under #[cfg(test)] is test code.
        declared, todo = set(), [()]
        while todo:
            mod = todo.pop()
            if mod in declared or mod not in self.code:
                continue
            declared.add(mod)
            for m in MOD_DECL.finditer(self.code[mod]):
                todo.append(mod + (m.group(1),))
        self.modules = {m: f for m, f in self.modules.items() if m in declared}
        self.code = {m: c for m, c in self.code.items() if m in declared}
        for mod, code in self.code.items():
            self._read_uses(mod, code)
        for mod, code in self.code.items():
            self._read_refs(mod, code)

    def _absolute(self, mod, segs):
        """Absolute segments for a path written in `mod`, or None for another crate's."""
        if not segs:
            return None
        if segs[0] == "crate":
            return tuple(segs[1:])
        if segs[0] in ("self", "super"):
            base = list(mod)
            rest = list(segs)
            if rest[0] == "self":
                rest = rest[1:]
            while rest and rest[0] == "super":
                base = base[:-1]
                rest = rest[1:]
            return tuple(base) + tuple(rest)
        if mod + (segs[0],) in self.modules:
            return mod + tuple(segs)
        return None

    def _read_uses(self, mod, code):
        for m in USE_DECL.finditer(code):
            line = code.count("\n", 0, m.start()) + 1
            for segs, name in parse_use_tree_text(m.group(1)):
                first = segs[0] if segs else None
                if first and first not in ("crate", "self", "super") and (
                    mod + (first,) not in self.modules
                ) and first in self.bindings[mod]:
                    target = self.bindings[mod][first]
                    absolute = target + tuple(segs[1:]) if target is not None else None
                else:
                    absolute = self._absolute(mod, segs)
                if absolute is None:
                    continue
                if name is None:
                    self.globs[mod].append(absolute)
                else:
                    self.bindings[mod][name] = absolute
                self.refs.append((mod, absolute, line, "use " + "::".join(segs)))

    def _read_refs(self, mod, code):
        # Use declarations are read above; blank them so their paths are not read twice.
        code = USE_DECL.sub(lambda m: "\n" * m.group(0).count("\n"), code)
        for m in INLINE_PATH.finditer(code):
            segs = [s.strip() for s in m.group(1).split("::")]
            absolute = self._absolute(mod, segs)
            if absolute is None:
                continue
            line = code.count("\n", 0, m.start()) + 1
            self.refs.append((mod, absolute, line, "::".join(segs)))

    def resolve(self, segs, seen=None):
        """(module defining the item, whether it was reached through the crate root's names)."""
        seen = seen or set()
        cur = ()
        for i, s in enumerate(segs):
            if cur + (s,) in self.modules:
                cur = cur + (s,)
                continue
            # A name bound in `cur` by a `use`: follow it (re-exports and private imports alike,
            # as child modules may name their parent's imports).
            target = self.bindings.get(cur, {}).get(s)
            if target is not None and (cur, s) not in seen:
                seen.add((cur, s))
                return self.resolve(tuple(target) + tuple(segs[i + 1:]), seen)
            return cur
        return cur

    def edges(self):
        """[(from module, to module, file, line, text)] between distinct modules."""
        out = []
        for mod, absolute, line, text in self.refs:
            target = self.resolve(absolute)
            if target != mod:
                out.append((mod, target, self.modules[mod], line, text))
        return out

    def root_uses(self):
        """(file, line, text) of paths outside the API clients that name the crate root's items."""
        top = {m[0] for m in self.modules if m}
        return [
            (self.modules[mod], line, text)
            for mod, absolute, line, text in self.refs
            if mod and mod[0] not in ROOT_API_CLIENTS and absolute and absolute[0] not in top
        ]


def project(edges):
    """Per folder (module path), the graph among its children with evidence on each edge."""
    graphs = defaultdict(lambda: defaultdict(list))
    for a, b, rel, line, text in edges:
        k = 0
        while k < min(len(a), len(b)) and a[k] == b[k]:
            k += 1
        if k == len(a) or k == len(b):
            continue  # one is the other's ancestor
        parent = a[:k]
        graphs[parent][(a[k], b[k])].append((rel, line, text))
    return graphs


def strongly_connected(nodes, succ):
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in succ.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(comp)

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def shortest_cycle(comp, succ):
    """A shortest cycle through the component's first node, as a list of nodes."""
    comp = set(comp)
    start = sorted(comp)[0]
    prev, frontier, found = {start: None}, [start], None
    while frontier and not found:
        nxt = []
        for v in frontier:
            for w in sorted(succ.get(v, ())):
                if w not in comp:
                    continue
                if w == start:
                    found = v
                    break
                if w not in prev:
                    prev[w] = v
                    nxt.append(w)
            if found:
                break
        frontier = nxt
    path = [found]
    while prev[path[-1]] is not None:
        path.append(prev[path[-1]])
    return list(reversed(path))


def layers(nodes, succ):
    """Nodes by level: 0 imports nothing among them, level n imports only levels below n."""
    level = {}

    def depth(v, trail=()):
        if v in level:
            return level[v]
        if v in trail:
            return 0
        level[v] = 1 + max([depth(w, trail + (v,)) for w in succ.get(v, ())], default=-1)
        return level[v]

    for v in nodes:
        depth(v)
    by = defaultdict(list)
    for v, lv in level.items():
        by[lv].append(v)
    return [sorted(by[k]) for k in sorted(by)]


def name(parent, child):
    return "::".join(parent + (child,)) if parent else child


def self_test():
    """Runs the checks on small made-up crates: each loop and root path must be found, and a
    crate without them must pass. Returns the number of failures."""
    import tempfile

    def check(files):
        with tempfile.TemporaryDirectory() as d:
            for rel, text in files.items():
                os.makedirs(os.path.dirname(os.path.join(d, rel)), exist_ok=True)
                with open(os.path.join(d, rel), "w", encoding="utf-8") as f:
                    f.write(text)
            crate = Crate(d)
            graphs = project(crate.edges())
            loops = []
            for parent, g in graphs.items():
                succ = defaultdict(set)
                for (x, y) in g:
                    succ[x].add(y)
                loops += [sorted(c) for c in strongly_connected(set(succ), succ) if len(c) > 1]
            return loops, [t for _, _, t in crate.root_uses()]

    cases = [
        # A loop that only re-exports show: y names x's item through the folder's mod.rs.
        ("loop through a re-export", {
            "lib.rs": "pub mod p;\n",
            "p/mod.rs": "mod x;\nmod y;\npub use self::x::X;\n",
            "p/x.rs": "pub struct X;\nuse super::y::Y;\n",
            "p/y.rs": "pub struct Y;\nfn g(_: &super::X) {}\n",
        }, [["x", "y"]], []),
        # Across top-level modules, through a chain of re-exports.
        ("loop between top-level modules", {
            "lib.rs": "pub mod a;\npub mod b;\npub use crate::a::Rtt;\n",
            "a/mod.rs": "mod rtt;\npub use self::rtt::Rtt;\nuse crate::b::Cc;\n",
            "a/rtt.rs": "pub struct Rtt;\n",
            "b.rs": "pub struct Cc;\nfn f(_: &crate::a::Rtt) {}\n",
        }, [["a", "b"]], []),
        # A loop among the files of a folder, written with super::.
        ("loop in a folder", {
            "lib.rs": "mod p;\n",
            "p/mod.rs": "mod x;\nmod y;\n",
            "p/x.rs": "use super::y::Y;\npub struct X;\n",
            "p/y.rs": "pub struct Y;\nfn g() -> super::x::X { super::x::X }\n",
        }, [["x", "y"]], []),
        # A parent and its child, and test code, never count; a root name below the API does.
        ("no loop", {
            "lib.rs": "pub mod error;\npub mod p;\npub use crate::error::Error;\n",
            "error.rs": "pub struct Error;\n#[cfg(test)]\nmod tests {\n    use crate::p::T;\n}\n",
            "p/mod.rs": "mod c;\npub struct T;\nuse self::c::f;\n"
                        "#[cfg(test)]\nmod tests;\n",
            "p/c.rs": "use super::T;\nuse crate::Error;\npub fn f() {}\n",
            "p/tests.rs": "use crate::p::T;\n",
            "error/x.rs": "use crate::p::T;\n",
        }, [], ["use crate::Error"]),
    ]
    failures = 0
    for name, files, want_loops, want_root in cases:
        loops, root = check(files)
        if loops != want_loops or root != want_root:
            failures += 1
            print(f"self-test '{name}': loops {loops} (want {want_loops}), "
                  f"root paths {root} (want {want_root})")
    print(f"modgraph self-test: {len(cases) - failures} of {len(cases)} cases pass")
    return failures


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", default=os.path.join(here, "..", "quiche", "src"))
    ap.add_argument("--layers", action="store_true", help="print the top-level modules by layer")
    ap.add_argument("--dot", action="store_true", help="print the top-level graph as Graphviz")
    ap.add_argument("--why", nargs=2, metavar=("FROM", "TO"),
                    help="print the lines behind an edge (module paths as a::b)")
    ap.add_argument("--self-test", action="store_true",
                    help="check the checker on made-up crates with and without loops")
    args = ap.parse_args()
    if args.self_test:
        return 1 if self_test() else 0

    crate = Crate(os.path.normpath(args.src))
    edges = crate.edges()
    graphs = project(edges)

    if args.why:
        a, b = (tuple(x.split("::")) for x in args.why)
        for parent, g in graphs.items():
            for (x, y), ev in sorted(g.items()):
                if parent + (x,) == a and parent + (y,) == b:
                    for rel, line, text in ev:
                        print(f"{rel}:{line}: {text}")
        return 0

    top = graphs.get((), {})
    top_nodes = sorted({m[0] for m in crate.modules if m})
    top_succ = defaultdict(set)
    for (x, y) in top:
        top_succ[x].add(y)
    if args.dot:
        print("digraph quiche {")
        for (x, y) in sorted(top):
            print(f'  "{x}" -> "{y}";')
        print("}")
        return 0
    if args.layers:
        for i, layer in enumerate(layers(top_nodes, top_succ)):
            print(f"{i}: {' '.join(layer)}")
        return 0

    failed = False
    loops = 0
    for parent in sorted(graphs):
        g = graphs[parent]
        succ = defaultdict(set)
        nodes = set()
        for (x, y) in g:
            succ[x].add(y)
            nodes.update((x, y))
        for comp in strongly_connected(nodes, succ):
            if len(comp) < 2:
                continue
            loops += 1
            failed = True
            where = "crate" if not parent else "::".join(parent)
            print(f"import loop in {where}: {' , '.join(sorted(comp))}")
            cyc = shortest_cycle(comp, succ)
            for i, x in enumerate(cyc):
                y = cyc[(i + 1) % len(cyc)]
                ev = g[(x, y)]
                shown = "; ".join(f"{rel}:{line} {text}" for rel, line, text in ev[:3])
                more = f" (+{len(ev) - 3} more)" if len(ev) > 3 else ""
                print(f"  {name(parent, x)} -> {name(parent, y)}: {shown}{more}")
    root = crate.root_uses()
    if root:
        failed = True
        print(f"{len(root)} path(s) below the public API through the crate root's names "
              "(name the defining module, e.g. crate::error::Error):")
        for rel, line, text in root:
            print(f"  {rel}:{line}: {text}")
    n_edges = sum(len(g) for g in graphs.values())
    print(f"modgraph: {len(crate.modules)} modules, {n_edges} edges among siblings, "
          f"{loops} loop(s), {len(root)} crate-root path(s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
