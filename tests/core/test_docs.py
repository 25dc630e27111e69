"""The documentation stays true: every ``python -m`` command line shown in README.md,
tools/README.md and docs/ parses with its module's own argument parser (parsed, never run), every
relative link resolves, docs/gtp.md documents exactly the GTP commands the engine lists, and
docs/search.md exactly the search options ``engine.play.searchopts`` knows."""
from __future__ import annotations

import argparse
import importlib
import io
import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", ROOT / "tools" / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

# -- python -m command lines --------------------------------------------------------------------

# Where a module's parser comes from: a function returning it (module, function), or None to
# parse through the module's main(argv) with parse_args stopped before anything runs.
PARSERS = {
    "engine": ("engine.options", "build_parser"),
    "engine analysis": ("engine.analysis.engine", "build_parser"),
    "engine tune": ("engine.cli.tune", "build_parser"),
    "engine doctor": ("engine.cli.doctor", "build_parser"),
    "train.loop": ("train.loop", "build_parser"),
    "train.match": ("train.match.cli", "build_parser"),
    "train.ladder": ("train.match.ladder", "build_parser"),
    "train.report": ("train.report", None),
    "engine.weights": ("engine.nets.weights", None),
    "tools.bench": ("tools.bench.components", None),
    "tools.bench.selfplay": ("tools.bench.selfplay", None),
    "tools.bench.ray_selfplay": ("tools.bench.ray_selfplay", None),
    "tools.bench.analysis": ("tools.bench.analysis", None),
    "tools.bench.katago": ("tools.bench.katago", None),
    "tools.bench.ddp": ("tools.bench.ddp", None),
    "tools.bench.startup": ("tools.bench.startup", None),
    "tools.checks.ray_multinode": ("tools.checks.ray_multinode", None),
    "tools.checks.gate_faults": ("tools.checks.gate_faults", None),
    "tools.checks.gtp_fuzz": ("tools.checks.gtp_fuzz", None),
    "tools.checks.gpu": ("tools.checks.gpu", None),
    "tools.checks.solve5": ("tools.checks.solve5", None),
    "tools.checks.gnugo_territory": ("tools.checks.gnugo_territory", None),
    "tools.experiments": ("tools.experiments.cli", None),
    "tools.experiment": ("tools.experiments.cli", None),      # the entry point older worktrees and the issue name
    "tools.experiments.anchors": ("tools.experiments.anchors", None),
    "tools.experiments.search_ab": ("tools.experiments.search_ab", "build_parser"),
}
OURS = ("engine", "train", "tools")
SHELL_ENDS = {"&&", "||", "|", ";", ">", ">>", "2>", "2>&1", "&", "do", "done", "then"}


def _strip_markup(text: str) -> str:
    """Markdown's doubled backslash line continuations and the docs' placeholders for options
    that may be left out: ``[--flag VALUE]`` keeps its content, a lone ``...`` goes."""
    text = re.sub(r"\\\n", " ", text)
    text = re.sub(r"\[(--[^\]]*)\]", r"\1", text)
    return re.sub(r"(?<!\S)\.\.\.(?!\S)", " ", text)


def code_texts(text: str) -> list[str]:
    """The shell code blocks (```sh) and inline code spans of a Markdown text (spans may wrap lines)."""
    fenced = re.findall(r"^```(?:sh|bash|shell)\n(.*?)^```", text, re.S | re.M)
    rest = re.sub(r"^```[^\n]*\n.*?^```", "", text, flags=re.S | re.M)
    spans = re.findall(r"`([^`]+)`", rest)
    lines = [line for block in fenced for line in _strip_markup(block).split("\n")]
    return lines + [_strip_markup(s).replace("\n", " ") for s in spans]


def commands_in(tokens: list[str]) -> list[list[str]]:
    """The ``python -m MODULE ARGS`` commands in a shell token list, and those quoted inside
    their arguments (``--white "python -m engine --size 9"``)."""
    found = []
    for i in range(len(tokens) - 2):
        if tokens[i].endswith("python") and tokens[i + 1] == "-m":
            args = []
            for tok in tokens[i + 2:]:
                if tok in SHELL_ENDS or tok.startswith((">", "2>")):
                    break
                args.append(tok)
            found.append(args)
            for tok in args:
                if "python -m" in tok:
                    found += commands_in(shlex.split(tok[tok.index("python -m"):], comments=True))
    return found


def documented_commands() -> list[tuple[str, list[str]]]:
    """(file, [module, args...]) of every command line shown; an inline span that only names a
    tool (``python -m train.match``, ``python -m engine.weights stamp``: no option) is a name, not
    a command line, and is left out."""
    out = []
    for path in DOCS:
        text = path.read_text()
        fenced = {line for block in re.findall(r"^```(?:sh|bash|shell)\n(.*?)^```", text, re.S | re.M)
                  for line in _strip_markup(block).split("\n")}
        for code in code_texts(text):
            if "python -m" not in code:
                continue
            try:
                tokens = shlex.split(code, comments=True)
            except ValueError:                 # a span that quotes half a command
                tokens = code.split()
            for args in commands_in(tokens):
                if code not in fenced and not any(a.startswith("-") for a in args[1:]):
                    continue
                if args and args[0].split(".")[0] in OURS:
                    out.append((path.relative_to(ROOT).as_posix(), args))
    return out


