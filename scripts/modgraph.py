#!/usr/bin/env python3
"""Checks the module graph of the workspace's crates: no import cycles, layers that hold.

A node is a module with a file of its own (`lib.rs`, `a.rs`, `a/mod.rs`); inline modules belong
to their file, and test-only modules (`#[cfg(test)] mod ...`) are left out. An edge `a -> b`
means code in `a` names an item defined in `b`: by a `use`, or by a path written inline
(`crate::x::Y`, `super::Y`). A path is followed through re-exports to the module that defines
the item, so a facade's `pub use` is not an edge unless the facade's own code uses the name.
Declaring a child (`mod b;`) is not an edge.

Checks, per crate:
  * cycles: a module and what is under it are one unit to the modules beside it. For every
    module, its children's subtrees must not depend on each other in a circle: `x` depends on
    `y` when a module in `x`'s subtree names one in `y`'s. (A parent and its own children may
    use each other: a parent re-exports its children, a child uses its parent's items.) A
    circle is reported with the edges that make it;
  * layers: where `LAYERS` gives a crate's layers (a top-level module's rank), a module may use
    only modules of its own rank or lower.

Usage: python3 scripts/modgraph.py [--graph CRATE | --self-test]   (exit status 1 when a check
fails)
"""

import os
import re
import sys
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Crate name as other crates write it, and its source root.
CRATES = {
    "processors": "src",
    "processors_runtime": "processors-runtime/src",
    "processors_macros": "processors-macros/src",
    "processors_builtins": "builtins/src",
    "processors_providers": "providers/src",
    "processors_config": "config/src",
    "processors_gateway": "gateway/src",
}

# The layers of docs/architecture.md: a top-level module's rank; a module may use its own rank
# and lower ranks only. Modules a crate's table leaves out are not checked for layers.
LAYERS = {
    "processors_runtime": {
        # data
        "message": 0, "chunk": 0, "context": 0, "step": 0, "tripwire": 0, "error": 0,
        "model": 0, "tool": 0,
        "processor": 1,
        "memory": 2,
        "runner": 3,
        "workflow": 4, "shadow": 4,
        "agent": 5, "trace": 5,
        "testing": 6,
        "__private": 7,
    },
    "processors_builtins": {
        # the shared core, on the ground floor
        "config": 0, "redact": 0, "tokenizer": 0, "timer": 0, "stream_text": 0,
        # the families
        "guards": 1, "detector": 1, "limits": 1, "context": 1, "commands": 1, "files": 1,
        "shape": 1, "compression": 1, "memory": 1, "tools": 1, "recovery": 1,
        "response_cache": 1, "storage": 1,
        # what knows every family: the stages they run at, and the evaluation of guards
        "order": 2, "eval": 2,
    },
}

ITEM = re.compile(
    r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:unsafe\s+|async\s+|const\s+|extern\s+\"C\"\s+)*"
    r"(?:struct|enum|trait|fn|type|const|static|union|mod)\s+(r#)?(\w+)",
    re.M,
)
MACRO = re.compile(r"macro_rules!\s*(\w+)")
USE = re.compile(r"(?<![\w:])(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);")
INLINE = re.compile(r"(?<![\w:])(crate|super|self)((?:::\w+)+)")
# `#[cfg(test)]`, `#[cfg(all(test, feature = "x"))]`: test-only (not `not(test)`)
CFG_TEST = r"#\[cfg\((?:test|all\((?:[^()\]]*,\s*)?test\b[^\]]*)\)\]"
TEST_MOD = re.compile(CFG_TEST + r"\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*([;{])")
CFG_TEST_ITEM = re.compile(CFG_TEST + r"\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?use\s+[^;]+;")
MOD_DECL = re.compile(r"(?:^|\n)\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;")
PATH_ATTR = re.compile(r"#\[path\s*=\s*\"([^\"]+)\"\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;")


def strip(src):
    """The source without comments, string and char literals (newlines kept for line numbers)."""
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
        elif src.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append("\n" * src.count("\n", i, j))
            i = j
        elif c == "r" and re.match(r'r#*"', src[i:i + 10]) and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_")):
            hashes = re.match(r"r(#*)\"", src[i:]).group(1)
            end = src.find('"' + hashes, i + 2 + len(hashes))
            end = n if end < 0 else end + 1 + len(hashes)
            out.append('""' + "\n" * src.count("\n", i, end))
            i = end
        elif c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            out.append('""' + "\n" * src.count("\n", i, j))
            i = j + 1
        elif c == "'" and re.match(r"'(\\.|[^\\'])'|'\\u\{[0-9a-fA-F]+\}'|'\\x[0-9a-fA-F]{2}'", src[i:i + 12]):
            m = re.match(r"'(\\.|[^\\'])'|'\\u\{[0-9a-fA-F]+\}'|'\\x[0-9a-fA-F]{2}'", src[i:i + 12])
            out.append("' '")
            i += len(m.group(0))
        else:
            out.append(c)
            i += 1
    return "".join(out)


