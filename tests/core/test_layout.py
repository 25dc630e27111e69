"""The rooms of the tree: engine/ and train/ hold at most 12 direct modules each (every ``.py``
file but ``__init__.py``; ``__main__.py`` and the entry points kept for documented commands
count), the rest sit in packages named after their concept, each saying in its ``__init__``
docstring what it is for and what it may import; the rules those docstrings state hold in the
import graph; setup.py installs every package; tools/ holds bench/, checks/ and experiments/;
every ``python -m`` command the READMEs and docs/ document names a runnable module."""
from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

import pytest

from tests.core.test_imports import import_graph

ROOT = Path(__file__).resolve().parents[2]
MAX_DIRECT = 12


def direct_modules(pkg: str) -> list[str]:
    return sorted(p.name for p in (ROOT / pkg).glob("*.py") if p.name != "__init__.py")


def packages(top: str) -> list[str]:
    return sorted(".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / top).rglob("__init__.py"))


@pytest.mark.parametrize("pkg", ["engine", "train"])
def test_at_most_twelve_direct_modules(pkg):
    mods = direct_modules(pkg)
    assert len(mods) <= MAX_DIRECT, f"{pkg}/ has {len(mods)} direct modules (at most {MAX_DIRECT}): {mods}"


# engine/gtp/__init__.py is being rewritten on another branch; its two-line docstring lands after
# that merge (the strict xfail then fails, saying this entry must go).
PENDING_DOCSTRINGS: set[str] = set()


@pytest.mark.parametrize("pkg", [
    pytest.param(p, marks=pytest.mark.xfail(strict=True, reason="docstring pending: PENDING_DOCSTRINGS"))
    if p in PENDING_DOCSTRINGS else p
    for top in ("engine", "train") for p in packages(top) if "." in p])
def test_each_room_says_what_it_is_for_and_what_it_may_import(pkg):
    init = ROOT / pkg.replace(".", "/") / "__init__.py"
    doc = ast.get_docstring(ast.parse(init.read_text()))
    assert doc, f"{init} has no docstring"
    lines = doc.splitlines()
    assert len(lines) == 2 and lines[1].startswith("May import"), f"{init}: want two lines, 'May import ...' second"


def test_setup_py_installs_every_package():
    tree = ast.parse((ROOT / "setup.py").read_text())
    listed = next(ast.literal_eval(k.value) for node in ast.walk(tree) if isinstance(node, ast.Call)
                  for k in node.keywords if k.arg == "packages")
    assert set(packages("engine")) | set(packages("train")) <= set(listed)


def imports_of(graph: dict[str, set[str]], room: str) -> set[str]:
    return {t for m, targets in graph.items() if m == room or m.startswith(room + ".")
            for t in targets if not (t == room or t.startswith(room + "."))}


def test_the_rooms_import_what_their_docstrings_allow():
    graph = import_graph()
    outside = imports_of(graph, "engine.play")
    assert all(t in ("engine.core", "engine.rules", "engine.scoring") for t in outside), outside
    outside = imports_of(graph, "train.games")
    assert all(t.startswith("engine") or t == "train.rundir" for t in outside), outside
    assert not {t for t in imports_of(graph, "train.match") if t.startswith("train.cluster")}
    outside = imports_of(graph, "engine.gtp")
    assert all(t in ("engine", "engine.core", "engine.rules", "engine.scoring", "engine.sgf", "engine.coords",
                     "engine.errors") or t.startswith("engine.play") for t in outside), outside
    outside = imports_of(graph, "train.learn")
    assert all(t.startswith("engine") or t in ("train.config", "train.replay", "train.rundir", "train.stage") for t in outside), outside
    users = {m for m, targets in graph.items() if m.startswith(("engine", "train"))
             and not m.startswith("train.cluster") and any(t.startswith("train.cluster") for t in targets)}
    assert users == {"train.loop"}
    assert not [m for m, targets in graph.items() if m.startswith("engine")
                and any(t.startswith("train") for t in targets)]


def readme_commands() -> list[str]:
    text = "".join(p.read_text() for p in [ROOT / "README.md", ROOT / "weights" / "README.md",
                                             ROOT / "tools" / "README.md", *sorted((ROOT / "docs").rglob("*.md"))])
    return sorted(set(re.findall(r"python -m ((?:engine|train|tools)(?:\.\w+)*)", text)))


def test_the_readme_documents_some_commands():
    assert {"engine", "train.loop", "train.match", "train.ladder", "train.report", "engine.weights"} <= set(readme_commands())


@pytest.mark.parametrize("name", readme_commands())
def test_every_documented_command_runs(name):
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.origin, f"python -m {name}: no such module"
    if spec.submodule_search_locations:          # a package: python -m runs its __main__
        main = Path(spec.origin).with_name("__main__.py")
        assert main.is_file(), f"python -m {name}: the package has no __main__.py"
    else:
        assert 'if __name__ == "__main__":' in Path(spec.origin).read_text(), f"python -m {name}: no entry point"


def test_tools_holds_its_three_rooms_and_its_shared_modules_only():
    """tools/ is benchmarks, checks and experiments, each a package saying what it holds; beside
    them only the machine facts they share and ``tools.experiment``, the experiments' first name."""
    assert direct_modules("tools") == ["experiment.py", "machine.py"]
    rooms = [p for p in packages("tools") if p != "tools"]
    assert rooms == ["tools.bench", "tools.checks", "tools.experiments"]
    for room in rooms:
        assert ast.get_docstring(ast.parse((ROOT / room.replace(".", "/") / "__init__.py").read_text())), room
    tests = sorted(p.name for p in (ROOT / "tests" / "tools").iterdir() if p.is_dir() and p.name != "__pycache__")
    assert tests == ["bench", "checks", "experiments"]


def test_tests_are_laid_out_like_the_code():
    """No test file sits directly in tests/: each lives in the package of the room it tests."""
    loose = sorted(p.name for p in (ROOT / "tests").iterdir() if p.is_file() and p.name.startswith("test_"))
    assert not loose, f"move these into a tests/ package named after the room they test: {loose}"