COMMANDS = documented_commands()


class _Parsed(Exception):
    pass


def parse_through_main(module, argv: list[str], monkeypatch) -> None:
    """Runs ``module.main(argv)`` only as far as its parser: parse_args (or parse_known_args)
    parses with the real parser, then raises _Parsed before the command would start."""
    original, original_known = argparse.ArgumentParser.parse_args, argparse.ArgumentParser.parse_known_args
    depth = {"n": 0}

    def parse_args(self, args=None, namespace=None):
        depth["n"] += 1
        try:
            original(self, args, namespace)
        finally:
            depth["n"] -= 1
        raise _Parsed

    def parse_known_args(self, args=None, namespace=None):
        result = original_known(self, args, namespace)
        if depth["n"] == 0 and self.prog.startswith("python -m"):
            raise _Parsed
        return result

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parse_args)
    monkeypatch.setattr(argparse.ArgumentParser, "parse_known_args", parse_known_args)
    with pytest.raises(_Parsed):
        module.main(argv)


def test_the_docs_show_commands_of_every_tool():
    names = {args[0] for _, args in COMMANDS}
    assert {"engine", "train.loop", "train.match", "train.ladder", "train.report", "engine.weights",
            "tools.experiments"} <= names


@pytest.mark.parametrize("where,args", COMMANDS, ids=[f"{w}: {' '.join(a)[:60]}" for w, a in COMMANDS])
def test_every_documented_command_line_parses(where, args, monkeypatch, capsys):
    name, argv = args[0], args[1:]
    if name == "engine" and argv[:1] in (["analysis"], ["tune"], ["doctor"]):
        name, argv = f"engine {argv[0]}", argv[1:]
    assert name in PARSERS, f"{where}: python -m {name} has no parser known to this test"
    module_name, function = PARSERS[name]
    module = importlib.import_module(module_name)
    try:
        if function:
            getattr(module, function)().parse_args(argv)
        else:
            parse_through_main(module, argv, monkeypatch)
    except SystemExit as exc:
        if exc.code == 0:                      # --help
            return
        pytest.fail(f"{where}: python -m {' '.join(args)} does not parse ({exc.code}): "
                    f"{capsys.readouterr().err.strip()[-300:]}")


# -- relative links -----------------------------------------------------------------------------

def relative_links() -> list[tuple[str, str]]:
    out = []
    for path in DOCS:
        text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.S | re.M)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if not re.match(r"[a-z]+:", target) and not target.startswith("#"):
                out.append((path.relative_to(ROOT).as_posix(), target))
    return out


@pytest.mark.parametrize("where,target", relative_links())
def test_every_relative_link_resolves(where, target):
    path = (ROOT / where).parent / target.split("#")[0]
    assert path.exists(), f"{where}: link to {target} resolves to nothing"


# -- GTP commands and search options ------------------------------------------------------------

def documented_names(path: Path) -> set[str]:
    """The names of a reference page's table: the first cell of each row, in backticks."""
    names = set()
    for line in path.read_text().split("\n"):
        m = re.match(r"\| `([^`\s]+)`", line)
        if m:
            names.add(m.group(1))
    return names


def test_docs_gtp_lists_exactly_the_commands_the_engine_lists():
    from engine.gtp import EngineConfig, engine_play
    from engine.gtp.commands import GTPEngine
    from engine.nets.evaluator import UniformEvaluator
    ev = UniformEvaluator()
    eng = GTPEngine(lambda n: ev, EngineConfig(size=9, play=engine_play(8), quiet=True), stdout=io.StringIO(),
                    stderr=io.StringIO())
    listed = set(eng.command("list_commands").split("\n"))
    documented = documented_names(ROOT / "docs" / "gtp.md")
    assert not documented - listed, f"docs/gtp.md documents commands the engine lacks: {documented - listed}"
    assert not listed - documented, f"docs/gtp.md lacks: {listed - documented}"


def test_docs_search_lists_exactly_the_options_searchopts_knows():
    from engine.play import searchopts
    documented = documented_names(ROOT / "docs" / "search.md")
    known = set(searchopts.OPTIONS)
    assert not documented - known, f"docs/search.md documents unknown options: {documented - known}"
    assert not known - documented, f"docs/search.md lacks: {known - documented}"
    text = (ROOT / "docs" / "search.md").read_text()
    missing = [k for k in searchopts.KATAGO_NAMES.values() if f"`{k}`" not in text]
    assert not missing, f"docs/search.md lacks KataGo's names {missing}"
