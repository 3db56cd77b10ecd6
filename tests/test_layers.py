"""The package's layering, pinned (issue 26, item 3).

The import graph of src/veriloop is read with ast, so it is the code's own word, not
what a run happened to import: every import statement is an edge, those inside
functions too (an import deferred to a call still ties the two modules together); only
an `if TYPE_CHECKING:` block is exempt, since it never runs. An edge to a package the
importer lies in is dropped: Python imports it before the importer in any case.

Pinned: no cycle anywhere; the ground floor (records.py) imports nothing of veriloop;
nothing under experiment/ imports the cluster (its executor is found by name, see
experiment/executor.py); the cluster imports no private name of experiment/, runs/ or
stats/ and not the engine (it sees the experiment through the executor seam and public
records only); runs/ (run directories) and stats/ (statistics over records) never import
experiment/ (the matrix) or the cluster, and stats/ never imports runs/. A module kept at
an old path for one release (a shim: `__moved_to__ = ...`) is no part of the picture.
"""

from __future__ import annotations

import ast
import functools
from collections import deque
from pathlib import Path

import veriloop

SRC = Path(veriloop.__file__).parent


def modules(root: Path) -> dict[str, tuple[Path, bool]]:
    """Every module below `root` (a package directory) by dotted name, with whether it is a package."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = [root.name, *path.relative_to(root).with_suffix("").parts]
        package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if package else parts)] = (path, package)
    return found


# A statement's ancestors are statements, except handlers and match cases: walking these
# alone meets every import (a statement) without descending into the expressions, most of
# a tree's nodes, and in ast.walk's breadth-first order, since a node keeps its depth.
_STATEMENT_NODES = (ast.stmt, ast.excepthandler, ast.match_case)


def _is_type_checking(test: ast.expr) -> bool:
    return ast.unparse(test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")


# Several tests read each module's imports: parsing was half of the module's time. The
# imports are kept, not the trees (holding every tree made each garbage collection slower);
# each file is parsed once for both readings and for is_shim.
@functools.cache
def _module_facts(path: Path) -> tuple[tuple[tuple[ast.Import | ast.ImportFrom, bool], ...], bool]:
    """The module's import statements in ast.walk's order, each with whether it lies inside
    `if TYPE_CHECKING:` (or `typing.TYPE_CHECKING`); and whether the module is a shim."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    shim = any(isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__moved_to__"
                                                    for t in node.targets)
               for node in tree.body)
    found = []
    queue: deque[tuple[ast.AST, bool]] = deque([(tree, False)])
    while queue:
        node, under = queue.popleft()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append((node, under))
        guarded = {id(s) for s in node.body} if isinstance(node, ast.If) and _is_type_checking(node.test) else ()
        queue.extend((child, under or id(child) in guarded)
                     for child in ast.iter_child_nodes(node) if isinstance(child, _STATEMENT_NODES))
    return tuple(found), shim