def drop_block(text, start):
    """`text` with the brace block that opens at or after `start` blanked (newlines kept)."""
    open_at = text.index("{", start)
    depth, j = 0, open_at
    while j < len(text):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                break
        j += 1
    blank = re.sub(r"[^\n]", " ", text[start:j + 1])
    return text[:start] + blank + text[j + 1:]


class Module:
    def __init__(self, path, file):
        self.path = path  # tuple of segments below the crate root
        self.file = file
        self.children = {}  # name -> Module
        self.items = set()
        self.reexports = []  # (name, target path tuple, glob)
        self.refs = []  # (path tuple as written, line, via_pub_use name or None)
        self.code = ""


def parse_use_tree(tree):
    """`a::{b, c::d as e, f::*}` -> [(['a','b'], 'b'), (['a','c','d'], 'e'), (['a','f','*'], '*')]."""
    tree = re.sub(r"\s+", "", tree)
    out = []

    def walk(prefix, s):
        parts, depth, cur = [], 0, ""
        for ch in s:
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
                continue
            depth += ch == "{"
            depth -= ch == "}"
            cur += ch
        if cur:
            parts.append(cur)
        for p in parts:
            if not p:
                continue
            if "{" in p:
                head, rest = p.split("{", 1)
                head = [x for x in head.split("::") if x]
                walk(prefix + head, rest[:-1])
            else:
                segs = [x for x in p.split("::") if x]
                local = segs[-1] if segs else None
                if segs and segs[-1] == "self":
                    segs = segs[:-1]
                    local = segs[-1] if segs else None
                out.append((prefix + segs, local))
    walk([], tree)
    return out


def use_paths(tree):
    """The paths of a use tree, with their local names; `as` aliases honoured."""
    aliases = {}

    def repl(m):
        key = f"__alias{len(aliases)}"
        aliases[key] = m.group(2)
        return m.group(1) + key

    spaced = re.sub(r"([\w*])\s+as\s+(\w+)", repl, tree)
    out = []
    for segs, name in parse_use_tree(spaced):
        fixed, local = [], name
        for s in segs:
            if "__alias" in s:
                base, key = s.split("__alias", 1)
                fixed.append(base)
                local = aliases["__alias" + key]
            else:
                fixed.append(s)
        out.append((fixed, local))
    return out


def load_crate(crate, src_root):
    root_dir = os.path.join(ROOT, src_root)
    root_file = os.path.join(root_dir, "lib.rs")
    if not os.path.exists(root_file):
        root_file = os.path.join(root_dir, "main.rs")
    modules = {}

    def load(path, file):
        mod = Module(path, file)
        modules[path] = mod
        with open(file, encoding="utf-8") as f:
            text = strip(f.read())
        # test-only modules and imports leave the graph
        test_files = set()
        while True:
            m = TEST_MOD.search(text)
            if not m:
                break
            if m.group(2) == "{":
                text = drop_block(text, m.start())
            else:
                test_files.add(m.group(1))
                text = text[:m.start()] + re.sub(r"[^\n]", " ", m.group(0)) + text[m.end():]
        text = CFG_TEST_ITEM.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
        mod.code = text
        mod.items.update(m.group(2) for m in ITEM.finditer(text))
        mod.items.update(MACRO.findall(text))
        here = os.path.dirname(file)
        if not (file.endswith("mod.rs") or file == root_file):
            here = os.path.join(here, os.path.splitext(os.path.basename(file))[0])
        declared = {}
        for m in PATH_ATTR.finditer(text):
            declared[m.group(2)] = os.path.join(os.path.dirname(file), m.group(1))
        for m in MOD_DECL.finditer(text):
            name = m.group(1)
            if name in test_files or name in declared:
                continue
            for cand in (os.path.join(here, name + ".rs"), os.path.join(here, name, "mod.rs")):
                if os.path.exists(cand):
                    declared[name] = cand
                    break
        for name, child_file in declared.items():
            if name in test_files:
                continue
            mod.children[name] = load(path + (name,), child_file)
        for m in USE.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            public = m.group(1) is not None
            for segs, local in use_paths(m.group(2)):
                if public:
                    mod.reexports.append((local, tuple(segs)))
                    # a re-export is an edge only where this module's code uses the name
                    rest = text[:m.start()] + text[m.end():]
                    if local != "*" and local and re.search(r"(?<![\w:])" + re.escape(local) + r"\b", rest):
                        mod.refs.append((tuple(segs), line))
                else:
                    mod.refs.append((tuple(segs), line))
        no_use = USE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
        for m in INLINE.finditer(no_use):
            line = no_use.count("\n", 0, m.start()) + 1
            mod.refs.append(((m.group(1),) + tuple(m.group(2).split("::")[1:]), line))
        return mod

    load((), root_file)
    return modules


