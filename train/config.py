"""A training run's settings: one dataclass, saved as RUN_DIR/config.json, read by every stage.

Each field carries its command-line help, so ``python -m train.loop --help`` and the saved
config cannot drift apart.  Defaults suit 9x9 on a laptop CPU:

- net 6 blocks x 64 filters (~0.5 M parameters): big enough to learn 9x9 life and death and
  shape (KataGo's smallest nets are b6c96; Leela Zero began at 6x128 on 19x19), small enough
  that a 4-8 core laptop evaluates a few thousand 9x9 positions a second;
- 100 visits per move (AlphaZero used 800 on 19x19; 9x9 games are short and a weak early net
  gains little from deep search, so more games beat deeper games early on);
- 64 games in flight and 256 leaves per forward pass (4 leaves per tree per step: little virtual
  loss distortion, and batches large enough that the forward pass, not Python, is the cost);
- SGD with momentum 0.9, lr 0.02, weight decay 1e-4, batch 256, 1 training step per new game
  (each position is sampled about 3-4 times while it is in the window);
- gating (``--mode agz``): 55% of up to 400 games, SPRT(elo0=0, elo1=35, alpha=beta=0.05)
  stopping early (AlphaGo Zero's threshold and game count, Leela Zero's early stop).
"""
from __future__ import annotations

import argparse
import dataclasses
import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from engine.play import searchopts
from engine.core import SearchParams
from engine.nets.netconfig import NetConfig
from engine.play.memory import format_memory, parse_memory
from engine.play.settings import PlaySettings, resign_winrate
from engine.play.settings_cli import TextForm, add_dataclass_arguments, described as _opt, field_options, fields_from
from engine.rules import AREA_PRESETS, DEFAULT_KOMI, DEFAULT_RULES, Rules
from train.match.stats import SPRT_ALPHA, SPRT_BETA, SPRT_ELO0, SPRT_ELO1, SprtResult, sprt

_SEARCH = SearchParams()   # C's search defaults

# Self-play's PlaySettings fields given as options (field -> option and config.json key).
PLAY_OPTIONS = {name: name for name in ("visits", "cheap_visits", "full_search_prob", "temperature_moves",
                                        "max_moves", "root", "gumbel_considered")}
# Their help where self-play words it differently, and self-play's own defaults.
PLAY_HELPS = {"temperature_moves": "moves played by sampling visits^(1/T) (default N*N//8)"}
SELFPLAY_PLAY = PlaySettings(temperature_moves=None)

# Self-play's search (RunConfig.search): C's defaults with AlphaGo Zero's exploration, Dirichlet
# noise of weight 0.25 at the root of full searches and opening moves sampled at T 1.  The fields
# given as options (field -> option and config.json key), their help, and the one given as text
# (a memory size, "" for C's default).
SELFPLAY_SEARCH = dataclasses.replace(_SEARCH, noise_epsilon=0.25, temperature=1.0)
SEARCH_OPTIONS = {"c_puct": "c_puct", "noise_alpha": "noise_alpha", "noise_epsilon": "noise_epsilon",
                  "temperature": "temperature", "max_memory": "max_memory", "forced_playouts_k": "forced_playouts"}
SEARCH_HELPS = {
    "c_puct": "PUCT exploration constant",
    "noise_alpha": "total Dirichlet concentration, spread over the legal moves (0.03 per move on 19x19, "
                   "as AlphaGo Zero)",
    "noise_epsilon": "weight of Dirichlet noise at the root of full searches (0: off)",
    "temperature": "T of the opening moves that sample visits^(1/T)",
    "max_memory": "memory cap of each search tree in self-play and gating, e.g. 256M or 1G (default: the "
                  f"engine's, {format_memory(_SEARCH.max_memory)}); a full tree stops growing and re-evaluates "
                  "its leaves",
    "forced_playouts_k": "--root puct: KataGo's forced playouts in full searches, k of sqrt(k * prior * visits), "
                         "with policy-target pruning (0: off; KataGo uses 2)",
}
SEARCH_TEXTS = {"max_memory": TextForm(lambda text: parse_memory(text) if text else _SEARCH.max_memory,
                                       lambda size: "" if size == _SEARCH.max_memory else format_memory(size))}

