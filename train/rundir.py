"""The run directory: the one module that knows where a training run keeps its files.

Pipeline stages (self-play, trainer, later gating) are separate processes that hand off only
through this directory, so any of them can be killed at any moment and restarted::

    RUN_DIR/
      config.json          the run's settings (written once by ``train.loop``; --resume reads it)
      state.json           a summary for people (games, step, latest model); never read back as truth
      metrics.jsonl        one JSON object per line, appended by every stage ("source" says which)
      lock                 held (flock) by the running ``train.loop``: one loop per run directory
      pipeline.json        sync pipeline only: the phase in force (written by ``train.loop``, read by
                           the stages: who may work now, up to which game count, which candidate)
      models/
        model-0000000.pt   checkpoints named by training step (engine.nets.weights format)
        model-0000400.pt.corrupt  a checkpoint that did not load, set aside by --resume (or the
                           trainer) so that the newest valid one before it is used
        trainer.pt         optimizer state (momentum) of the latest checkpoint, for --resume
        best.json          --mode agz: the model self-play uses (the last promoted; written by the
                           gate, atomically; absent = model-0000000)
      games/
        g00000042-w00.npz  training record of self-play game 42 of worker 0 (train.games.records)
      sgf/
        g00000042-w00.sgf  the same game as SGF
      gating/
        model-0000200.json the decision about candidate model-0000200 (verdict, counts, SPRT, lag);
                           its existence means "decided": a gate killed mid-match gates it again
        model-0000200/
          g00007.sgf       gating game 7 (numbered in start order), PB/PW = the model ids
      logs/
        selfplay-w00.log   stdout/stderr of each stage process
        trainer.log
        gate.log

Every file is written atomically (temporary file in the same folder, fsync, ``os.replace``), so a
reader sees either nothing or a complete file.  Counters are derived from the files on disk
(games = ``games/*.npz``, training step = newest checkpoint), never from a counter that a crash
could leave stale: a kill -9 loses at most the games in flight.

Game names sort chronologically per worker: ``g{seq:08d}-w{worker:02d}``; each worker numbers its
own games (next = 1 + its highest on disk), so workers never collide and need no coordination.
"""
from __future__ import annotations

import json
import os
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from engine.core import winrate_of
from engine.nets import flops
from train.usage import process_id
from engine.fileio import atomic_write  # noqa: F401 - re-exported for the train modules

MODEL_RE = re.compile(r"^model-(\d{7,})\.pt$")
GAME_RE = re.compile(r"^g(\d{8,})-w(\d{2,})\.npz$")


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    atomic_write(path, lambda f: f.write(text), mode="w")


def atomic_write_json(path: str | os.PathLike, obj: Any) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True) + "\n")


@dataclass(frozen=True)
class GameName:
    """A finished game's name: its worker and that worker's sequence number."""

    seq: int
    worker: int

    @property
    def stem(self) -> str:
        return f"g{self.seq:08d}-w{self.worker:02d}"

    @classmethod
    def parse(cls, filename: str) -> "GameName | None":
        m = GAME_RE.match(filename)
        return cls(int(m.group(1)), int(m.group(2))) if m else None


