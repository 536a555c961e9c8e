#!/usr/bin/env python3
"""Checks that no two of a library's source files depend on each other.

    check_layers.py OBJECTS SRC_DIR

OBJECTS holds the objects of SRC_DIR's C files: an archive (libgtstore's
static library with src/, the extension's objects gathered by Meson with
python/gtstore/_ext/) or a directory of them (the extension's build
directory of a pip install, `_gtstore.*.so.p`).

A file depends on another where it calls a function or reads an object the
other defines (nm of the static library's objects: its undefined symbols
against the others' definitions), and where it includes the other's header
(an #include "..." of SRC_DIR). A cycle in either graph, direct or through
other files, fails, naming its files and the symbols or includes that make
it: each file may use only the layers below it.
"""
import collections
import pathlib
import re
import subprocess
import sys


def source_of(member, stems):
    """The C file an object is compiled from: Meson names it after the
    file's path (src_layout.c.o, _ext_storage.c.o), so the longest file
    name that ends the object's name."""
    name = pathlib.Path(member).name.removesuffix(".o").removesuffix(".c")
    found = [s for s in stems if name == s or name.endswith("_" + s)]
    return max(found, key=len) if found else name


def symbol_graph(objects, src):
    paths = sorted(map(str, objects.glob("*.o"))) if objects.is_dir() else [str(objects)]
    if objects.is_dir() and len(paths) < 2:
        sys.exit(f"check_layers.py: {objects} holds {len(paths)} objects, not a library's")
    # nm names each object ("name.o:") of an archive, and each of several files
    out = subprocess.run(["nm", *paths], check=True, capture_output=True, text=True).stdout
    stems = {p.stem for p in src.glob("*.c")}
    defined, undefined, member = {}, collections.defaultdict(set), None
    for line in out.splitlines():
        if line.endswith(".o:"):
            member = source_of(line[:-1], stems)
            undefined[member]
        elif member and line.strip():
            parts = line.split()
            if len(parts) == 2 and parts[0] == "U":
                undefined[member].add(parts[1])
            elif len(parts) == 3 and parts[1] in "TDRBCV":
                defined[parts[2]] = member
    edges = collections.defaultdict(dict)
    for member, names in undefined.items():
        for name in sorted(names):
            owner = defined.get(name)
            if owner and owner != member:
                edges[member].setdefault(owner, name)
    return set(undefined), edges


def include_graph(src):
    edges = collections.defaultdict(dict)
    files = sorted(p for p in src.iterdir() if p.suffix in (".c", ".h"))
    for path in files:
        for target in re.findall(r'^#include "([^"/]+)"', path.read_text(), re.M):
            if (src / target).exists():
                edges[path.name][target] = "#include"
    return {p.name for p in files}, edges


def cycles(nodes, edges):
    """The strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return found


def main():
    archive, src = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    failed = False
    for what, (nodes, edges) in (("symbols", symbol_graph(archive, src)),
                                 ("includes", include_graph(src))):
        found = cycles(nodes, edges)
        print(f"{what}: {len(nodes)} files, {len(found)} cycles")
        for component in found:
            failed = True
            print(f"  cycle among {', '.join(component)}:")
            for a in component:
                for b, why in sorted(edges[a].items()):
                    if b in component:
                        print(f"    {a} -> {b} ({why})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