# A new network's NetConfig fields given as options (field -> option and config.json key), with
# their help there.
NET_OPTIONS = {"blocks": "blocks", "filters": "filters", "feature_set": "feature_set"}
NET_HELPS = {"blocks": "residual blocks of a new network", "filters": "filters of a new network",
             "feature_set": "input feature set of a new network (rich, lz18)"}

MODES = ("az", "agz")
PIPELINES = ("async", "sync")


# Gating verdicts (train.gating)
PROMOTE, REJECT, CONTINUE = "promote", "reject", "continue"
_EPS = 1e-9          # 0.55 * 400 is 220.00000000000003 in floating point


@dataclass(frozen=True)
class GateRule:
    """When a gated candidate is promoted (the rule: :mod:`train.gating`'s docstring).  A
    training run's ``--gate-*`` options and config.json keys (:data:`GATE_OPTIONS`)."""

    threshold: float = _opt(0.55, "score a candidate needs against the best to be promoted")
    max_games: int = _opt(400, "most gating games counted per candidate")
    elo0: float = _opt(SPRT_ELO0, "SPRT early stop: H0 elo of the candidate over the best")
    elo1: float = _opt(SPRT_ELO1, "SPRT early stop: H1 elo")
    alpha: float = _opt(SPRT_ALPHA, "SPRT false-promotion rate")
    beta: float = _opt(SPRT_BETA, "SPRT false-rejection rate")

    def decide(self, wins: int, losses: int, draws: int = 0) -> tuple[str, str, SprtResult]:
        """(verdict, reason, SPRT result) after these counted games; verdict is PROMOTE, REJECT
        or CONTINUE."""
        n = wins + losses + draws
        points = wins + 0.5 * draws
        need = self.threshold * self.max_games
        test = sprt(wins, losses, draws, self.elo0, self.elo1, self.alpha, self.beta)
        if points + max(0, self.max_games - n) < need - _EPS:
            return REJECT, (f"{self.threshold:.0%} of {self.max_games} out of reach "
                            f"({points:g} points in {n} games, at most {points + max(0, self.max_games - n):g} reachable)"), test
        if points >= need - _EPS:
            return PROMOTE, f"{points:g} points reach {self.threshold:.0%} of {self.max_games}", test
        if test.verdict == "accept":
            return PROMOTE, f"SPRT accept after {n} games (LLR {test.llr:.2f})", test
        if test.verdict == "reject":
            return REJECT, f"SPRT reject after {n} games (LLR {test.llr:.2f})", test
        return CONTINUE, "", test


# GateRule's fields given as options (field -> option and config.json key).
GATE_OPTIONS = {"threshold": "gate_threshold", "max_games": "gate_games", "elo0": "gate_elo0",
                "elo1": "gate_elo1", "alpha": "gate_alpha", "beta": "gate_beta"}


# Gating's PlaySettings: the fields given as options (field -> option and config.json key), their
# help there and their defaults (no policy targets; visits None: --visits, temperature_moves None:
# N//2).  train.gating.gate_settings fills in the rest per run; gating's search is self-play's
# with --gate-temperature and neither Dirichlet noise nor forced playouts
# (RunConfig.gate_search_params).
GATE_PLAY_OPTIONS = {"visits": "gate_visits", "temperature_moves": "gate_temperature_moves", "resign": "gate_resign"}
GATE_PLAY_HELPS = {"visits": "root visits per gating move (default --visits)",
                   "temperature_moves": "opening moves of gating games sampled at --gate-temperature, for variety "
                                        "(default N//2)",
                   "resign": "gating games resign when the winrate falls below this (0: never)"}
GATE_PLAY = PlaySettings(visits=None, temperature_moves=None, resign=0.05, record_policy=False)


