#!/usr/bin/env python3
"""Import cycles between the files of one crate's src/ directory.

Reads every `.rs` file, takes the modules it names through `super::`, `crate::` (in `use` lines
and inline paths), and reports each strongly connected group of files larger than --max (2 by
default: two files that use each other are tolerated, a longer circle is not). Exit status 1
when there is one.

    scripts/module_cycles.py crates/store/src [--max 2]
"""

import argparse
import pathlib
import re
import sys

PATH = re.compile(r"\b(?:crate|super)::((?:super::)*)([a-z_][a-z0-9_]*)")


def module_of(src: pathlib.Path, file: pathlib.Path) -> str:
    """`a/b.rs` -> `a::b`; `lib.rs` -> `` (the crate root); `a/mod.rs` -> `a`."""
    parts = list(file.relative_to(src).with_suffix("").parts)
    if parts[-1] in ("lib", "main", "mod"):
        parts.pop()
    return "::".join(parts)


def imports(src: pathlib.Path, file: pathlib.Path, modules: set) -> set:
    here = module_of(src, file)
    text = re.sub(r"//[^\n]*", "", file.read_text())
    # Unit tests import their own parent; they are no part of the module graph.
    text = text.split("#[cfg(test)]")[0]
    found = set()
    for m in PATH.finditer(text):
        head = m.group(0).split("::")[0]
        ups = m.group(1).count("super::")
        if head == "crate":
            base = []
        else:
            # `super` from `a/b.rs` is `a`; from the crate root's children, the root.
            base = here.split("::")[: -(ups + 1)] if here else []
        target = "::".join(base + [m.group(2)])
        while target and target not in modules:
            target = "::".join(target.split("::")[:-1])
        if target != here and target in modules:
            found.add(target)
    return found


def cycles(graph: dict) -> list:
    """Tarjan's strongly connected components, each as a sorted list."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            out.append(sorted(group))

    sys.setrecursionlimit(10_000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("src", type=pathlib.Path)
    parser.add_argument("--max", type=int, default=2)
    args = parser.parse_args()
    files = sorted(args.src.rglob("*.rs"))
    modules = {module_of(args.src, f): f for f in files}
    graph = {m: imports(args.src, f, set(modules)) for m, f in modules.items()}
    # The crate root declares every module; it is not an import.
    graph[""] = set()
    for g in graph.values():
        g.discard("")
    bad = [g for g in cycles(graph) if len(g) > args.max]
    for g in bad:
        print(f"cycle of {len(g)} files: " + " -> ".join(g))
    if not bad:
        print(f"no import cycle larger than {args.max} files in {args.src}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