def absolute(modules, mod, segs):
    """`segs` as written in `mod`, as a path from the crate root, or None when external."""
    if not segs:
        return None
    head = segs[0]
    if head == "crate":
        return tuple(segs[1:])
    if head in ("super", "self"):
        base = list(mod.path)
        i = 0
        while i < len(segs) and segs[i] in ("super", "self"):
            if segs[i] == "super":
                base = base[:-1]
            i += 1
        return tuple(base) + tuple(segs[i:])
    if head in mod.children:
        return mod.path + tuple(segs)
    if head in mod.items:
        return mod.path + tuple(segs)
    return None


def resolve(modules, path, seen=None):
    """The module that defines the item at `path` (followed through re-exports), or, for an
    item the parser does not see (a macro's, a derive's), the module it is named in."""
    top = seen is None
    seen = set() if seen is None else seen
    if path in seen:
        return None
    seen.add(path)
    cur = modules[()]
    i = 0
    while i < len(path) and path[i] in cur.children:
        cur = cur.children[path[i]]
        i += 1
    if i == len(path) or path[i] == "*":
        return cur.path
    name = path[i]
    if name in cur.items:
        return cur.path
    for local, target in cur.reexports:
        if local == name or local == "*":
            full = absolute(modules, cur, list(target) if local == name else list(target[:-1]) + [name])
            if full is None:
                continue
            found = resolve(modules, full + tuple(path[i + 1:]) if local == name else full, seen)
            if found is not None:
                return found
    return cur.path if top else None


def exported(modules, path, seen=None):
    """The names a glob import of the module at `path` brings: its items and re-exports."""
    seen = set() if seen is None else seen
    if path in seen or path not in modules:
        return set()
    seen.add(path)
    mod = modules[path]
    names = set(mod.items) | set(mod.children)
    for local, target in mod.reexports:
        if local == "*":
            full = absolute(modules, mod, list(target[:-1]))
            if full is not None:
                names |= exported(modules, full, seen)
        elif local:
            names.add(local)
    return names


def expand_globs(modules, mod):
    """The refs of `mod` with each glob import replaced by the names the module's code uses
    from it (every identifier of the code that the glob brings)."""
    words = None
    out = []
    for segs, line in mod.refs:
        if not segs or segs[-1] != "*":
            out.append((segs, line))
            continue
        full = absolute(modules, mod, list(segs[:-1]))
        if full is None:
            continue
        if words is None:
            words = set(re.findall(r"\b[A-Za-z_]\w*\b", mod.code))
        for name in sorted(exported(modules, full) & words):
            out.append((("crate",) + full + (name,), line))
    return out


def graph(modules):
    edges = defaultdict(dict)  # from -> to -> line
    for mod in modules.values():
        for segs, line in expand_globs(modules, mod):
            full = absolute(modules, mod, list(segs))
            if full is None:
                continue
            to = resolve(modules, full)
            if to is None or to == mod.path:
                continue
            # a module naming its own descendant, or its ancestor's item it sits in, counts
            edges[mod.path].setdefault(to, line)
    return edges


def sccs(nodes, edges):
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                strong(w)
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
    for v in nodes:
        if v not in index:
            strong(v)
    return out