@dataclass
class TrainSettings:
    """How the trainer steps (:class:`train.learn.step.Trainer`): optimiser, learning-rate
    schedule, loss weights and precision.  A training run's options and config.json keys
    (:data:`TRAIN_OPTIONS`)."""

    lr: float = _opt(0.02, "learning rate (SGD)")
    lr_warmup: int = _opt(100, "steps of linear learning-rate warm-up")
    lr_drops: str = _opt("", "learning-rate drops STEP:FACTOR,... (e.g. 20000:0.1,40000:0.01)")
    momentum: float = _opt(0.9, "SGD momentum")
    weight_decay: float = _opt(1e-4, "L2 weight decay")
    value_weight: float = _opt(1.0, "weight of the value loss (MSE on the tanh value)")
    ownership_weight: float = _opt(1.0, "weight of the ownership loss (mean squared error per point)")
    score_weight: float = _opt(0.5, "weight of the score loss (Huber on score / score_scale)")
    amp: str = _opt("auto", "training precision: auto (autocast bf16/fp16 on CUDA; on a CPU bf16 autocast or "
                            "fp32, whichever is faster there, measured once and cached), fp32, bf16, fp16",
                    choices=("auto", "fp32", "bf16", "fp16"))

    def drops(self) -> list[tuple[int, float]]:
        """:attr:`lr_drops` parsed (:func:`parse_lr_drops`); ValueError if malformed."""
        return parse_lr_drops(self.lr_drops)


# TrainSettings' fields given as options (field -> option and config.json key).
TRAIN_OPTIONS = {f.name: f.name for f in dataclasses.fields(TrainSettings)} | {"amp": "train_amp"}


