"""The C files of src_c/ depend on each other without a circle.

A unit is a .c file with its own .h (board.c and board.h), or a header or source alone
(search_tree.h).  Each unit's sources are read as text: it *defines* the typedef names, the
struct, union and enum tags, the enum constants, the functions with a body (static ones only in
a header: a static function of a .c file is its own), the file-scope variables (not static, not
extern) and a header's macros; it *uses* every other name it mentions, except the name a
prototype declares (a declaration is not a use: search.h declares functions that the files
above it define).  A unit depends on another when it uses a name the other defines, and the
units must form layers: no circle, as board.c calling the 3x3 patterns of pattern3.c, which
read the board, was one.  The Python modules' import circles: tests/test_imports.py.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src_c"

_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\S")
_NAME = re.compile(r"[A-Za-z_]")
_TAGS = {"struct", "union", "enum"}


def _code(text: str) -> str:
    """The text without comments, string and character literals."""
    return re.sub(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'',
                  lambda m: " " if m.group(0)[0] == "/" else '""', text, flags=re.S)


def scan(text: str, header: bool) -> tuple[set[str], set[str]]:
    """(names defined, names used) by one source file; a tag is named ``struct x``."""
    code = _code(text)
    defined: set[str] = set()
    if header:
        defined |= set(re.findall(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)", code, re.M))
    code = re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", " ", code, flags=re.M)   # with continuations
    for body in re.findall(r"\benum\b[^{;]*\{([^}]*)\}", code):   # the enum constants
        defined |= set(re.findall(r"(?:^|,)\s*([A-Za-z_]\w*)", body))
    tokens = _TOKEN.findall(code)
    names = [i for i, tok in enumerate(tokens) if _NAME.match(tok) and not tok.startswith("__")]
    for i in names:                                              # tags: struct x { defines it
        if tokens[i] in _TAGS and tokens[i + 2:i + 3] == ["{"] and _NAME.match(tokens[i + 1]):
            defined.add(f"{tokens[i]} {tokens[i + 1]}")
    not_uses: set[int] = set()         # positions of names a declaration declares
    start, i = 0, 0
    while i < len(tokens):
        tok = tokens[i]
        if tok == "{" and i and tokens[i - 1] == ")":            # a function body
            decl = tokens[start:i]
            at = _function_name(decl)
            if at is not None:
                not_uses.add(start + at)
                if header or "static" not in decl:
                    defined.add(decl[at])
            i = _matching(tokens, i)
            start = i + 1
        elif tok in ("{", "[", "("):                             # inside a declaration
            i = _matching(tokens, i)
        elif tok == ";":
            _declaration(tokens, start, i, header, defined, not_uses)
            start = i + 1
        i += 1
    used = {tokens[i] for i in names if i not in not_uses and tokens[i] not in _TAGS}
    # a tag names its definition, except in `typedef struct x x_t;`: an opaque handle, no layout
    used |= {f"{tokens[i]} {tokens[i + 1]}" for i in names
             if tokens[i] in _TAGS and i + 1 < len(tokens) and _NAME.match(tokens[i + 1])
             and not (i and tokens[i - 1] == "typedef" and tokens[i + 3:i + 4] == [";"])}
    return defined, used - defined


def _matching(tokens: list[str], i: int) -> int:
    """Position of the bracket that closes the one at i."""
    close = {"{": "}", "[": "]", "(": ")"}[tokens[i]]
    depth = 0
    for j in range(i, len(tokens)):
        depth += tokens[j] == tokens[i]
        depth -= tokens[j] == close
        if depth == 0:
            return j
    return len(tokens) - 1


def _function_name(decl: list[str]) -> int | None:
    """Position in decl of the function it declares: the name before its first `(` outside
    brackets, unless an initialiser comes first."""
    j = 0
    while j < len(decl):
        if decl[j] == "=":
            return None
        if decl[j] == "(":
            return j - 1 if j and _NAME.match(decl[j - 1]) else None
        if decl[j] in ("{", "["):
            j = _matching(decl, j)
        j += 1
    return None


def _declaration(tokens, start, end, header, defined, not_uses):
    """The file-scope declaration tokens[start:end]: a typedef, a prototype or variables."""
    decl = tokens[start:end]
    if not decl:
        return
    top, j = [], 0                      # positions outside brackets
    while j < len(decl):
        if decl[j] in ("{", "[") or (decl[j] == "(" and decl[j + 1:j + 2] != ["*"]):
            j = _matching(decl, j)
        else:
            top.append(j)
        j += 1
    if decl[0] == "typedef":            # its name: the last name outside brackets, or (*name)
        for j in range(len(decl) - 2):
            if decl[j] == "(" and decl[j + 1] == "*" and _NAME.match(decl[j + 2]):
                defined.add(decl[j + 2])
                not_uses.add(start + j + 2)
                return
        last = [j for j in top if _NAME.match(decl[j])][-1]
        defined.add(decl[last])
        not_uses.add(start + last)
        return
    at = _function_name(decl)
    if at is not None:                  # a prototype
        not_uses.add(start + at)
        return
    for j in top:                       # variables: the names before `[`, `=`, `,` or the end
        ends = j + 1 == len(decl) or decl[j + 1] in ("[", "=", ",")
        if ends and _NAME.match(decl[j]) and not decl[j].startswith("__") and decl[j] not in _TAGS:
            not_uses.add(start + j)
            if "extern" not in decl and (header or "static" not in decl):
                defined.add(decl[j])


def units(directory: Path) -> dict[str, list[Path]]:
    """Unit name -> its files: x.c and x.h together, any other file alone."""
    out: dict[str, list[Path]] = {}
    for path in sorted(directory.glob("*.[ch]")):
        out.setdefault(path.stem, []).append(path)
    return out


def definitions(directory: Path = SRC) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """(unit -> the names it defines, unit -> the names of others it uses)."""
    defines: dict[str, set[str]] = {}
    uses: dict[str, set[str]] = {}
    for unit, files in units(directory).items():
        defines[unit], uses[unit] = set(), set()
        for path in files:
            d, u = scan(path.read_text(encoding="utf-8"), header=path.suffix == ".h")
            defines[unit] |= d
            uses[unit] |= u
    return defines, {unit: names - defines[unit] for unit, names in uses.items()}


def dependency_graph(directory: Path = SRC) -> dict[str, dict[str, set[str]]]:
    """Unit -> each unit whose names it uses -> those names."""
    defines, uses = definitions(directory)
    owner = {name: unit for unit, names in defines.items() for name in names}
    graph: dict[str, dict[str, set[str]]] = {unit: {} for unit in defines}
    for unit, names in uses.items():
        for name in names:
            if name in owner:
                graph[unit].setdefault(owner[name], set()).add(name)
    return graph


def circles(graph: dict[str, dict[str, set[str]]]) -> list[list[str]]:
    """The groups of units that reach each other (each a circle or several), sorted."""
    def reach(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for nxt in graph[todo.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    reaches = {unit: reach(unit) for unit in graph}
    groups = {frozenset(v for v in reaches[u] if u in reaches[v]) for u in graph if u in reaches[u]}
    return sorted(sorted(g) for g in groups)


def describe(graph: dict[str, dict[str, set[str]]], group: list[str]) -> str:
    """The ties inside a group: `a -> b (names)`, one a line."""
    return "\n".join(f"  {a} -> {b} ({', '.join(sorted(graph[a][b])[:6])})"
                     for a in group for b in sorted(graph[a]) if b in group)


# -- the tests -----------------------------------------------------------------------------

def test_the_c_files_have_no_circle():
    graph = dependency_graph()
    found = circles(graph)
    assert not found, "C files that depend on each other:\n" + "\n".join(describe(graph, g) for g in found)


def test_the_floors():
    """The graph sees what the files do: the board is the ground floor, playouts stand on the
    board and the patterns, the search's public header on nothing of the tree."""
    graph = dependency_graph()
    assert set(graph) >= {"board", "pattern3", "playout", "game", "search", "search_tree", "search_descent"}
    assert set(graph["board"]) == set()
    assert set(graph["pattern3"]) == {"board"}
    assert set(graph["playout"]) == {"board", "pattern3"}
    assert "playout_judged_area" in graph["search_descent"]["playout"]
    assert {"search_tree", "search_select", "search_bias", "search_recompute"} <= set(graph["search_descent"])
    assert "search_tree" not in graph["search"] and "game_t" in graph["search"]["game"]
    assert "search_t" in graph["search_stats"]["search"]


