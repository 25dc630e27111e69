"""From a weights file to an evaluator, one way for every player: :func:`load_evaluator` (used
by the GTP and analysis engines, self-play, gating, in-process matches and the ladder) loads any
net, checks that it can play the board size (:func:`check_board_size`: Leela Zero nets are
19x19 only) and measures or forces its precision.  Also the nets shipped in ``weights/`` (see
:func:`default_weights_path`), the warning for a size a net was not trained on, and the
evaluator factory of the engines (``evaluator_for(size)``).  torch loads only when a net does."""
from __future__ import annotations

import argparse
import functools
import json
from pathlib import Path
from typing import Any, Callable, Sequence

from engine.options import DEFAULTS

# weights/ of a source checkout (or an editable install); a regular install carries the same
# files as the package data engine/shipped_weights (see setup.py).
_SOURCE_WEIGHTS = Path(__file__).resolve().parents[2] / "weights"
WEIGHTS_DIR = _SOURCE_WEIGHTS if _SOURCE_WEIGHTS.is_dir() else Path(__file__).resolve().parents[1] / "shipped_weights"


def default_weights_path(size: int, directory: Path | None = None) -> Path | None:
    """The shipped weights file for ``size``, or None (see the module docstring).  With
    ``directory`` (tests), only that folder is searched."""
    if directory is None:
        directory = WEIGHTS_DIR
    if not directory.is_dir():
        return None
    for manifest in sorted(directory.glob("*.json")):
        try:
            data = json.loads(manifest.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict):
            table = data.get("sizes", data) if isinstance(data.get("sizes", data), dict) else data
            name = table.get(str(size)) or table.get(f"{size}x{size}") or data.get("default")
            if isinstance(name, str) and (directory / name).is_file():
                return directory / name
    sized = sorted(directory.glob(f"{size}x{size}*.pt"))
    if sized:
        return sized[-1]
    anything = sorted(directory.glob("*.pt"))
    return anything[-1] if anything else None


def check_board_size(name: Any, meta: dict[str, Any], size: int) -> None:
    """ValueError when the net ``name`` (its metadata ``meta``) cannot play ``size``: Leela Zero
    nets have 19x19 fully connected heads."""
    if meta.get("feature_set") == "lz18" and size not in (meta.get("board_sizes") or [19]):
        raise ValueError(f"{name} is a Leela Zero net: it plays 19x19 only")


def load_evaluator(weights: Any, device: Any = None, board_size: int | None = None,
                   precision: str | None = "auto", *, batch: int = DEFAULTS.batch, seed: int = 0,
                   symmetries: str = "random", cache_size: int | None = None,
                   log: Callable[[str], None] | None = None, log_once: bool = False,
                   net: tuple[Any, dict[str, Any]] | None = None, cuda_graphs: bool = False,
                   background: bool = False) -> Any:
    """A TorchEvaluator for the weights file ``weights`` (ours, Leela Zero's or KataGo's; ``net``:
    the (model, metadata) already loaded from it).

    ``board_size``: ValueError unless the net can play it (:func:`check_board_size`; None: not
    checked, the precision is measured for 19x19).  ``precision``: "auto" measures the fastest
    precision within tolerance of fp32 at ``batch`` once per machine and net shape (cached;
    :mod:`engine.nets.precision`, on CUDA :func:`engine.nets.gpu_settings.precision_at_batch`), a label
    (fp32, bf16, fp16, fp32-nchw, fp32-wino) forces one, None keeps the evaluator's fp32
    without measuring.  The choice goes to ``log`` (with ``log_once``: once per process and
    choice).  ``cuda_graphs``: on CUDA, forward passes replayed from CUDA graphs
    (:mod:`engine.nets.cudagraphs`; ignored elsewhere).  ``background`` (the engines, on a
    CPU): "auto" without a cached choice starts with a quick probe's choice and measures in
    the background while the evaluator is idle, then switches
    (:mod:`engine.nets.autoprecision`).  WeightsError (a ValueError) names an unreadable file."""
    from engine.nets import gpu_settings, weights as weights_mod     # import torch
    from engine.nets.evaluator import TorchEvaluator, resolve_device
    from engine.nets.precision import evaluator_kwargs

    model, meta = net if net is not None else weights_mod.load_any(weights)
    if board_size is not None:
        check_board_size(weights, meta, board_size)
    kwargs: dict[str, Any] = {}
    later = None
    if background and str(precision).lower() == "auto" and resolve_device(device).type == "cpu":
        from engine.nets import autoprecision
        choice = autoprecision.start_choice(model, device, board_size or 19, batch)
        if choice.source == "probed":
            if log is not None:
                log(autoprecision.describe_probe(choice))
            later = functools.partial(autoprecision.BackgroundMeasurement, model, device,
                                      board_size or 19, batch, log=log)
        elif log is not None and not (log_once and choice.key in _LOGGED):
            _LOGGED.add(choice.key)
            log(choice.describe())
        kwargs = evaluator_kwargs(choice)
    elif precision is not None:
        choice = gpu_settings.precision_at_batch(model, device, board_size or 19, batch, precision, log=log)
        label = choice.key or choice.precision.label
        if log is not None and not (log_once and label in _LOGGED):
            _LOGGED.add(label)
            log(choice.describe())
        kwargs = evaluator_kwargs(choice)
    if cache_size is not None:
        kwargs["cache_size"] = cache_size
    if cuda_graphs and resolve_device(device).type == "cuda":
        kwargs["cuda_graphs"] = True
    evaluator = TorchEvaluator(model, device=device, symmetries=symmetries, seed=seed, **kwargs)
    if later is not None:
        later(evaluator).start()
    return evaluator