@dataclass
class RunConfig:
    # what is played
    mode: str = _opt("az", "az: self-play always uses the latest checkpoint (no gating); agz: a checkpoint "
                           "must beat the current best (gating) before self-play uses it", choices=MODES)
    pipeline: str = _opt("async", "async: self-play, training and gating run at once on their own shares of "
                                  "the machine; sync: self-play a generation, train, gate, repeat (self-play "
                                  "waits meanwhile)", choices=PIPELINES)
    generation_games: int | None = _opt(None, "sync pipeline: self-play games per generation (default "
                                              "checkpoint_every / steps_per_game: one candidate per "
                                              "generation, as many steps per game as async)")
    board_size: int = _opt(9, "board size (2..19)")
    rules: Rules = _opt(Rules.default(), "rules preset: chinese (simple ko, no "
                        "suicide) or tromp-taylor", komi_help="komi", choices=None)   # saved and given as komi, rules (aliases too)
    # the network
    net: NetConfig = field(default_factory=NetConfig, metadata={"options": NET_OPTIONS, "helps": NET_HELPS})
    # (a new network's architecture: NetConfig's defaults, given as --blocks, --filters, --feature-set)
    init_weights: str | None = _opt(None, "start the run from this network (one of ours, e.g. a shipped "
                                          "weights/9x9.pt or a checkpoint of another run) instead of a "
                                          "random one; --blocks/--filters/--feature-set are then ignored")
    init_cpu_hours: float = _opt(0.0, "CPU-hours that produced --init-weights, added to this run's own in "
                                      "the ladder (Elo against CPU-hours of the whole lineage); default: "
                                      "the file's own record (key cpu_hours), else 0")
    init_games: int = _opt(0, "self-play games that produced --init-weights, added like --init-cpu-hours "
                              "(default: the file's key games, else 0)")
    # self-play search
    play: PlaySettings = field(default_factory=lambda: dataclasses.replace(SELFPLAY_PLAY),
                               metadata={"options": PLAY_OPTIONS, "helps": PLAY_HELPS})
    # (the options and config.json keys of PLAY_OPTIONS; train.selfplay.play_settings sets the
    # other fields per game: temperature moves, move cap, calibrated resignation)
    batch: int = _opt(256, "leaves per forward pass in self-play (spread over the games in flight)")
    parallel_games: int = _opt(64, "self-play games in flight per self-play process")
    max_leaves_per_search: int = _opt(8, "cap on leaves one tree contributes to a batch")
    batch_ramp: int = _opt(0, "self-play's and gating's trees grow their leaves per step with them: at most one "
                              "per BATCH_RAMP root visits, at least one (as the engine's --batch-ramp); 0: up to "
                              "--max-leaves-per-search from a tree's first visit, under virtual loss")
    selfplay_lanes: int = _opt(1, "1, or 2: the self-play games split into two lanes whose forward passes "
                                  "run on a worker thread while the other lane searches (keeps a GPU busy; "
                                  "other seeds' games than with 1)", choices=(1, 2))
    selfplay_search_threads: int = _opt(1, "threads that collect and back up each self-play batch, each over "
                                           "its part of the games (the same games for any number)")
    selfplay_cuda_graphs: bool = _opt(False, "on CUDA: self-play replays its forward passes from CUDA graphs "
                                             "(one per padded batch size; ignored on a CPU)")
    search: SearchParams = field(default_factory=lambda: dataclasses.replace(SELFPLAY_SEARCH),
                                 metadata={"options": SEARCH_OPTIONS, "helps": SEARCH_HELPS, "texts": SEARCH_TEXTS})
    # (the options and config.json keys of SEARCH_OPTIONS; search_params() adds the rest)
    search_options: str = _opt("", "KataGo's search options of self-play and gating, NAME=VALUE[,...] "
                                   "by our names or KataGo's (engine.play.searchopts: score utility, "
                                   "cpuctUtilityStdev*; not those with their own option, such as "
                                   "--c-puct); default: the "
                                   "engine's defaults")
    allow_resign: bool = _opt(True, "self-play games may resign (the winrate threshold is calibrated on the "
                                    "no-resign games)")
    no_resign_fraction: float = _opt(0.1, "share of games never allowed to resign (calibration)")
    resign_fp_target: float = _opt(0.05, "largest accepted share of false resignations")
    resign_min_games: int = _opt(20, "no-resign games needed before anybody resigns")
    resign_max_winrate: float = _opt(0.25, "the calibrated resignation winrate is at most this: nobody resigns "
                                           "above it (0..1)")
    on_new_model: str = _opt("switch", "games in flight when a checkpoint arrives: discard, finish "
                                       "(with the old model) or switch (continue with the new one)",
                             choices=("discard", "finish", "switch"))
    keep_old_games: bool = _opt(True, "keep finished games of earlier models in the replay window (off: "
                                      "the window holds only games whose last move the current self-play "
                                      "model chose)")
    cache_size: int = _opt(200_000, "self-play evaluation cache entries")
    inference_dtype: str = _opt("auto", "self-play network precision: auto (measured once per machine, "
                                        "thread count and net shape: the fastest of fp32 (NCHW, channels-last, "
                                        "Winograd), bf16 and fp16 whose outputs stay within tolerance of fp32; "
                                        "cached, see engine.nets.precision), fp32, fp32-nchw, fp32-wino, bf16, fp16",
                                choices=("auto", "fp32", "fp32-nchw", "fp32-wino", "bf16", "fp16"))
    selfplay_workers: int = _opt(1, "self-play processes")
    # training
    window: int = _opt(10_000, "replay window: the most recent games sampled from")
    min_games: int = _opt(64, "games on disk before training starts")
    train_batch: int = _opt(256, "positions per training step")
    train: TrainSettings = field(default_factory=TrainSettings, metadata={"options": TRAIN_OPTIONS})
    steps_per_game: float = _opt(1.0, "training steps allowed per self-play game on disk "
                                      "(the trainer waits when ahead)")
    samples_per_position: float | None = _opt(None, "instead of --steps-per-game: training samples "
                                                    "per self-play position")
    checkpoint_every: int = _opt(100, "training steps between checkpoints (each one a new model)")
    loader_workers: int = _opt(0, "data loader processes (0: one background thread)")
    train_devices: int = _opt(1, "data-parallel trainer processes (torch DistributedDataParallel: gloo "
                                 "on CPUs, NCCL with one GPU each from --train-device's index up); "
                                 "each samples its share of --train-batch from its shard of the "
                                 "replay window; rank 0 writes the checkpoints")
    # gating (--mode agz)
    gate: GateRule = field(default_factory=GateRule, metadata={"options": GATE_OPTIONS})
    gate_workers: int = _opt(2, "gating worker threads (each plays its share of the games in flight)")
    gate_parallel_games: int = _opt(32, "gating games in flight (over all gating workers)")
    gate_play: PlaySettings = field(default_factory=lambda: dataclasses.replace(GATE_PLAY),
                                    metadata={"options": GATE_PLAY_OPTIONS, "helps": GATE_PLAY_HELPS})
    gate_temperature: float = _opt(0.5, "T of the opening moves of gating games (--gate-temperature-moves); gating "
                                        "has no Dirichlet noise and no forced playouts")
    gate_batch: int | None = _opt(None, "leaves per forward pass per gating worker (default --batch)")
    gate_deadline_min: float = _opt(120.0, "a gating game not returned after max(this, factor x median "
                                           "game time) seconds is declared lost (not counted)")
    gate_deadline_factor: float = _opt(4.0, "see --gate-deadline-min")
    # machine
    seed: int = _opt(1, "random seed of the run (initial network, games, sampling)")
    device: str | None = _opt(None, "device of both stages (default: cuda if available, else cpu)")
    selfplay_device: str | None = _opt(None, "device of self-play (default --device)")
    train_device: str | None = _opt(None, "device of the trainer (default --device)")
    gate_device: str | None = _opt(None, "device of gating (default --device)")
    threads: int | None = _opt(None, "torch threads of each process (default: the stage's share of the "
                                     "cores; see --selfplay-threads)")
    selfplay_threads: int | None = _opt(None, "torch threads of each self-play process (default: all cores "
                                              "with --pipeline sync; async: 1/2 of them)")
    train_threads: int | None = _opt(None, "torch threads of the trainer (default: sync all cores; async "
                                           "1/2, with gating 1/4)")
    gate_threads: int | None = _opt(None, "torch threads of gating (default: sync all cores; async 1/4)")
    pin_cpus: bool = _opt(False, "async pipeline: pin each stage to its share of the cores (sched_setaffinity: "
                                 "self-play the first half, trainer and gate the rest), so the shares are real")
    metrics_every: float = _opt(30.0, "seconds between metrics records")

    # -- derived -------------------------------------------------------------------------
    def temperature_plies(self) -> int:
        n = self.board_size
        moves = self.play.temperature_moves
        return moves if moves is not None else n * n // 8

    def move_cap(self) -> int:
        return self.play.move_cap(self.board_size)

    def gate_temperature_plies(self) -> int:
        moves = self.gate_play.temperature_moves
        return moves if moves is not None else self.board_size // 2

    def games_per_generation(self) -> int:
        """Sync pipeline: self-play games per generation."""
        if self.generation_games:
            return int(self.generation_games)
        return max(1, math.ceil(self.checkpoint_every / max(1e-9, self.steps_per_game)))

    def check(self) -> "RunConfig":
        """Raises ValueError for settings that cannot work; returns self."""
        if not 2 <= self.board_size <= 19:
            raise ValueError("--board-size must be 2..19")
        if self.rules.name not in AREA_PRESETS:
            raise ValueError(f"--rules must be one of {', '.join(AREA_PRESETS)}, not {self.rules.name}")
        if self.play.visits < 1:
            raise ValueError("--visits must be positive")
        for name in ("batch", "parallel_games", "train_batch", "checkpoint_every",
                     "window", "max_leaves_per_search", "selfplay_workers",
                     "gate_workers", "gate_parallel_games"):
            if getattr(self, name) < 1:
                raise ValueError(f"--{name.replace('_', '-')} must be positive")
        gate = self.gate
        if gate.max_games < 1:
            raise ValueError("--gate-games must be positive")
        if self.batch_ramp < 0:
            raise ValueError("--batch-ramp must be 0 or more")
        if self.selfplay_search_threads < 1:
            raise ValueError("--selfplay-search-threads must be positive")
        if self.selfplay_lanes not in (1, 2):
            raise ValueError("--selfplay-lanes must be 1 or 2")
        if self.mode not in MODES:
            raise ValueError(f"--mode {self.mode} is not available (known: {', '.join(MODES)})")
        if self.pipeline not in PIPELINES:
            raise ValueError(f"--pipeline must be one of {', '.join(PIPELINES)}")
        if not 0.0 < gate.threshold <= 1.0:
            raise ValueError("--gate-threshold must be in (0, 1]")
        if not gate.elo0 < gate.elo1 or not (0 < gate.alpha < 1 and 0 < gate.beta < 1):
            raise ValueError("gating SPRT needs elo0 < elo1 and alpha, beta in (0, 1)")
        if self.train_devices < 1:
            raise ValueError("--train-devices must be positive")
        if self.train_batch % self.train_devices:
            raise ValueError(f"--train-batch {self.train_batch} must be a multiple of --train-devices "
                             f"{self.train_devices} (each process trains on an equal share)")
        if self.gate_parallel_games < self.gate_workers:
            raise ValueError("--gate-parallel-games must be at least --gate-workers")
        self.train.drops()
        if not 0.0 <= self.resign_max_winrate < 1.0:
            raise ValueError("--resign-max-winrate must be a winrate in [0, 1)")
        if not 0.0 <= self.no_resign_fraction <= 1.0:
            raise ValueError("--no-resign-fraction must be in [0, 1]")
        if self.init_cpu_hours < 0 or self.init_games < 0:
            raise ValueError("--init-cpu-hours and --init-games cannot be negative")
        try:
            given = searchopts.parse_options(self.search_options)
        except ValueError as exc:
            raise ValueError(f"--search-options: {exc}") from None
        owned = [name for name in SEARCH_OPTIONS if name in given]
        if owned:       # one owner: these are the run's own options, which search_params() puts last
            raise ValueError("--search-options: " + ", ".join(
                f"{name} is set by --{SEARCH_OPTIONS[name].replace('_', '-')}" for name in owned))
        return self

    def search_params(self, **changes: Any) -> SearchParams:
        """Self-play's search parameters: :attr:`search` (its noise, temperature, forced
        playouts, c_puct and tree memory cap, the options of :data:`SEARCH_OPTIONS`) with the
        ``--search-options`` over the rest, the most visited move after the opening (no LCB, as
        AlphaGo Zero), no root FPU reduction, and ``changes``.  The games end at two passes and
        are counted Tromp-Taylor, so a pass after a pass is the end of the game in the trees too
        (conservative pass off, unless the options turn it on), and a game that ends in the tree
        is counted as it stands (terminal_judge 0)."""
        own = {name: getattr(self.search, name) for name in SEARCH_OPTIONS}
        return dataclasses.replace(self.search, **{"conservative_pass": 0.0, "terminal_judge": 0.0,
                                                   **searchopts.parse_options(self.search_options), **own,
                                                   "lcb_z": 0.0, "fpu_reduction_root": 0.0, **changes})

    def gate_search_params(self) -> SearchParams:
        """Gating's search parameters (the run's checkpoints playing each other): self-play's
        with ``--gate-temperature`` and neither Dirichlet noise nor forced playouts."""
        return self.search_params(temperature=self.gate_temperature, noise_epsilon=0.0, forced_playouts_k=0.0)

    def to_dict(self) -> dict[str, Any]:
        """The config.json form, keyed as the command line's options (:data:`OPTIONS`): one key
        per field, the rules as ``komi`` and ``rules`` (the preset's name), the play settings as
        :data:`PLAY_OPTIONS`, the search as :data:`SEARCH_OPTIONS` (the tree memory cap as text,
        "" for C's), the training settings as :data:`TRAIN_OPTIONS` and the gate rule as
        :data:`GATE_OPTIONS`."""
        d: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, Rules):
                d["komi"], d["rules"] = value.komi, value.name
            elif "options" in f.metadata:
                d.update(field_options(value, f.metadata["options"], f.metadata.get("texts")))
            else:
                d[f.name] = value
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "RunConfig":
        """Reads :meth:`to_dict`'s form (unknown keys are ignored, missing ones take the
        defaults) and older forms (:data:`OLD_KEYS`); ValueError for unknown rules, a bad komi
        or a bad memory size."""
        fields = dataclasses.fields(cls)
        d = dict(d)
        for old, (key, convert) in OLD_KEYS.items():
            if old in d:
                value = d.pop(old)
                d.setdefault(key, convert(value))
        nested = {f.name: fields_from(d, f.metadata["options"], f.default_factory(), f.metadata.get("texts"))
                  for f in fields if "options" in f.metadata}
        names = {f.name for f in fields} - {"rules"} - set(nested)
        rules = Rules.from_name(d.get("rules", DEFAULT_RULES), d.get("komi", DEFAULT_KOMI))   # its name's inverse
        return cls(rules=rules, **nested, **{k: v for k, v in d.items() if k in names})