class RunDir:
    """Paths and listings of one run directory (see the module docstring for the layout)."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        self.config_path = self.root / "config.json"
        self.state_path = self.root / "state.json"
        self.metrics_path = self.root / "metrics.jsonl"
        self.lock_path = self.root / "lock"
        self.models = self.root / "models"
        self.games = self.root / "games"
        self.sgf = self.root / "sgf"
        self.logs = self.root / "logs"
        self.plots = self.root / "plots"
        self.gating = self.root / "gating"
        self.pipeline_path = self.root / "pipeline.json"
        self.trainer_state_path = self.models / "trainer.pt"
        self.best_path = self.models / "best.json"

    def make_root(self) -> None:
        """Creates the run directory itself (and its parents) if needed.  ValueError with a
        one-line reason when it cannot hold a run: a file in the way, a path below a file, a
        place where nothing can be written."""
        if self.root.exists() and not self.root.is_dir():
            raise ValueError(f"{self.root} is a file, not a directory: it cannot hold a run")
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            where = f" ({exc.filename})" if exc.filename and str(exc.filename) != str(self.root) else ""
            raise ValueError(f"cannot create the run directory {self.root}: "
                             f"{exc.strerror or exc}{where}") from None
        if not os.access(self.root, os.W_OK | os.X_OK):
            raise ValueError(f"the run directory {self.root} is not writable")

    def create(self) -> "RunDir":
        """Makes the folders (existing ones are kept); returns self."""
        for d in (self.root, self.models, self.games, self.sgf, self.logs, self.gating):
            d.mkdir(parents=True, exist_ok=True)
        return self

    def exists(self) -> bool:
        return self.config_path.is_file()

    # -- config and state -----------------------------------------------------------------
    def read_config(self) -> dict[str, Any]:
        """The run's settings; FileNotFoundError when the run was never created, ValueError
        (naming the file) when config.json is not a JSON object."""
        try:
            config = json.loads(self.config_path.read_text())
        except NotADirectoryError:
            raise FileNotFoundError(f"{self.root} is not a run directory") from None
        except ValueError as exc:          # JSONDecodeError, UnicodeDecodeError
            raise ValueError(f"{self.config_path}: corrupt run config ({exc})") from None
        if not isinstance(config, dict):
            raise ValueError(f"{self.config_path}: corrupt run config (not a JSON object)")
        return config

    def write_config(self, config: dict[str, Any]) -> None:
        atomic_write_json(self.config_path, config)

    def write_state(self, **extra: Any) -> dict[str, Any]:
        """Writes state.json from the files on disk (plus ``extra``); returns it."""
        latest = self.latest_model()
        state = {"games": self.count_games(), "step": latest[0] if latest else None,
                 "latest_model": latest[1].name if latest else None, "updated": time.time()}
        state.update(extra)
        atomic_write_json(self.state_path, state)
        return state

    # -- models ---------------------------------------------------------------------------
    def model_path(self, step: int) -> Path:
        return self.models / f"model-{int(step):07d}.pt"

    @staticmethod
    def model_id(path: str | os.PathLike) -> str:
        """The id games record for a checkpoint: its file name without ``.pt``."""
        return Path(path).name[:-3] if str(path).endswith(".pt") else Path(path).name

    def list_models(self) -> list[tuple[int, Path]]:
        """(step, path) of every checkpoint, oldest first."""
        out = []
        if self.models.is_dir():
            for p in self.models.iterdir():
                m = MODEL_RE.match(p.name)
                if m:
                    out.append((int(m.group(1)), p))
        return sorted(out)

    def latest_model(self) -> tuple[int, Path] | None:
        models = self.list_models()
        return models[-1] if models else None

    def latest_valid_model(self, load: Callable[[Path], Any],
                           log: Callable[[str], None] | None = None) -> tuple[int, Path, Any] | None:
        """(step, path, ``load(path)``) of the newest checkpoint that loads.  A checkpoint that
        ``load`` rejects (ValueError, e.g. engine.nets.weights.WeightsError: truncated, empty, random
        bytes) is renamed to ``NAME.corrupt``, so no stage trips on it again, with a line to
        ``log`` (default: stderr) naming it and why; then the one before it is tried.  None
        when no checkpoint loads."""
        if log is None:
            def log(text: str) -> None:
                print(text, file=sys.stderr, flush=True)
        while True:
            latest = self.latest_model()
            if latest is None:
                return None
            step, path = latest
            try:
                return step, path, load(path)
            except ValueError as exc:
                aside = path.with_name(path.name + ".corrupt")
                n = 1
                while aside.exists():
                    aside = path.with_name(f"{path.name}.corrupt.{n}")
                    n += 1
                try:
                    os.replace(path, aside)
                except FileNotFoundError:
                    continue                           # set aside by another process meanwhile
                log(f"skipping corrupt checkpoint {path} (renamed to {aside.name}): {exc}")

    def best_model(self) -> tuple[int, Path] | None:
        """(step, path) of the current best (--mode agz): the model named by ``models/best.json``,
        else the first checkpoint; None when there is no checkpoint."""
        try:
            step = int(json.loads(self.best_path.read_text())["step"])
            path = self.model_path(step)
            if path.is_file():
                return step, path
        except (FileNotFoundError, ValueError, KeyError, TypeError):
            pass
        models = self.list_models()
        return models[0] if models else None

    def set_best(self, step: int, **extra: Any) -> None:
        """Points ``models/best.json`` at checkpoint ``step`` (atomically)."""
        atomic_write_json(self.best_path, {"step": int(step), "model": self.model_path(step).name,
                                           "time": time.time(), **extra})

    def selfplay_model(self, mode: str) -> tuple[int, Path] | None:
        """The checkpoint self-play plays with: the best in ``agz`` mode, the latest in ``az``."""
        return self.best_model() if mode == "agz" else self.latest_model()

    # -- gating ---------------------------------------------------------------------------
    def decision_path(self, model_id: str) -> Path:
        """Where the gating decision about candidate ``model_id`` is written."""
        return self.gating / f"{model_id}.json"

    def read_decision(self, model_id: str) -> dict[str, Any] | None:
        try:
            return json.loads(self.decision_path(model_id).read_text())
        except (FileNotFoundError, ValueError):
            return None

    def write_decision(self, model_id: str, decision: dict[str, Any]) -> None:
        atomic_write_json(self.decision_path(model_id), decision)

    def gating_sgf_path(self, model_id: str, index: int) -> Path:
        """SGF of gating game ``index`` (start order) of candidate ``model_id``; makes the folder."""
        d = self.gating / model_id
        d.mkdir(parents=True, exist_ok=True)
        return d / f"g{int(index):05d}.sgf"

    # -- sync pipeline phase --------------------------------------------------------------
    def read_pipeline(self) -> dict[str, Any] | None:
        """The sync pipeline's phase ({"phase": "selfplay"|"train"|"gate", "generation": g, ...}),
        or None (async pipeline: every stage works all the time)."""
        try:
            return json.loads(self.pipeline_path.read_text())
        except (FileNotFoundError, ValueError):
            return None

    def write_pipeline(self, phase: dict[str, Any] | None) -> None:
        """Sets the phase (None removes the file: async)."""
        if phase is None:
            try:
                self.pipeline_path.unlink()
            except FileNotFoundError:
                pass
        else:
            atomic_write_json(self.pipeline_path, {**phase, "time": time.time()})

    # -- games ----------------------------------------------------------------------------
    def game_paths(self, name: GameName) -> tuple[Path, Path]:
        """(npz, sgf) paths of a game."""
        return self.games / f"{name.stem}.npz", self.sgf / f"{name.stem}.sgf"

    def list_games(self) -> list[tuple[GameName, Path]]:
        """Every finished game's training record, oldest first (sequence, then worker)."""
        out = []
        if self.games.is_dir():
            with os.scandir(self.games) as it:
                for e in it:
                    n = GameName.parse(e.name)
                    if n is not None:
                        out.append((n, Path(e.path)))
        out.sort(key=lambda t: (t[0].seq, t[0].worker))
        return out

    def count_games(self) -> int:
        if not self.games.is_dir():
            return 0
        with os.scandir(self.games) as it:
            return sum(1 for e in it if GAME_RE.match(e.name))

    def next_game_seq(self, worker: int) -> int:
        """The sequence number worker ``worker`` gives its next game (1 + its highest on disk)."""
        seqs = [n.seq for n, _ in self.list_games() if n.worker == worker]
        return max(seqs) + 1 if seqs else 0

    def log_path(self, stage: str) -> Path:
        return self.logs / f"{stage}.log"

    # -- metrics --------------------------------------------------------------------------
    def append_metrics(self, record: dict[str, Any]) -> None:
        """Appends one JSON line.  One ``write`` on an O_APPEND descriptor: lines from several
        processes never interleave; a kill -9 can at worst leave a partial LAST line, which
        :meth:`read_metrics` skips.  Every record carries the writing process's id and its CPU
        seconds so far (all its threads), from which ``train.match.ladder`` counts a run's CPU-hours, and
        its FLOPs so far (:mod:`engine.nets.flops`), from which compute budgets are counted."""
        record = {"time": round(time.time(), 3), "pid": os.getpid(), "proc": process_id(),
                  "cpu_s": round(time.process_time(), 2), "flops": round(flops.COUNTER.total), **record}
        line = (json.dumps(record, separators=(",", ":"), default=_json_default) + "\n").encode()
        fd = os.open(self.metrics_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)

    def read_metrics(self, source: str | None = None) -> list[dict[str, Any]]:
        """Every complete metrics record (optionally of one source), in file order."""
        return list(iter_metrics(self.metrics_path, source))

    def remove_stale_temps(self) -> int:
        """Deletes temporary files left by writers killed mid-write; returns how many."""
        n = 0
        dirs = [self.root, self.models, self.games, self.sgf, self.gating]
        if self.gating.is_dir():
            dirs += [d for d in self.gating.iterdir() if d.is_dir()]
        for d in dirs:
            if d.is_dir():
                for p in d.glob(".*.tmp"):
                    try:
                        p.unlink()
                        n += 1
                    except OSError:
                        pass
        return n


