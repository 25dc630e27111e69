"""Start-up: identification answered before the net loads, the precision measured in the
background and cached kernel by kernel (a killed start loses nothing measured), ``tune``, and
start-up failures as one stderr line and a GTP-conforming exit.  No GPU; the nets are tiny."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch

from engine.nets import autoprecision as ap
from engine.nets import precision as prec
from engine.nets import weights as weights_mod
from engine.nets.network import NetConfig

ROOT = Path(__file__).resolve().parents[2]
LABELS = [p.label for p in prec.candidates("cpu")]
TIMEOUT = 300          # never a hang: a subprocess that outlives this fails the test


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path = tmp_path_factory.mktemp("net") / "tiny.pt"
    weights_mod.save(path, weights_mod.new_model(NetConfig(blocks=1, filters=8), seed=1),
                     {"board_sizes": [5], "step": 0, "parent": None})
    return path


def fake_timer(rates):
    return lambda p, forward, rows, seconds: rates[p.label]


RATES = {"fp32-nchw": 10.0, "fp32": 11.0, "fp32-wino": 30.0, "bf16": 2.0}


def engine_env(cache: Path) -> dict[str, str]:
    return {**os.environ, "XDG_CACHE_HOME": str(cache), "PYTHONPATH": str(ROOT)}


def start(args: list[str], cache: Path, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "engine", *args], cwd=ROOT, env=engine_env(cache),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, **kw)


def kernels_in(cache: Path) -> set[str]:
    try:
        entries = json.loads((cache / "goengine" / "precision.json").read_text())["entries"]
    except (OSError, ValueError, KeyError):
        return set()
    return {label for e in entries.values() for label in (e.get("kernels") or {})}


# -- the background measurement, in-process (injected timing) --------------------------------

def test_missing_kernels_are_measured_one_by_one_and_never_again(tiny, tmp_path):
    model, _ = weights_mod.load_any(tiny)
    cache = tmp_path / "p.json"
    said: list[str] = []
    choice, measured = ap.measure_missing(model, "cpu", 5, 4, cache=cache, timer=fake_timer(RATES),
                                          log=said.append)
    assert measured == LABELS and choice.precision.label == "fp32-wino"
    assert ap.measure_missing(model, "cpu", 5, 4, cache=cache, timer=fake_timer(RATES))[1] == []
    # the engine reads the completed entry as a cached choice
    cached = prec.choose_precision(model, "cpu", 5, 4, cache=cache, timer=lambda *a: pytest.fail("measured"))
    assert cached.source == "cached" and cached.precision.label == "fp32-wino"
    assert said == [f"precision: measuring {', '.join(LABELS)} at 5x5"]


def test_a_partial_cache_is_completed_not_measured_again(tiny, tmp_path):
    model, _ = weights_mod.load_any(tiny)
    cache = tmp_path / "p.json"
    key = ap.entry_key(model, "cpu", 5)
    ap.save_kernel(cache, key, "fp32", {"rate": 11.0, "diff": {"policy": 0.0, "value": 0.0}})
    timed = []

    def timer(p, forward, rows, seconds):
        timed.append(p.label)
        return RATES[p.label]
    choice, measured = ap.measure_missing(model, "cpu", 5, 4, cache=cache, timer=timer)
    assert "fp32" not in measured and sorted(measured) == sorted(set(LABELS) - {"fp32"})
    assert "fp32" not in timed and choice.precision.label == "fp32-wino"


def test_a_round_that_overlapped_the_engines_work_is_taken_again(tiny):
    model, _ = weights_mod.load_any(tiny)
    bench = ap._Bench(model, "cpu", 5, 4)
    state = {"busy": 0, "rounds": 0}

    def timer(p, forward, rows, seconds):
        state["rounds"] += 1
        if state["rounds"] == 1:
            state["busy"] += 1           # the engine ran a forward pass meanwhile
        return 5.0
    record = ap.measure_kernel(bench, prec.DEFAULT, prec.TOLERANCE, timer=timer, rounds=2,
                               busy=lambda: state["busy"])
    assert state["rounds"] == 3 and record["rate"] == 5.0


@pytest.mark.slow          # the engine's process from its start (torch loaded, precision probed)
def test_the_engine_switches_to_the_measured_precision(tiny, tmp_path):
    model, _ = weights_mod.load_any(tiny)
    from engine.nets.evaluator import TorchEvaluator
    ev = TorchEvaluator(model, channels_last=False)
    lines: list[str] = []
    bg = ap.BackgroundMeasurement(model, "cpu", 5, 4, ev, cache=tmp_path / "p.json",
                                  timer=fake_timer(RATES), log=lines.append)
    bg.start()
    bg.join(TIMEOUT)
    assert ev.winograd and bg.choice.precision.label == "fp32-wino"
    assert lines[0].startswith("precision: measuring") and lines[-1].startswith("precision: from now on fp32 Winograd")


def test_the_probe_takes_the_fastest_accurate_kernel(tiny):
    model, _ = weights_mod.load_any(tiny)
    choice = ap.probe(model, "cpu", 5, 4, timer=fake_timer(RATES))
    assert choice.source == "probed" and choice.precision.label == "fp32-wino"
    known = {"fp32": {"rate": 99.0, "diff": {"policy": 0.0, "value": 0.0}}}
    assert ap.probe(model, "cpu", 5, 4, known, timer=fake_timer(RATES)).precision.label == "fp32"


# -- tune -------------------------------------------------------------------------------------

def test_tune_twice_measures_nothing_the_second_time(tiny, tmp_path, monkeypatch, capsys):
    from engine.cli import tune
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(prec, "default_timer", fake_timer(RATES))
    threads = torch.get_num_threads()
    try:
        assert tune.main(["--size", "5", "--weights", str(tiny)]) == 0
        first = capsys.readouterr().out
        assert tune.main(["--size", "5", "--weights", str(tiny)]) == 0
        second = capsys.readouterr().out
    finally:
        torch.set_num_threads(threads)
    assert f"measured {len(LABELS)} kernels" in first and "fp32-wino" in first
    assert "measured nothing" in second and "tiny.pt" in second
    assert kernels_in(tmp_path) == set(LABELS)


# -- the engine process ---------------------------------------------------------------------------

def test_name_is_answered_while_the_net_cannot_load(tmp_path):
    """--weights is a FIFO nobody writes: loading blocks on it for good, and the identification
    commands are answered all the same; quit ends the process."""
    fifo = tmp_path / "net.pt"
    os.mkfifo(fifo)
    proc = start(["--weights", str(fifo), "--size", "9"], tmp_path / "xdg")
    try:
        out, err = proc.communicate("protocol_version\nname\nversion\nboardsize 9\nkomi 6.5\nquit\n",
                                    timeout=TIMEOUT)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert out == "= 2\n\n= goengine\n\n= 1.15.0\n\n= \n\n= \n\n= \n\n", out
    assert "Traceback" not in err


@pytest.mark.slow          # two engine starts, each measuring kernels (12 s on a loaded core)
def test_a_start_killed_mid_measurement_leaves_what_it_measured(tiny, tmp_path):
    cache = tmp_path / "xdg"
    args = ["--weights", str(tiny), "--size", "5", "--threads", "1"]
    proc = start(args, cache)
    try:
        deadline = time.monotonic() + TIMEOUT
        while not kernels_in(cache) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.01)
        proc.kill()
    finally:
        proc.kill()
        proc.communicate()
    first = kernels_in(cache)
    assert first, "nothing was measured before the kill"
    proc = start(args, cache)
    lines: list[str] = []
    watchdog = threading.Timer(TIMEOUT, proc.kill)       # a silent engine ends the readline below
    watchdog.start()
    try:
        while True:
            line = proc.stderr.readline()
            if not line:
                break
            lines.append(line)
            if line.startswith("precision: measuring") or "measured earlier" in line:
                break
    finally:
        watchdog.cancel()
        proc.kill()
        proc.communicate()
    said = "".join(lines)
    if first == set(LABELS):                 # killed after the last kernel: nothing is left
        assert "precision: measuring" not in said, said
        return
    line = next((x for x in lines if x.startswith("precision: measuring")), None)
    assert line is not None, f"the second start said no measurement before it ended: {said!r}"
    measuring = line.split("measuring ", 1)[1].split(" at ")[0].split(", ")
    assert set(measuring) == set(LABELS) - first, (line, first)
    assert all(label in line.split(" at ", 1)[1] for label in first)     # "(... cached)"


def run_engine(args: list[str], stdin: str, cache: Path, python: list[str] | None = None):
    cmd = python or [sys.executable, "-m", "engine"]
    return subprocess.run([*cmd, *args], cwd=ROOT, env=engine_env(cache), input=stdin,
                          capture_output=True, text=True, timeout=TIMEOUT)


def one_error_line(stderr: str) -> str:
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in stderr, stderr
    return errors[0]


def test_a_missing_net_is_one_line_and_exit_status_2(tmp_path):
    r = run_engine(["--weights", str(tmp_path / "nope.pt")], "name\n", tmp_path)
    assert r.returncode == 2 and r.stdout == ""
    line = one_error_line(r.stderr)
    assert "nope.pt not found" in line and "--weights" in line


@pytest.mark.slow          # the engine's process from its start (torch loaded, precision probed)
def test_a_corrupt_net_answers_the_first_command_that_needs_it_and_exits(tmp_path):
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"PK\x03\x04 this is not a network" * 10)
    r = run_engine(["--weights", str(bad), "--size", "9"], "name\ngenmove b\nname\n", tmp_path)
    assert r.returncode == 1
    line = one_error_line(r.stderr)
    assert "cannot load the network" in line and "bad.pt" in line
    assert r.stdout.startswith("= goengine\n\n?" + " " + line) and r.stdout.count("\n\n") == 2, r.stdout


def test_a_c_core_that_does_not_load_is_one_line(tmp_path):
    hide = ("import sys; sys.modules['engine._core'] = None; from engine.__main__ import main; "
            "sys.exit(main(sys.argv[1:]))")
    r = run_engine(["--size", "9"], "name\n", tmp_path, python=[sys.executable, "-c", hide])
    assert r.returncode == 2 and r.stdout == ""
    assert "C core" in one_error_line(r.stderr)


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
@pytest.mark.slow          # the engine's process from its start (torch loaded, precision probed)
def test_a_cuda_error_at_start_is_one_line(tiny, tmp_path):
    r = run_engine(["--weights", str(tiny), "--size", "5", "--device", "cuda"], "name\ngenmove b\n", tmp_path)
    assert r.returncode == 1
    line = one_error_line(r.stderr)
    assert "CUDA" in line and "--device cpu" in line
    assert r.stdout.startswith("= goengine\n\n? error: CUDA")


@pytest.mark.slow          # the engine's process from its start (torch loaded, precision probed)
def test_uniform_weights_play_at_once_without_torch_work(tmp_path):
    r = run_engine(["--weights", "uniform", "--size", "9", "--visits", "8", "--seed", "1", "--threads", "1"],
                   "name\ngenmove b\nquit\n", tmp_path)
    assert r.returncode == 0 and r.stdout.startswith("= goengine\n\n= ") and "Traceback" not in r.stderr


def test_the_loader_thread_reports_failures_once(capsys):
    from engine.errors import StartupError
    from engine.cli.startup import BackgroundStart
    said: list[str] = []
    gate = threading.Event()

    def load():
        gate.wait(TIMEOUT)
        raise OSError("disk gone")
    loading = BackgroundStart(load, said.append)
    assert not loading.done()
    gate.set()
    with pytest.raises(StartupError, match="disk gone"):
        loading.wait()
    assert said == ["error: disk gone"]