# The options of add_arguments and keys of config.json, one per setting.
OPTIONS = tuple(RunConfig().to_dict())

#: Keys of older config.json files and options that are still read: old key -> (today's key,
#: the conversion of its value).
OLD_KEYS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "leaf_ramp": ("batch_ramp", int),                          # renamed
    "gate_resign_threshold": ("gate_resign", resign_winrate),  # a root value -1..1, now a winrate
    "resign": ("allow_resign", bool),                          # renamed (PlaySettings.resign is a winrate)
    "resign_cap": ("resign_max_winrate", resign_winrate),      # a root value -1..1, now a winrate
}


def parse_lr_drops(text: str) -> list[tuple[int, float]]:
    """``"20000:0.1,40000:0.01"`` -> [(20000, 0.1), (40000, 0.01)]; ValueError if malformed."""
    out = []
    for part in filter(None, (p.strip() for p in (text or "").split(","))):
        m = re.fullmatch(r"(\d+):([0-9.eE+-]+)", part)
        if not m:
            raise ValueError(f"bad --lr-drops entry {part!r} (want STEP:FACTOR)")
        out.append((int(m.group(1)), float(m.group(2))))
    return sorted(out)


#: The first field of each section of RunConfig, and the section's title in --help.
SECTIONS = {"mode": "what is played", "net": "the network", "play": "self-play",
            "window": "training", "gate": "gating (--mode agz)", "seed": "machine and seed"}


