"""The import graph between corpustok's own modules: cycles and upward imports.

    python tools/import_graph.py            summary: modules, edges, cycles, upward imports
    python tools/import_graph.py --edges    also every edge (module-level and function-local)
    python tools/import_graph.py --local    also every function-local import (project or not),
                                            with the comment that gives its reason

It reads the source with ``ast`` (nothing is imported). The four top-level folders are the
layers, lowest first: ``kernels/`` (corpustok.kernels) < ``schemas/`` (corpustok.schemas) <
``corpustok/`` < ``pipeline/`` (corpustok.pipeline). An import is *function-local* when it sits
inside a function body (it runs on the call, not at import time); every other import is
module-level (including ones under ``if``/``try`` at the top level). Cycles are the strongly
connected components (Tarjan) of the graph counting both kinds; an upward import is one from a
lower layer to a higher one, or inside ``pipeline/`` from a lower subject folder to a higher
one (:data:`PIPELINE_ORDER`). ``from pkg import name`` counts as an import of ``pkg.name`` when
that is a module, else of ``pkg``. The exit status is 1 when there is a cycle or an upward
import, so CI or a test can hold the line.
"""
import argparse
import ast
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# folder -> (import prefix, layer rank, layer name)
LAYERS = {
    "kernels": ("corpustok.kernels", 0, "kernels"),
    "schemas": ("corpustok.schemas", 1, "schemas"),
    "corpustok": ("corpustok", 2, "corpustok"),
    "pipeline": ("corpustok.pipeline", 3, "pipeline"),
}

# pipeline/'s subject folders and modules, lowest first: what flows one way (docs/architecture.md)
PIPELINE_ORDER = (("files",), ("config", "batches"), ("read",), ("encode",), ("output",),
                  ("runtime",), ("jobs", "report"), ("cli",))


def pipeline_rank(module):
    """The rank of a ``corpustok.pipeline`` module's subject in :data:`PIPELINE_ORDER` (-1:
    the package itself, which imports nothing of its own; None: a module the order does not
    place, which the summary names)."""
    parts = module.split(".")
    if len(parts) < 3:
        return -1
    return next((i for i, names in enumerate(PIPELINE_ORDER) if parts[2] in names), None)


def project_modules(root=ROOT):
    """{module name: (path, layer rank, layer name)} for every .py file of the four folders."""
    mods = {}
    for folder, (prefix, rank, layer) in LAYERS.items():
        base = os.path.join(root, folder)
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            rel = os.path.relpath(dirpath, base)
            parts = [] if rel == "." else rel.split(os.sep)
            for name in sorted(filenames):
                if not name.endswith(".py"):
                    continue
                stem = name[:-3]
                mod = ".".join([prefix] + parts + ([] if stem == "__init__" else [stem]))
                mods[mod] = (os.path.join(dirpath, name), rank, layer)
    return mods


class _Imports(ast.NodeVisitor):
    """Collects (line, dotted targets, function-local?) for every import statement."""

    def __init__(self, package):
        self.package = package  # for relative imports
        self.depth = 0
        self.found = []

    def _function(self, node):
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    def visit_Import(self, node):
        self.found.append((node.lineno, [a.name for a in node.names], self.depth > 0, None))

    def visit_ImportFrom(self, node):
        base = node.module or ""
        if node.level:
            parts = self.package.split(".")
            parts = parts[:len(parts) - node.level + 1]
            base = ".".join(parts + ([base] if base else []))
        self.found.append((node.lineno, [base], self.depth > 0, [a.name for a in node.names]))


def _resolve(name, mods):
    """The project module an import of ``name`` loads (its nearest enclosing module), or None."""
    while name:
        if name in mods:
            return name
        name = name.rpartition(".")[0]
    return None


def import_edges(mods):
    """[(source, target, line, local)] between project modules, one per imported module."""
    edges = []
    for mod, (path, _, _) in mods.items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        package = mod if path.endswith("__init__.py") else mod.rpartition(".")[0]
        v = _Imports(package)
        v.visit(tree)
        for line, bases, local, names in v.found:
            targets = set()
            for base in bases:
                if names is None:
                    t = _resolve(base, mods)
                    if t:
                        targets.add(t)
                    continue
                for n in names:
                    t = _resolve(f"{base}.{n}", mods) if f"{base}.{n}" in mods else _resolve(
                        base, mods)
                    if t:
                        targets.add(t)
            for t in sorted(targets):
                if t != mod:
                    edges.append((mod, t, line, local))
    return edges