def current_form(rec: dict[str, Any]) -> dict[str, Any]:
    """A metrics record in today's keys: older self-play records gave the resignation threshold
    as a root value (``resign_threshold``, -1..1), today's as a winrate (``resign_winrate``)."""
    if "resign_threshold" in rec and "resign_winrate" not in rec:
        value = rec.pop("resign_threshold")
        rec["resign_winrate"] = None if value is None else winrate_of(value)
    return rec


def iter_metrics(path: str | os.PathLike, source: str | None = None) -> Iterator[dict[str, Any]]:
    """Every complete record of the metrics file at ``path`` (of one ``source``), in today's
    keys (:func:`current_form`)."""
    try:
        with open(path, "rb") as f:
            for line in f:
                if not line.endswith(b"\n"):
                    break        # a line cut by a kill: ignore it
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if source is None or rec.get("source") == source:
                    yield current_form(rec)
    except FileNotFoundError:
        return


class MetricsTail:
    """Reads the records appended to a metrics file since the last call (for progress bars)."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.offset = 0

    def read(self) -> list[dict[str, Any]]:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:
            return []
        end = data.rfind(b"\n") + 1
        self.offset += end
        out = []
        for line in data[:end].splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
        return out


def _json_default(obj: Any) -> Any:
    try:
        if isinstance(obj, np.generic):
            return obj.item()
        if isinstance(obj, np.ndarray):
            return obj.tolist()
    except ImportError:  # pragma: no cover
        pass
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def repair_metrics(path: str | os.PathLike) -> None:
    """Ends a metrics file cut mid-line by a kill with a newline, so the next record starts clean."""
    try:
        with open(path, "rb+") as f:
            f.seek(0, os.SEEK_END)
            if f.tell() == 0:
                return
            f.seek(-1, os.SEEK_END)
            if f.read(1) != b"\n":
                f.write(b"\n")
    except FileNotFoundError:
        return
