"""The import graph of engine/, train/ and tools/ has no circle.

Every module is parsed with ``ast`` (nothing is imported) and every import counts: module level,
inside functions (lazy imports) and under ``if TYPE_CHECKING:``, since a circle that only a type
checker or a late call walks is still two modules that each need the other.  ``from pkg import
name`` is an edge to ``pkg.name`` when that is a module, else to ``pkg`` (its ``__init__``);
``from pkg.mod import name`` is an edge to ``pkg.mod``.
The C files' circles: tests/core/test_dependency_graph.py.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("engine", "train", "tools")


def module_files(root: Path, packages: tuple[str, ...]) -> dict[str, Path]:
    """Dotted module name -> file, for every .py file under the packages (``__init__`` files
    name their package)."""
    out: dict[str, Path] = {}
    for pkg in packages:
        for path in sorted((root / pkg).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    return out


def imported_modules(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of ``known`` that module ``name`` (file ``path``) imports anywhere."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    targets: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                targets.add(sub if sub in known else module)
    out = set()
    for target in targets:
        while target and target not in known:     # engine.core.Game -> engine.core
            target = target.rpartition(".")[0]
        if target and target != name:
            out.add(target)
    return out


def import_graph(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> dict[str, set[str]]:
    known = module_files(root, packages)
    return {name: imported_modules(name, path, known) for name, path in known.items()}


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                members = set()
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    members.add(m)
                    if m == node:
                        break
                if len(members) > 1:
                    found.append(frozenset(members))
    return found


def one_circle(graph: dict[str, set[str]], members: frozenset[str]) -> list[str]:
    """One import path a -> b -> ... -> a inside ``members`` (for the failure message)."""
    start = min(members)
    paths = {start: [start]}
    todo = [start]
    while todo:
        node = todo.pop(0)
        for nxt in sorted(graph[node] & members):
            if nxt == start:
                return paths[node] + [start]
            if nxt not in paths:
                paths[nxt] = paths[node] + [nxt]
                todo.append(nxt)
    return sorted(members)


def test_the_graph_covers_every_module():
    graph = import_graph()
    assert len(graph) == sum(1 for pkg in PACKAGES for _ in (ROOT / pkg).rglob("*.py"))
    assert "engine.core" in graph["engine.play.player"]
    assert "engine.gtp.protocol" in graph["engine.gtp.commands"]


def test_no_import_cycles():
    graph = import_graph()
    found = cycles(graph)
    assert not found, "import circles:\n" + "\n".join(" -> ".join(one_circle(graph, c)) for c in found)


def test_the_ray_actors_do_not_import_the_driver():
    graph = import_graph()
    assert "train.cluster.driver" not in graph["train.cluster.actors"]
    assert "train.cluster.gate" not in graph["train.cluster.actors"]


def test_a_type_checking_only_circle_is_found(tmp_path):
    pkg = tmp_path / "demo"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                              "    from demo.b import B\n")
    (pkg / "b.py").write_text("from . import c\n")
    (pkg / "c.py").write_text("def f():\n    import demo.a\n")
    (pkg / "d.py").write_text("from demo import a, b\n")
    graph = import_graph(tmp_path, ("demo",))
    assert graph["demo.d"] == {"demo.a", "demo.b"}
    assert cycles(graph) == [frozenset({"demo.a", "demo.b", "demo.c"})]
    assert one_circle(graph, cycles(graph)[0]) == ["demo.a", "demo.b", "demo.c", "demo.a"]