def add_arguments(parser: argparse.ArgumentParser, suppress_defaults: bool = False) -> None:
    """Adds one ``--option`` per RunConfig setting (:func:`engine.play.settings_cli.add_dataclass_arguments`:
    its fields, its composed settings' options and the rules as ``--komi`` and ``--rules``), in
    the sections of :data:`SECTIONS`, and the older names still read.  With ``suppress_defaults``
    options not given stay absent from the namespace (to tell which were given explicitly)."""
    add_dataclass_arguments(parser, RunConfig, suppress_defaults=suppress_defaults,
                            sections={name: f"run settings: {title} (saved in RUN_DIR/config.json)"
                                      for name, title in SECTIONS.items()})
    old = parser.add_argument_group("older names of run settings (still read)")
    old.add_argument("--leaf-ramp", dest="batch_ramp", type=int, default=argparse.SUPPRESS, metavar="VISITS",
                     help="the former name of --batch-ramp")
    old.add_argument("--gate-resign-threshold", dest="gate_resign", type=lambda text: resign_winrate(float(text)),
                     default=argparse.SUPPRESS, metavar="VALUE",
                     help="--gate-resign as a root value -1..1 (the winrate (VALUE + 1) / 2; -1: never)")
    old.add_argument("--resign", dest="allow_resign", action=argparse.BooleanOptionalAction,
                     default=argparse.SUPPRESS, help="the former name of --allow-resign")
    old.add_argument("--resign-cap", dest="resign_max_winrate", type=lambda text: resign_winrate(float(text)),
                     default=argparse.SUPPRESS, metavar="VALUE",
                     help="--resign-max-winrate as a root value -1..1 (the winrate (VALUE + 1) / 2)")


def from_namespace(ns: argparse.Namespace, base: RunConfig | None = None) -> RunConfig:
    """A RunConfig from parsed options (those absent from ``ns`` keep ``base``'s values);
    ValueError for unknown rules or a bad komi."""
    d = (base or RunConfig()).to_dict()
    for name in d:
        if hasattr(ns, name):
            d[name] = getattr(ns, name)
    return RunConfig.from_dict(d)