def test_each_name_has_one_home():
    defines, _ = definitions()
    homes: dict[str, list[str]] = {}
    for unit, names in defines.items():
        for name in names:
            homes.setdefault(name, []).append(unit)
    assert {name: units for name, units in homes.items() if len(units) > 1} == {}


# The last commit before the floors: board.c called pattern3.c, and the search's files each other.
BEFORE = "a00376d"


def test_the_circles_before_the_floors(tmp_path):
    git = shutil.which("git")
    def show(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([git, "-C", str(ROOT), *args], capture_output=True, text=True)
    if git is None or show("cat-file", "-e", f"{BEFORE}^{{commit}}").returncode != 0:
        pytest.skip(f"no git history with {BEFORE}")
    for path in show("ls-tree", "--name-only", BEFORE, "src_c/").stdout.split():
        if path.endswith((".c", ".h")):
            (tmp_path / Path(path).name).write_text(show("show", f"{BEFORE}:{path}").stdout)
    graph = dependency_graph(tmp_path)
    search = ["search", "search_bias", "search_internal", "search_recompute", "search_select"]
    assert circles(graph) == [["board", "pattern3"], search]
    assert graph["board"]["pattern3"] == {"pattern3_init", "pattern3_match"}


BOARD_H = """#ifndef BOARD_H
#define BOARD_H
typedef struct { int color[9]; } board_t;
enum { EMPTY = 0, BLACK = 1 };
int board_play(board_t *b, int v);
#endif
"""
BOARD_C = """#include "board.h"
#include "pattern.h"
static int helper(int v) { return v + 1; }
int board_play(board_t *b, int v) { pattern_init(); b->color[helper(v)] = BLACK; return 0; }
"""
PATTERN_H = """#include "board.h"
typedef struct handle handle_t;   /* opaque: no use of struct handle */
void pattern_init(void);
static inline int pattern_match(const board_t *b, int v) { return b->color[v] == EMPTY; }
"""
PATTERN_C = """#include "pattern.h"
static int helper(int v) { return v; }   /* another file's static helper of the same name */
unsigned char pattern_table[16];
void pattern_init(void) { pattern_table[helper(0)] = 1; }
"""


def test_a_circle_is_found(tmp_path):
    """board.c calling the patterns, which read the board: the circle the playouts made."""
    handle_c = "struct handle { int x; };\nint handle_x(struct handle *h) { return h->x; }\n"
    for name, text in {"board.h": BOARD_H, "board.c": BOARD_C, "pattern.h": PATTERN_H, "pattern.c": PATTERN_C,
                       "handle.c": handle_c}.items():
        (tmp_path / name).write_text(text)
    defines, _ = definitions(tmp_path)
    assert defines["board"] == {"BOARD_H", "board_t", "EMPTY", "BLACK", "board_play"}
    assert defines["pattern"] == {"handle_t", "pattern_init", "pattern_match", "pattern_table"}
    assert defines["handle"] == {"struct handle", "handle_x"}
    graph = dependency_graph(tmp_path)
    assert graph == {"board": {"pattern": {"pattern_init"}},
                     "pattern": {"board": {"board_t", "EMPTY"}},
                     "handle": {}}
    assert circles(graph) == [["board", "pattern"]]
    assert "board -> pattern (pattern_init)" in describe(graph, ["board", "pattern"])
    # without the call, the board is a floor again
    (tmp_path / "board.c").write_text(BOARD_C.replace("pattern_init(); ", ""))
    assert circles(dependency_graph(tmp_path)) == []