_LOGGED: set[str] = set()


def untrained_size_warning(net: Any, size: int, sizes: Sequence[int]) -> str:
    """The stderr line for a board size that the loaded net was not trained on."""
    sizes = sorted(sizes)
    if sizes == list(range(sizes[0], sizes[-1] + 1)) and len(sizes) > 2:
        trained = f"{sizes[0]}x{sizes[0]} to {sizes[-1]}x{sizes[-1]}"
    else:
        trained = ", ".join(f"{s}x{s}" for s in sizes)
    return (f"warning: {net} was trained on {trained}; it was not trained for {size}x{size} "
            f"and may play it badly (see docs/networks.md: which net the engine loads)")


def make_evaluator_factory(args: argparse.Namespace, warn: Callable[[str], None]) -> Callable[[int], Any]:
    """``evaluator_for(size)`` for the engine: ValueError when a size cannot be played.  For
    ``--weights FILE`` it carries the net's ``feature_set`` (which says a KataGo net)."""
    # Lazy: these import torch, which must load after OMP_WAIT_POLICY is set (and --help and
    # argument errors answer without it).
    from engine.nets import evaluator as ev_mod, gpu_settings, weights as weights_mod
    from engine.nets.network import NetConfig

    seed = args.seed
    spec = args.weights
    if spec == "uniform":
        uniform = ev_mod.UniformEvaluator()
        return lambda size: uniform
    if spec == "random":
        rnd = ev_mod.RandomEvaluator(seed=seed)
        return lambda size: rnd

    def torch_evaluator(name: Any, net: tuple[Any, dict[str, Any]], size: int) -> Any:
        gpu_settings.settle(args, net[0], size, log=warn)      # CUDA: threads and batch measured
        return load_evaluator(name, args.device, size, getattr(args, "precision", "auto"),
                              batch=getattr(args, "batch", None) or DEFAULTS.batch, seed=seed,
                              symmetries="random", log=warn, net=net, background=True)

    if spec is not None:
        net = weights_mod.load_any(spec)              # WeightsError (ValueError) names the file
        sizes = net[1].get("board_sizes") or []
        if args.size is None:                         # a 9x9 net starts on 9x9, not with a warning
            args.size = sizes[0] if len(sizes) == 1 else 19
        evaluator = torch_evaluator(spec, net, args.size)
        warned: set[int] = set()

        def for_size(size: int) -> Any:
            check_board_size(spec, net[1], size)
            if sizes and size not in sizes and size not in warned:
                warned.add(size)
                warn(untrained_size_warning(spec, size, sizes))
            return evaluator
        for_size.feature_set = net[1].get("feature_set", evaluator.feature_set)  # type: ignore[attr-defined]
        return for_size

    nets: dict[Any, Any] = {}
    cache: dict[Any, Any] = {}

    def shipped_net(size: int) -> tuple[Path | None, Any]:
        path = default_weights_path(size)
        key = str(path) if path is not None else None
        if key not in nets:
            if path is None:
                warn("warning: no network shipped in weights/ for this board size: playing with a "
                     "small UNTRAINED network (pass --weights to choose one)")
                nets[key] = (weights_mod.new_model(NetConfig(blocks=2, filters=32), seed=seed), {})
            else:
                nets[key] = weights_mod.load_any(path)
        return path, nets[key]

    def default_for(size: int) -> Any:
        path, net = shipped_net(size)
        key = str(path) if path is not None else None
        if key not in cache:
            if path is not None:
                check_board_size(path, net[1], size)
                trained = net[1].get("board_sizes") or []
                if trained and size not in trained:
                    warn(untrained_size_warning(path, size, trained))
            cache[key] = torch_evaluator(path, net, size)
        return cache[key]

    def feature_set_for(size: int) -> str | None:
        _path, (model, meta) = shipped_net(size)
        return meta.get("feature_set") or getattr(model, "feature_set", None)
    default_for.feature_set_for = feature_set_for  # type: ignore[attr-defined]
    return default_for


def net_feature_set(factory: Callable[[int], Any], size: int) -> str | None:
    """The feature set of the net ``factory`` (from :func:`make_evaluator_factory`) plays
    ``size`` with, which says its kind (a KataGo net, ours): the ``--weights`` net's, else the
    shipped net's for ``size`` (read without building an evaluator); None for the test
    evaluators (uniform, random)."""
    if hasattr(factory, "feature_set"):
        return factory.feature_set       # type: ignore[attr-defined]
    feature_set_for = getattr(factory, "feature_set_for", None)
    return feature_set_for(size) if feature_set_for is not None else None
