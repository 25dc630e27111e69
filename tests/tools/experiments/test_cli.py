"""python -m tools.experiments and its first name, python -m tools.experiment: one command, every
experiment reachable through it, unknown names refused."""
from __future__ import annotations

import subprocess
import sys

import pytest

from tools import REPO_ROOT
from tools.experiments import cli


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=120)      # a hang guard


def test_the_old_name_is_the_same_command():
    import tools.experiment
    assert tools.experiment.main is cli.main


@pytest.mark.parametrize("module", ["tools.experiment", "tools.experiments"])
def test_both_names_run_the_standing_jobs_unit_command(module):
    """The standing job starts ``python -m tools.experiment unit`` in worktrees of older and
    newer commits: that line must reach the registry's unit parser under both names."""
    r = run("-m", module, "unit", "--help")
    assert r.returncode == 0, r.stderr
    assert "--exp-dir" in r.stdout and "--design" in r.stdout and "--seed" in r.stdout
    r = run("-m", module, "unit", "--design", "az")
    assert r.returncode == 2 and "--exp-dir" in r.stderr          # argparse refuses, nothing runs


def test_every_experiment_has_its_function():
    for name in cli.COMMANDS:
        assert callable(cli.command(name)), name


def test_unknown_experiments_and_no_arguments_are_refused(capsys):
    assert cli.main(["nonsense"]) == 2
    assert "unknown experiment 'nonsense'" in capsys.readouterr().err
    assert cli.main([]) == 2
    assert cli.main(["--help"]) == 0 and "register" in capsys.readouterr().out