@functools.cache
def import_statements(name: str, path: Path, package: bool, *, type_checking: bool = False,
                      ) -> tuple[tuple[str, list[str], int], ...]:
    """Each import of the module: (the module it names, the names it takes, line); relative
    imports resolved. Statements under TYPE_CHECKING are left out unless `type_checking`."""
    here = name if package else name.rpartition(".")[0]
    found = []
    for node, under in _module_facts(path)[0]:
        if under and not type_checking:
            continue
        if isinstance(node, ast.Import):
            found += [(alias.name, [], node.lineno) for alias in node.names]
        else:
            if node.level:
                base = here.split(".")[: len(here.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.append((target, [alias.name for alias in node.names], node.lineno))
    return tuple(found)


@functools.cache
def import_graph(root: Path) -> dict[str, dict[str, int]]:
    """Module -> {module it imports: the line of the first such import}, within `root`'s package."""
    mods = modules(root)
    graph: dict[str, dict[str, int]] = {name: {} for name in mods}
    for name, (path, package) in mods.items():
        for target, names, line in import_statements(name, path, package):
            # `from pkg import sub` imports the submodule; `from mod import name` the module.
            targets = [f"{target}.{n}" if f"{target}.{n}" in mods else target for n in names] or [target]
            for t in targets:
                while t and t not in mods:  # `import a.b.c` of a name below a module
                    t = t.rpartition(".")[0]
                ancestor = name.startswith(t + ".")
                if t and t != name and not ancestor:
                    graph[name].setdefault(t, line)
    return graph


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def a_cycle_through(component: list[str], graph: dict[str, dict[str, int]]) -> str:
    """One cycle inside a component, as `a -> b (line N of a) -> ... -> a`."""
    members = set(component)
    path = [component[0]]
    while True:
        here = path[-1]
        nxt = next(t for t in sorted(graph[here]) if t in members)  # each member has one
        if nxt in path:
            loop = path[path.index(nxt):] + [nxt]
            return " -> ".join(f"{a} (line {graph[a][b]})" for a, b in zip(loop, loop[1:])) + f" -> {nxt}"
        path.append(nxt)


def test_the_graph_counts_imports_in_functions_and_not_those_for_type_checkers(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from . import c\n")
    (pkg / "a.py").write_text("def f():\n    from .b import g\n    return g\n")
    (pkg / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import a\n"
                              "from pkg.sub import c\n")
    (pkg / "sub" / "c.py").write_text("import pkg.a\nfrom .. import b\n")
    graph = import_graph(pkg)
    assert graph == {
        "pkg": {}, "pkg.a": {"pkg.b": 2}, "pkg.b": {"pkg.sub.c": 4}, "pkg.sub": {"pkg.sub.c": 1},
        "pkg.sub.c": {"pkg.a": 1, "pkg.b": 2},
    }
    component = ["pkg.a", "pkg.b", "pkg.sub.c"]
    assert cycles(graph) == [component]
    assert a_cycle_through(component, graph) == "pkg.a (line 2) -> pkg.b (line 4) -> pkg.sub.c (line 1) -> pkg.a"


def test_no_import_cycle_in_the_package() -> None:
    graph = import_graph(SRC)
    assert graph["veriloop.experiment.engine"]  # the graph is read (an empty one would pass)
    found = cycles(graph)
    assert not found, "import cycles:\n" + "\n".join(a_cycle_through(c, graph) for c in found)


def test_the_ground_floor_records_import_nothing_of_veriloop() -> None:
    path, package = modules(SRC)["veriloop.records"]
    named = [(target, line) for target, _, line in import_statements("veriloop.records", path, package,
                                                                       type_checking=True)
             if target == "veriloop" or target.startswith("veriloop.")]
    assert named == []


def test_nothing_under_experiment_imports_the_cluster() -> None:
    named = [
        (name, target, line)
        for name, (path, package) in modules(SRC).items() if name.startswith("veriloop.experiment.")
        for target, names, line in import_statements(name, path, package, type_checking=True)
        if any(t == "veriloop.cluster" or t.startswith("veriloop.cluster.") for t in [target]
               + [f"{target}.{n}" for n in names])
    ]
    assert named == []


def test_the_cluster_sees_the_experiment_through_the_executor_seam_only() -> None:
    wrong = []
    for name, (path, package) in modules(SRC).items():
        if not (name == "veriloop.cluster" or name.startswith("veriloop.cluster.")):
            continue
        for target, names, line in import_statements(name, path, package, type_checking=True):
            if not target.startswith(("veriloop.experiment", "veriloop.runs", "veriloop.stats")):
                continue
            if target == "veriloop.experiment.engine" or "engine" in names and target == "veriloop.experiment":
                wrong.append(f"{name} line {line}: imports the engine")
            wrong += [f"{name} line {line}: imports {target}.{n}" for n in names if n.startswith("_")]
    assert wrong == []


DESIGN = SRC.parents[1] / "docs" / "design" / "index.md"


def readme_layers() -> list[list[str]]:
    """The rows of the layer picture that opens the design page, top row first: each a
    list of top-level modules (`api.py`) and packages (`cli/`)."""
    design = DESIGN.read_text(encoding="utf-8")
    block = design.split("```\n", 2)[1]
    rows = []
    for line in block.splitlines():
        names = line.split("   ")[0].split(" · ")  # the description is set off by spaces
        rows.append([name.strip() for name in names])
    return rows


def is_shim(path: Path) -> bool:
    """A module kept at an old path for one release: it only re-exports its new module."""
    return _module_facts(path)[1]


def top_level_parts(root: Path) -> dict[str, str]:
    """Module -> the top-level part of the package it lies in, as the picture names it
    (shims left out: an old path is no part of the layers)."""
    parts = {}
    for name, (path, _) in modules(root).items():
        pieces = name.split(".")
        if len(pieces) == 1 or is_shim(path):
            continue  # the root __init__ (lazy exports, imports nothing: pinned below), or a shim
        top = pieces[1]
        parts[name] = f"{top}/" if (root / top).is_dir() else f"{top}.py"
    return parts


def test_the_readme_picture_names_every_part_once() -> None:
    named = [name for row in readme_layers() for name in row]
    assert sorted(named) == sorted(set(top_level_parts(SRC).values()))


def test_each_part_imports_only_parts_on_rows_below_it() -> None:
    row_of = {name: i for i, row in enumerate(readme_layers()) for name in row}
    part = top_level_parts(SRC)
    graph = import_graph(SRC)
    upward = sorted(
        f"{module} (line {line}) imports {target}: {part[module]} is not above {part[target]}"
        for module, targets in graph.items() if module in part
        for target, line in targets.items()
        if target in part and part[target] != part[module] and row_of[part[target]] <= row_of[part[module]]
    )
    assert upward == []


def test_the_package_root_imports_nothing_when_imported() -> None:
    # Its names are found on first use (importlib by name), so `from veriloop import X`
    # anywhere costs nothing and ties no layer to another.
    assert import_graph(SRC)["veriloop"] == {}


NEVER_IMPORTS = {
    "veriloop.runs": ("veriloop.experiment", "veriloop.cluster"),
    "veriloop.stats": ("veriloop.runs", "veriloop.experiment", "veriloop.cluster"),
}


def test_runs_and_stats_never_import_the_matrix() -> None:
    mods = modules(SRC)
    assert set(NEVER_IMPORTS) <= set(mods)  # the packages are there (an absent one would pass)
    wrong = [
        f"{name} line {line}: imports {target}"
        for name, (path, package) in mods.items()
        for below, forbidden in NEVER_IMPORTS.items() if name == below or name.startswith(below + ".")
        for target, names, line in import_statements(name, path, package, type_checking=True)
        for t in [target, *(f"{target}.{n}" for n in names)]
        if any(t == f or t.startswith(f + ".") for f in forbidden)
    ]
    assert wrong == []
