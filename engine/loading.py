"""From a weights option to evaluators: the nets shipped in ``weights/`` (see
:func:`default_weights_path`), the size checks and warnings, and the evaluator factory of the
GTP engine and the analysis engine (``evaluator_for(size)``)."""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, Callable, Sequence

from engine.options import DEFAULTS

# weights/ of a source checkout (or an editable install); a regular install carries the same
# files as the package data engine/shipped_weights (see setup.py).
_SOURCE_WEIGHTS = Path(__file__).resolve().parent.parent / "weights"
WEIGHTS_DIR = _SOURCE_WEIGHTS if _SOURCE_WEIGHTS.is_dir() else Path(__file__).resolve().parent / "shipped_weights"


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


def untrained_size_warning(net: Any, size: int, sizes: Sequence[int]) -> str:
    """The stderr line for a board size that the loaded net was not trained on."""
    sizes = sorted(sizes)
    if sizes == list(range(sizes[0], sizes[-1] + 1)) and len(sizes) > 2:
        trained = f"{sizes[0]}x{sizes[0]} to {sizes[-1]}x{sizes[-1]}"
    else:
        trained = ", ".join(f"{s}x{s}" for s in sizes)
    return (f"warning: {net} was trained on {trained}; it was not trained for {size}x{size} "
            f"and may play it badly (see README: which net for which size)")


def make_evaluator_factory(args: argparse.Namespace, warn: Callable[[str], None]) -> Callable[[int], Any]:
    """``evaluator_for(size)`` for the engine: ValueError when a size cannot be played."""
    # Lazy: these import torch, which must load after OMP_WAIT_POLICY is set (and --help and
    # argument errors answer without it).
    from engine import evaluator as ev_mod, gpu_settings, weights as weights_mod
    from engine.network import NetConfig
    from engine.precision import evaluator_kwargs

    seed = args.seed
    spec = args.weights
    if spec == "uniform":
        uniform = ev_mod.UniformEvaluator()
        return lambda size: uniform
    if spec == "random":
        rnd = ev_mod.RandomEvaluator(seed=seed)
        return lambda size: rnd

    def torch_evaluator(model, size: int) -> Any:
        gpu_settings.settle(args, model, size, log=warn)      # CUDA: threads and batch measured
        choice = gpu_settings.precision_at_batch(model, args.device, size,
                                                 getattr(args, "batch", None) or DEFAULTS.batch,
                                                 getattr(args, "precision", "auto"), log=warn)
        warn(choice.describe())
        return ev_mod.TorchEvaluator(model, device=args.device, seed=seed, **evaluator_kwargs(choice))

    if spec is not None:
        model, meta = weights_mod.load_any(spec)      # WeightsError (ValueError) names the file
        sizes = meta.get("board_sizes") or []
        fixed = meta.get("feature_set") == "lz18"     # Leela Zero nets have 19x19 FC heads
        if args.size is None:                         # a 9x9 net starts on 9x9, not with a warning
            args.size = sizes[0] if len(sizes) == 1 else 19
        if fixed and args.size not in (sizes or [19]):
            raise ValueError(f"{spec} is a Leela Zero net: it plays 19x19 only")
        evaluator = torch_evaluator(model, args.size)
        warned: set[int] = set()

        def for_size(size: int) -> Any:
            if fixed and size not in (sizes or [19]):
                raise ValueError(f"{spec} is a Leela Zero net: it plays 19x19 only")
            if sizes and size not in sizes and size not in warned:
                warned.add(size)
                warn(untrained_size_warning(spec, size, sizes))
            return evaluator
        return for_size

    cache: dict[Any, Any] = {}

    def default_for(size: int) -> Any:
        path = default_weights_path(size)
        key = str(path) if path is not None else None
        if key not in cache:
            if path is None:
                warn("warning: no network shipped in weights/ for this board size: playing with a "
                     "small UNTRAINED network (pass --weights to choose one)")
                model = weights_mod.new_model(NetConfig(blocks=2, filters=32), seed=seed)
            else:
                model, meta = weights_mod.load_any(path)
                if meta.get("feature_set") == "lz18" and size != 19:
                    raise ValueError(f"{path} plays 19x19 only")
                trained = meta.get("board_sizes") or []
                if trained and size not in trained:
                    warn(untrained_size_warning(path, size, trained))
            cache[key] = torch_evaluator(model, size)
        return cache[key]
    return default_for