def cycle_in(comp, edges):
    """A shortest cycle through the component's first module, as a list of modules."""
    members = set(comp)
    start = sorted(comp)[0]
    prev, frontier = {start: None}, [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in edges.get(v, {}):
                if w == start:
                    path = [v]
                    while prev[path[-1]] is not None:
                        path.append(prev[path[-1]])
                    return list(reversed(path)) + [start]
                if w in members and w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    return [start]


def name(crate, path):
    return "::".join((crate,) + path)


def check(root, crates, layers, want_graph=None):
    """The problems of the crates' module graphs, one line each (with their witnesses)."""
    global ROOT
    ROOT = root
    problems = []
    for crate, src in crates.items():
        modules = load_crate(crate, src)
        edges = graph(modules)
        if want_graph == crate:
            for a in sorted(edges):
                for b in sorted(edges[a]):
                    print(f"{name(crate, a)} -> {name(crate, b)}  ({where(modules, a, edges[a][b])})")
        problems += cycles(crate, modules, edges)
        ranks = layers.get(crate)
        if ranks:
            problems += broken_layers(crate, modules, edges, ranks)
    return problems


def where(modules, module, line):
    return f"{os.path.relpath(modules[module].file, ROOT)}:{line}"


def cycles(crate, modules, edges):
    out = []
    for parent in sorted(modules):
        kids = modules[parent].children
        if len(kids) < 2:
            continue
        depth = len(parent)
        # the children's subtrees, and the edges between them with one witness each
        between, witness = defaultdict(dict), {}
        for a, targets in edges.items():
            if len(a) <= depth or a[:depth] != parent:
                continue
            for b, line in targets.items():
                if len(b) <= depth or b[:depth] != parent or a[depth] == b[depth]:
                    continue
                x, y = parent + (a[depth],), parent + (b[depth],)
                if y not in between[x]:
                    between[x][y] = line
                    witness[(x, y)] = (a, b, line)
        for comp in sccs(sorted(parent + (k,) for k in kids), between):
            if len(comp) < 2:
                continue
            cyc = cycle_in(comp, between)
            text = f"cycle in {crate} under {name(crate, parent)}: {' -> '.join(c[-1] for c in cyc)}"
            for x, y in zip(cyc, cyc[1:]):
                a, b, line = witness[(x, y)]
                text += f"\n    {name(crate, a)} -> {name(crate, b)}   {where(modules, a, line)}"
            out.append(text)
    return out


def broken_layers(crate, modules, edges, ranks):
    out = []
    for a in sorted(edges):
        for b in sorted(edges[a]):
            if not a or not b:
                continue
            ra, rb = ranks.get(a[0]), ranks.get(b[0])
            if ra is not None and rb is not None and rb > ra:
                out.append(f"layer broken in {crate}: {name(crate, a)} (layer {ra}) uses "
                           f"{name(crate, b)} (layer {rb})   {where(modules, a, edges[a][b])}")
    return out


def self_test():
    """The checks on small crates written for the purpose: each finds what it must, and only
    that."""
    import tempfile

    def crate(files):
        root = tempfile.mkdtemp(prefix="modgraph-")
        for path, text in files.items():
            full = os.path.join(root, "src", path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w", encoding="utf-8") as f:
                f.write(text)
        return root

    cases = [
        # siblings naming each other: a cycle
        ("sibling cycle", {
            "lib.rs": "mod a;\nmod b;\n",
            "a.rs": "use crate::b::B;\npub struct A;\n",
            "b.rs": "pub struct B;\npub fn f() -> crate::a::A { crate::a::A }\n",
        }, {}, ["cycle in t under t: a -> b -> a"]),
        # a parent and its child using each other, a facade re-export: no problem
        ("parent and child", {
            "lib.rs": "mod a;\npub use a::A;\n",
            "a/mod.rs": "mod inner;\npub use inner::A;\npub struct Shared;\n",
            "a/inner.rs": "use super::Shared;\npub struct A(Shared);\n",
        }, {}, []),
        # a cycle through a glob import and a re-export, between cousins
        ("glob and re-export", {
            "lib.rs": "mod x;\nmod y;\n",
            "x/mod.rs": "mod deep;\npub use deep::*;\n",
            "x/deep.rs": "pub struct Deep;\nfn g(_: crate::y::Y) {}\n",
            "y.rs": "use crate::x::*;\npub struct Y(Deep);\n",
        }, {}, ["cycle in t under t: x -> y -> x"]),
        # test-only code, comments and strings name nothing
        ("tests and comments", {
            "lib.rs": "mod a;\nmod b;\n",
            "a.rs": "use crate::b::B;\npub struct A;\n",
            "b.rs": "pub struct B;\n// crate::a::A\nconst S: &str = \"crate::a::A\";\n"
                    "#[cfg(test)]\nmod tests {\n    use crate::a::A;\n}\n"
                    "#[cfg(all(test, feature = \"x\"))]\nmod more;\n",
            "b/more.rs": "use crate::a::A;\n",
        }, {}, []),
        # a lower layer naming a higher one
        ("layer", {
            "lib.rs": "mod data;\nmod top;\n",
            "data.rs": "pub struct D;\npub fn f() { let _ = crate::top::T; }\n",
            "top.rs": "pub struct T;\n",
        }, {"t": {"data": 0, "top": 1}}, [
            "layer broken in t: t::data (layer 0) uses t::top (layer 1)",
        ]),
    ]
    failed = 0
    for title, files, layers, expected in cases:
        root = crate(files)
        found = [p.split("\n")[0].split("   ")[0] for p in check(root, {"t": "src"}, layers)]
        if found != expected:
            failed += 1
            print(f"self-test `{title}`: expected {expected}, found {found}")
    print(f"self-test: {len(cases) - failed} of {len(cases)} cases hold")
    return 1 if failed else 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    want_graph = sys.argv[2] if len(sys.argv) > 2 and sys.argv[1] == "--graph" else None
    problems = check(ROOT, CRATES, LAYERS, want_graph)
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} problem(s) in the module graph")
        return 1
    print("module graph: no cycles, layers hold")
    return 0


if __name__ == "__main__":
    sys.exit(main())