def local_imports(mods):
    """[(module, line, statement text, reason comment)] for every function-local import."""
    out = []
    for mod, (path, _, _) in mods.items():
        with open(path, encoding="utf-8") as f:
            src = f.read()
        lines = src.splitlines()
        v = _Imports(mod)
        v.visit(ast.parse(src, path))
        for line, _, local, _ in v.found:
            if not local:
                continue
            text = lines[line - 1].strip()
            reason = text.partition("#")[2].strip() if "#" in text else ""
            k = line - 2  # else: the comment of the block of imports it is in, or above it
            while not reason and k >= 0 and lines[k].strip().startswith(("from ", "import ",
                                                                          "#")):
                above = lines[k].strip()
                reason = above.lstrip("# ") if above.startswith("#") else \
                    above.partition("#")[2].strip()
                k -= 1
            out.append((mod, line, text.partition("#")[0].strip(), reason))
    return out


def strongly_connected(nodes, edges):
    """Tarjan's algorithm (iterative): the components with more than one module."""
    graph = {n: [] for n in nodes}
    for s, t, _, _ in edges:
        graph[s].append(t)
    index, low, on_stack, stack, comps = {}, {}, set(), [], []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, it = work[-1]
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(graph[nxt])))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        m = stack.pop()
                        on_stack.discard(m)
                        comp.append(m)
                        if m == node:
                            break
                    if len(comp) > 1:
                        comps.append(sorted(comp))
    return comps


def depth(nodes, edges, comps):
    """The longest chain of imports (in modules, cycles collapsed to one node)."""
    rep = {n: n for n in nodes}
    for comp in comps:
        for m in comp:
            rep[m] = comp[0]
    graph = {}
    for s, t, _, _ in edges:
        if rep[s] != rep[t]:
            graph.setdefault(rep[s], set()).add(rep[t])
    memo = {}

    def longest(n):
        if n not in memo:
            memo[n] = 1 + max((longest(t) for t in graph.get(n, ())), default=0)
        return memo[n]

    sys.setrecursionlimit(10000)
    return max((longest(rep[n]) for n in nodes), default=0)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--edges", action="store_true", help="list every edge")
    ap.add_argument("--local", action="store_true", help="list every function-local import")
    ap.add_argument("--root", default=ROOT, help="repository root (default: this checkout)")
    ap.add_argument("--layer", help="count only modules of this layer (e.g. pipeline)")
    args = ap.parse_args(argv)
    mods = project_modules(args.root)
    edges = import_edges(mods)
    if args.layer:
        keep = {m for m, v in mods.items() if v[2] == args.layer}
        mods = {m: v for m, v in mods.items() if m in keep}
        edges = [e for e in edges if e[0] in keep and e[1] in keep]
    nodes = sorted(mods)
    local = [e for e in edges if e[3]]
    comps = strongly_connected(nodes, edges)
    comps_top = strongly_connected(nodes, [e for e in edges if not e[3]])
    upward = [e for e in edges if mods[e[0]][1] < mods[e[1]][1]]
    unplaced = sorted(m for m, v in mods.items() if v[2] == "pipeline" and
                      pipeline_rank(m) is None)
    inner = [e for e in edges if mods[e[0]][2] == mods[e[1]][2] == "pipeline" and
             None not in (pipeline_rank(e[0]), pipeline_rank(e[1])) and
             pipeline_rank(e[0]) < pipeline_rank(e[1])]
    locals_all = [x for x in local_imports(mods)]
    pairs = {(s, t) for s, t, _, _ in edges}
    print(f"{len(nodes)} modules, {len(pairs)} module pairs imported "
          f"({len(edges) - len(local)} module-level and {len(local)} function-local import "
          f"edges); {len(locals_all)} function-local import statements in "
          f"{len({m for m, *_ in locals_all})} files "
          f"({sum(1 for *_, r in locals_all if not r)} without a reason comment); "
          f"import depth {depth(nodes, edges, comps)}")
    print(f"cycles counting function-local imports: {len(comps)}"
          + "".join(f"\n  {len(c)} modules: {' '.join(c)}" for c in comps))
    print(f"cycles among module-level imports: {len(comps_top)}"
          + "".join(f"\n  {len(c)} modules: {' '.join(c)}" for c in comps_top))
    print(f"upward imports between layers: {len(upward)}" + "".join(
        f"\n  {s}:{line} -> {t} ({mods[s][2]} -> {mods[t][2]}"
        f"{', function-local' if loc else ''})" for s, t, line, loc in upward))
    print(f"upward imports between pipeline's subject folders: {len(inner)}" + "".join(
        f"\n  {s}:{line} -> {t}{' (function-local)' if loc else ''}"
        for s, t, line, loc in inner))
    if unplaced:
        print(f"pipeline modules outside PIPELINE_ORDER (not checked): {len(unplaced)}")
    if args.edges:
        print("edges:")
        for s, t, line, loc in sorted(edges):
            print(f"  {s}:{line} -> {t}{'  (function-local)' if loc else ''}")
    if args.local:
        print("function-local imports:")
        for mod, line, text, reason in sorted(locals_all):
            print(f"  {mod}:{line}: {text}" + (f"  # {reason}" if reason else ""))
    return 1 if comps or upward or inner or unplaced else 0


if __name__ == "__main__":
    sys.exit(main())
