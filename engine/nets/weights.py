"""Self-describing weights files for our own networks (``GoNet``).

A weights file is a torch zip archive (``torch.save``) holding one dict of plain values and
tensors only, so it loads with ``torch.load(path, weights_only=True, map_location="cpu")`` and
loading never runs pickled code::

    {
        "format": "goengine-weights",  # FORMAT
        "version": 1,                  # VERSION
        "config": {...},               # NetConfig.to_dict(), every field concrete
        "feature_set": "rich",         # input feature set (same as config["feature_set"])
        "board_sizes": [9, 19],        # sizes the net was trained on (informative; it runs on any)
        "step": 12000,                 # training steps behind these weights
        "parent": "000041.pt" | None,  # model it was trained from
        "created": "2025-...+00:00",   # ISO 8601 UTC
        "tensors": {name: tensor},     # GoNet.state_dict(), float32 on CPU
    }

``save`` writes atomically (temp file in the same folder, fsync, ``os.replace``). ``load`` checks
everything and raises ``WeightsError`` (a ValueError naming the file) for any missing, truncated,
corrupt or foreign file. ``load_any`` also accepts Leela Zero weights (``engine.nets.lzweights``).

Command line::

    python -m engine.weights new --blocks 2 --filters 16 -o tiny.pt [--seed 1] [--in-planes P]
    python -m engine.weights info FILE
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import sys
import warnings
from pathlib import Path
from typing import Any, Sequence

import torch
from torch import nn

from engine.nets import kataweights, lzweights
from engine.fileio import atomic_write
from engine.nets.network import ConvBN, GoNet, NetConfig

FORMAT = "goengine-weights"
VERSION = 1
_ZIP_MAGIC = b"PK\x03\x04"
_META_KEYS = ("feature_set", "board_sizes", "step", "parent", "created", "cpu_hours", "games")

PathLike = str | os.PathLike


class WeightsError(ValueError):
    """A weights file that cannot be loaded: missing, truncated, corrupt, foreign or mismatched."""


def _utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()


def _check_meta(meta: dict[str, Any]) -> dict[str, Any]:
    """Validate and normalise the user-settable metadata. Raises ValueError on bad values."""
    unknown = set(meta) - set(_META_KEYS)
    if unknown:
        raise ValueError(f"unknown weights metadata keys: {sorted(map(str, unknown))}")
    out: dict[str, Any] = {}
    sizes = meta.get("board_sizes", [])
    if not isinstance(sizes, (list, tuple)) or not all(
        isinstance(s, int) and not isinstance(s, bool) and 2 <= s <= 19 for s in sizes
    ):
        raise ValueError(f"board_sizes must be a list of ints in 2..19, got {sizes!r}")
    out["board_sizes"] = sorted(set(int(s) for s in sizes))
    step = meta.get("step", 0)
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise ValueError(f"step must be an int >= 0, got {step!r}")
    out["step"] = int(step)
    parent = meta.get("parent")
    if parent is not None and not isinstance(parent, str):
        raise ValueError(f"parent must be a str or None, got {parent!r}")
    out["parent"] = parent
    created = meta.get("created") or _utc_now()
    if not isinstance(created, str):
        raise ValueError(f"created must be an ISO 8601 str, got {created!r}")
    out["created"] = created
    if "feature_set" in meta:
        out["feature_set"] = meta["feature_set"]
    # Optional lineage: the training that produced the net, from zero (a run continued with
    # --init-weights adds these to its own figures).
    hours = meta.get("cpu_hours")
    if hours is not None:
        if isinstance(hours, bool) or not isinstance(hours, (int, float)) or not 0 <= hours < 1e9:
            raise ValueError(f"cpu_hours must be a number >= 0, got {hours!r}")
        out["cpu_hours"] = float(hours)
    games = meta.get("games")
    if games is not None:
        if isinstance(games, bool) or not isinstance(games, int) or games < 0:
            raise ValueError(f"games must be an int >= 0, got {games!r}")
        out["games"] = int(games)
    return out


def save(path: PathLike, model: GoNet, meta: dict[str, Any] | None = None) -> None:
    """Write ``model`` and ``meta`` (keys among board_sizes, step, parent, created, feature_set)
    to ``path`` atomically: a reader sees the old file or the complete new one, never a part.

    Tensors are stored as float32 on CPU in the canonical (contiguous) layout, so a model moved
    to a device, bf16 or channels_last saves the same file. Raises ValueError for bad metadata or
    a feature_set contradicting the model's, TypeError for a model that is not a ``GoNet``
    (a BN-fused inference copy cannot be saved), OSError if the file cannot be written.
    """
    if not isinstance(model, GoNet):
        raise TypeError(f"can only save a GoNet, got {type(model).__name__}")
    m = _check_meta(dict(meta or {}))
    config = model.config.to_dict()
    if m.pop("feature_set", config["feature_set"]) != config["feature_set"]:
        raise ValueError("meta feature_set differs from the model's config.feature_set")
    tensors: dict[str, torch.Tensor] = {}
    for name, t in model.state_dict().items():
        t = t.detach().to("cpu")
        if t.is_floating_point():
            t = t.float()
        tensors[name] = t.contiguous().clone()
    if any(isinstance(mod, ConvBN) and not isinstance(mod.bn, nn.BatchNorm2d) for mod in model.modules()):
        raise TypeError("cannot save a batch-norm-fused inference copy; save the original GoNet")
    payload = {
        "format": FORMAT,
        "version": VERSION,
        "config": config,
        "feature_set": config["feature_set"],
        **m,
        "tensors": tensors,
    }
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    atomic_write(path, lambda f: torch.save(payload, f))
    try:  # make the rename itself durable; not possible on every platform/filesystem
        dfd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass


def _read_payload(path: Path) -> dict[str, Any]:
    """torch.load the file safely; any failure becomes a WeightsError naming the file."""
    if not path.is_file():
        raise WeightsError(f"{path}: no such weights file")
    try:
        with warnings.catch_warnings():  # torch warns about odd pickles it is about to reject
            warnings.simplefilter("ignore")
            payload = torch.load(path, weights_only=True, map_location="cpu")
    except Exception as exc:  # torch raises many types (RuntimeError, UnpicklingError, EOFError...)
        raise WeightsError(f"{path}: not a readable weights file ({type(exc).__name__}: {exc})") from exc
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise WeightsError(f"{path}: not a {FORMAT} file (a torch file of something else)")
    version = payload.get("version")
    if version != VERSION:
        raise WeightsError(f"{path}: unsupported {FORMAT} version {version!r} (this engine reads {VERSION})")
    return payload


def load(path: PathLike) -> tuple[GoNet, dict[str, Any]]:
    """Load a weights file written by ``save``.

    Returns ``(model, meta)``: a ``GoNet`` on CPU in eval mode, and a dict with format, version,
    config (dict), feature_set, board_sizes, step, parent, created. Raises ``WeightsError`` (naming
    the file) for a missing, empty, truncated, corrupt or foreign file, unknown or invalid
    metadata, missing/extra tensors, shape mismatches and non-finite weights.
    """
    path = Path(path)
    payload = _read_payload(path)
    try:
        config = NetConfig.from_dict(payload.get("config"))  # type: ignore[arg-type]
        if config.in_planes is None or config.gpool_channels is None:
            raise ValueError("config has unresolved fields")
        meta = _check_meta({k: payload[k] for k in _META_KEYS if k in payload})
        if payload.get("feature_set", config.feature_set) != config.feature_set:
            raise ValueError("feature_set differs from config.feature_set")
        model = GoNet(config)
    except (ValueError, TypeError) as exc:
        raise WeightsError(f"{path}: bad network description: {exc}") from exc
    tensors = payload.get("tensors")
    if not isinstance(tensors, dict) or not all(
        isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in tensors.items()
    ):
        raise WeightsError(f"{path}: 'tensors' is not a dict of named tensors")
    expected = model.state_dict()
    missing = sorted(set(expected) - set(tensors))
    extra = sorted(set(tensors) - set(expected))
    if missing or extra:
        raise WeightsError(
            f"{path}: tensors do not match the architecture (missing {missing[:5]}, unexpected {extra[:5]})"
        )
    for name, t in tensors.items():
        if t.shape != expected[name].shape:
            raise WeightsError(
                f"{path}: tensor {name} has shape {tuple(t.shape)}, architecture needs {tuple(expected[name].shape)}"
            )
        if t.is_floating_point() and not bool(torch.isfinite(t).all()):
            raise WeightsError(f"{path}: tensor {name} holds NaN or infinite values")
    try:
        model.load_state_dict(tensors, strict=True)
    except (RuntimeError, ValueError, TypeError) as exc:
        raise WeightsError(f"{path}: cannot load tensors: {exc}") from exc
    model.eval()
    info: dict[str, Any] = {"format": FORMAT, "version": VERSION, "config": config.to_dict(), "feature_set": config.feature_set}
    info.update(meta)
    return model, info


def read_meta(path: PathLike) -> dict[str, Any]:
    """The metadata of a weights file written by ``save`` without building the network: format,
    version, config, feature_set, board_sizes, step, parent, created. The tensors are memory-mapped,
    not read, so this is cheap for large nets (run listings, ratings); ``created`` is None when the
    file does not record it. Raises ``WeightsError`` (naming the file) for a missing, corrupt or
    foreign file or invalid metadata.
    """
    path = Path(path)
    if not path.is_file():
        raise WeightsError(f"{path}: no such weights file")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            payload = torch.load(path, weights_only=True, map_location="cpu", mmap=True)
    except Exception as exc:  # torch raises many types (RuntimeError, UnpicklingError, EOFError...)
        raise WeightsError(f"{path}: not a readable weights file ({type(exc).__name__}: {exc})") from exc
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise WeightsError(f"{path}: not a {FORMAT} file (a torch file of something else)")
    if payload.get("version") != VERSION:
        raise WeightsError(f"{path}: unsupported {FORMAT} version {payload.get('version')!r}")
    try:
        meta = _check_meta({k: payload[k] for k in _META_KEYS if k in payload})
    except ValueError as exc:
        raise WeightsError(f"{path}: bad metadata: {exc}") from exc
    if "created" not in payload:
        meta["created"] = None      # unknown; _check_meta would have said "now"
    return {"format": FORMAT, "version": VERSION, "config": payload.get("config"),
            "feature_set": payload.get("feature_set"), **meta}


def is_torch_zip(path: PathLike) -> bool:
    """Return True if the file starts like a zip archive (what torch.save writes). OSError if unreadable."""
    with open(path, "rb") as f:
        return f.read(4) == _ZIP_MAGIC


def load_any(path: PathLike) -> tuple[nn.Module, dict[str, Any]]:
    """Load our own weights (torch zip), KataGo's (``.bin.gz``/``.bin``/``.txt.gz``, through
    ``engine.nets.kataweights.load``) or, for anything else, Leela Zero weights (.txt / .gz) through
    ``engine.nets.lzweights.load(path) -> (model, meta)``.

    Returns ``(model, meta)``. Raises ``WeightsError`` naming the file for anything that cannot
    be loaded, whichever loader failed.
    """
    path = Path(path)
    try:
        zipped = is_torch_zip(path)
    except OSError as exc:
        raise WeightsError(f"{path}: cannot read weights file ({exc})") from exc
    if zipped:
        return load(path)
    try:
        if kataweights.looks_like_kata(path):
            return kataweights.load(path)    # KataWeightsError (a ValueError) names file and offset
    except WeightsError:
        raise
    except ValueError as exc:
        raise WeightsError(str(exc)) from exc
    try:
        return lzweights.load(path)
    except WeightsError as exc:
        if str(path) in str(exc):
            raise
        raise WeightsError(f"{path}: {exc}") from exc
    except Exception as exc:  # the loader's own errors, whatever their type, name the file here
        raise WeightsError(f"{path}: not a {FORMAT} file nor Leela Zero weights ({exc})") from exc


def new_model(config: NetConfig, seed: int | None = None) -> GoNet:
    """Return a randomly initialised ``GoNet`` in eval mode; with ``seed``, the same seed gives
    the same weights (the global torch RNG is left as it was)."""
    with torch.random.fork_rng(devices=[]):
        if seed is not None:
            torch.manual_seed(seed)
        return GoNet(config).eval()


def _describe(path: Path, model: nn.Module, meta: dict[str, Any]) -> str:
    rows = [("file", f"{path} ({path.stat().st_size} bytes)")]
    for key, value in meta.items():
        if key == "config" and isinstance(value, dict):
            rows.extend((f"config.{ck}", cv) for ck, cv in value.items())
        else:
            rows.append((key, value))
    rows.append(("parameters", sum(p.numel() for p in model.parameters())))
    width = max(len(k) for k, _ in rows) + 2
    return "\n".join(f"{k:<{width}}{v}" for k, v in rows)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point; returns the process exit status (0 ok, 1 bad file/arguments)."""
    parser = argparse.ArgumentParser(prog="python -m engine.weights", description="Create or inspect weights files.")
    sub = parser.add_subparsers(dest="command", required=True)
    new = sub.add_parser("new", help="write a randomly initialised network")
    defaults = NetConfig()
    new.add_argument("--blocks", type=int, default=defaults.blocks)
    new.add_argument("--filters", type=int, default=defaults.filters)
    new.add_argument("--feature-set", default=defaults.feature_set)
    new.add_argument("--in-planes", type=int, default=None, help="default: the feature set's plane count")
    new.add_argument("--gpool-every", type=int, default=defaults.gpool_every)
    new.add_argument("--head-channels", type=int, default=defaults.head_channels)
    new.add_argument("--board-sizes", type=int, nargs="*", default=[], help="informative only")
    new.add_argument("--seed", type=int, default=None)
    new.add_argument("-o", "--output", required=True)
    info = sub.add_parser("info", help="print a weights file's description")
    info.add_argument("file")
    stamp = sub.add_parser("stamp", help="record in one of our weights files the CPU-hours and self-play "
                                          "games that produced it (from zero); a run started from it "
                                          "with --init-weights adds them to its own")
    stamp.add_argument("file")
    stamp.add_argument("--cpu-hours", type=float, required=True)
    stamp.add_argument("--games", type=int, required=True)
    args = parser.parse_args(argv)

    try:
        if args.command == "new":
            config = NetConfig(
                blocks=args.blocks,
                filters=args.filters,
                in_planes=args.in_planes,
                feature_set=args.feature_set,
                gpool_every=args.gpool_every,
                head_channels=args.head_channels,
            )
            model = new_model(config, args.seed)
            save(args.output, model, {"board_sizes": args.board_sizes, "step": 0, "parent": None})
            print(f"wrote {args.output}: {model.config.blocks} blocks x {model.config.filters} filters, "
                  f"{model.in_planes} input planes ({model.feature_set}), {model.num_parameters()} parameters")
        elif args.command == "stamp":
            model, meta = load(args.file)
            keep = {k: meta[k] for k in _META_KEYS if k in meta}
            save(args.file, model, {**keep, "cpu_hours": args.cpu_hours, "games": args.games})
            print(f"{args.file}: step {meta.get('step', 0)}, {args.cpu_hours:g} CPU-hours, "
                  f"{args.games} self-play games")
        else:
            path = Path(args.file)
            model, meta = load_any(path)
            print(_describe(path, model, meta))
    except (ValueError, OSError) as exc:  # WeightsError is a ValueError
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
