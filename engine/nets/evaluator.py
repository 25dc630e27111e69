"""The narrow network interface the search talks to, and its implementations.

An evaluator has ``feature_set: str``, ``planes: int`` (input planes per position) and
``evaluate(planes, keys=None) -> Evaluation`` where ``planes`` is np.float32 [B, P, N, N] (one
board size per call) and the result holds, per position, from the side to move:

- ``policy``    np.float32 [B, N*N+1]: LOGITS, point ``row * N + col`` then PASS last;
- ``value``     np.float32 [B] in [-1, 1];
- ``ownership`` np.float32 [B, N*N] in [-1, 1] (+1 = side to move owns the point), or None;
- ``score``     np.float32 [B]: score lead of the side to move in points, or None;
- ``uncertainty`` np.float32 [B, 2]: the net's short-term win/loss error and score error
  (points), or None for nets without those heads (ours, Leela Zero's, KataGo's before model
  version 9); the search weighs its playouts by them when asked (``use_uncertainty``);
- ``policy_opt`` np.float32 [B, N*N+1]: LOGITS of an optimistic policy head (KataGo's second
  policy channel, model version >= 12), or None; the search blends it in when asked
  (``policy_optimism``, ``root_policy_optimism``).

Implementations:

- ``UniformEvaluator``: zero logits, zero value/ownership/score (tests, bootstrapping);
- ``RandomEvaluator``: deterministic pseudo-random outputs per position (tests);
- ``TorchEvaluator``: a torch model on the best device (CUDA if present, bf16/fp16 there; CPU
  fp32 by default, bf16 + channels_last on request), one forward pass per call, a board symmetry
  per evaluation (random, all 8 averaged, or none) and an LRU cache by position key.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import hashlib
import math
import threading
from typing import Any, NamedTuple, Protocol, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from engine.nets import flops, symmetry
from engine.nets.evalcache import EvalCache
from engine.errors import NetworkOutputError
from engine.nets.network import GoNet, feature_planes_for

SYMMETRY_MODES = ("random", "all", "none")


class Evaluation(NamedTuple):
    """Network outputs for a batch of positions (see the module docstring)."""

    policy: np.ndarray
    value: np.ndarray
    ownership: np.ndarray | None
    score: np.ndarray | None
    uncertainty: np.ndarray | None = None
    policy_opt: np.ndarray | None = None


class Evaluator(Protocol):
    """What the search needs from a network."""

    feature_set: str
    planes: int

    def evaluate(self, planes: np.ndarray, keys: np.ndarray | None = None) -> Evaluation: ...


def _as_planes(planes: Any, expected: int | None) -> np.ndarray:
    """Return ``planes`` as a C-contiguous float32 [B, P, N, N] array.

    Raises ValueError for another rank, non-square boards, or a plane count other than
    ``expected`` (when known).
    """
    x = np.ascontiguousarray(planes, dtype=np.float32)
    if x.ndim != 4 or x.shape[2] != x.shape[3] or x.shape[2] < 1:
        raise ValueError(f"planes must be [B, P, N, N] with square boards, got shape {x.shape}")
    if expected is not None and x.shape[1] != expected:
        raise ValueError(f"expected {expected} input planes, got {x.shape[1]}")
    return x


def _planes_or_none(feature_set: str, planes: int | None) -> int | None:
    """``planes`` if given, else the feature set's plane count when it can be known, else None."""
    if planes is not None:
        return int(planes)
    try:
        return feature_planes_for(feature_set)
    except (ValueError, AttributeError):
        return None


class UniformEvaluator:
    """Zero logits (a uniform policy), value 0, ownership zeros and score 0 for every position.

    ``planes`` is the input plane count to check; None takes it from the feature set when the
    core can tell, else accepts any count (``self.planes`` is then None).
    """

    def __init__(self, feature_set: str = "rich", planes: int | None = None) -> None:
        self.feature_set = feature_set
        self.planes = _planes_or_none(feature_set, planes)

    def evaluate(self, planes: np.ndarray, keys: np.ndarray | None = None) -> Evaluation:
        """Return zeros of the right shapes. Raises ValueError on a malformed ``planes`` array."""
        x = _as_planes(planes, self.planes)
        b, n = x.shape[0], x.shape[-1]
        return Evaluation(
            policy=np.zeros((b, n * n + 1), np.float32),
            value=np.zeros(b, np.float32),
            ownership=np.zeros((b, n * n), np.float32),
            score=np.zeros(b, np.float32),
        )


class RandomEvaluator:
    """Pseudo-random outputs that depend only on ``seed`` and the position's planes.

    Each position's outputs come from a numpy Generator seeded with ``(seed, digest of its
    planes)``, so the same position gets the same answer whatever the batch or call order:
    policy logits ~ N(0, 1), value and ownership ~ U(-1, 1), score ~ N(0, 10).
    """

    def __init__(self, seed: int = 0, feature_set: str = "rich", planes: int | None = None) -> None:
        self.seed = int(seed)
        self.feature_set = feature_set
        self.planes = _planes_or_none(feature_set, planes)

    def evaluate(self, planes: np.ndarray, keys: np.ndarray | None = None) -> Evaluation:
        """Return the positions' pseudo-random outputs. Raises ValueError on malformed planes."""
        x = _as_planes(planes, self.planes)
        b, n = x.shape[0], x.shape[-1]
        policy = np.empty((b, n * n + 1), np.float32)
        value = np.empty(b, np.float32)
        ownership = np.empty((b, n * n), np.float32)
        score = np.empty(b, np.float32)
        for i in range(b):
            digest = hashlib.blake2b(x[i].tobytes(), digest_size=8).digest()
            rng = np.random.default_rng([self.seed, int.from_bytes(digest, "little"), n])
            policy[i] = rng.standard_normal(n * n + 1)
            value[i] = rng.uniform(-1.0, 1.0)
            ownership[i] = rng.uniform(-1.0, 1.0, n * n)
            score[i] = 10.0 * rng.standard_normal()
        return Evaluation(policy, value, ownership, score)


def resolve_device(device: str | torch.device | None) -> torch.device:
    """The device to run on: ``device`` if given, else CUDA when available, else CPU."""
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


_DTYPE_NAMES = {
    "fp32": torch.float32, "float32": torch.float32, "float": torch.float32,
    "bf16": torch.bfloat16, "bfloat16": torch.bfloat16,
    "fp16": torch.float16, "float16": torch.float16, "half": torch.float16,
}


def resolve_dtype(dtype: str | torch.dtype | None, device: torch.device) -> torch.dtype:
    """The compute dtype: ``dtype`` if given (a torch dtype or "fp32"/"bf16"/"fp16"), else bf16 on
    CUDA when supported (fp16 otherwise) and fp32 on CPU. Raises ValueError for other dtypes."""
    if dtype is None or (isinstance(dtype, str) and dtype.lower() == "auto"):
        if device.type == "cuda":
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.float32
    if isinstance(dtype, str):
        if dtype.lower() not in _DTYPE_NAMES:
            raise ValueError(f"unknown dtype {dtype!r}; use fp32, bf16 or fp16")
        return _DTYPE_NAMES[dtype.lower()]
    if dtype not in (torch.float32, torch.bfloat16, torch.float16):
        raise ValueError(f"unsupported compute dtype {dtype}")
    return dtype


@functools.lru_cache(maxsize=None)
def _symmetry_table(size: int, with_pass: bool, device: str) -> torch.Tensor:
    """int64 [8, N*N(+1)]: row k is the gather index of symmetry k (engine.nets.symmetry)."""
    rows = [symmetry.policy_permutation(k, size, with_pass) for k in range(symmetry.NUM_SYMMETRIES)]
    return torch.from_numpy(np.stack(rows)).to(device)


def _gather_points(t: torch.Tensor, ks: np.ndarray, size: int, with_pass: bool) -> torch.Tensor:
    """Symmetry ``ks[i]`` applied to batch item ``t[i]`` in one gather: planes [B, P, N, N]
    or flat per-point vectors [B, N*N(+1)] (the same result as engine.nets.symmetry's
    apply_symmetries / apply_policy_symmetries)."""
    index = _symmetry_table(size, with_pass, str(t.device))[torch.from_numpy(np.asarray(ks, np.int64))]
    if t.dim() == 4:
        b, p = t.shape[0], t.shape[1]
        flat = t.reshape(b, p, size * size)
        return flat.gather(2, index[:, None, :].expand(b, p, size * size)).reshape(t.shape)
    return t.gather(1, index.to(t.device))


def _model_io(model: nn.Module) -> tuple[str, int]:
    """(feature_set, input planes) of a model: its ``feature_set`` and ``in_planes`` (or ``planes``)
    attributes, else those of its ``config``. Raises TypeError when they cannot be found."""
    config = getattr(model, "config", None)
    feature_set = getattr(model, "feature_set", None) or getattr(config, "feature_set", None)
    in_planes = (
        getattr(model, "in_planes", None) or getattr(model, "planes", None) or getattr(config, "in_planes", None)
    )
    if not isinstance(feature_set, str) or not isinstance(in_planes, int):
        raise TypeError("model must expose feature_set (str) and in_planes or planes (int), directly or via .config")
    return feature_set, in_planes


class TorchEvaluator:
    """Evaluates positions with a torch model; see the module docstring for the contract.

    Args:
        model: a ``GoNet`` (or any module with ``feature_set``/``in_planes`` whose forward returns
            ``(policy, value)``, ``(policy, value, ownership, score)`` or that and the
            short-term errors [B, 2] or None, as a KataGo net's ``KataOutput``). It is copied, never
            modified; a ``GoNet`` copy gets its batch norms folded into the convolutions.
        device: "cpu", "cuda", "cuda:1", ...; None = CUDA if available, else CPU.
        dtype: compute dtype under autocast: None = bf16 (or fp16) on CUDA, fp32 on CPU; "bf16"
            on CPU roughly doubles throughput on AVX512-BF16 machines (PERF.md).
        symmetries: "random" (one random board symmetry per position, undone on the outputs),
            "all" (average over the 8 symmetries: mean value/ownership/score, policy = log of the
            mean probabilities; for analysis), or "none".
        seed: seeds the symmetry choice.
        cache_size: LRU entries kept by position key (0 disables the cache).
        threads: if given, ``torch.set_num_threads(threads)`` (a process-wide torch setting).
        channels_last: run convolutions in channels-last layout (faster on CPU and tensor cores).
        max_batch: split forward passes into chunks of at most this many rows (None: no limit).
        winograd: run 3x3 convolutions by Winograd's algorithm (:mod:`engine.nets.winograd`; CPU and
            fp32 only, else ValueError).
        cuda_graphs: replay forward passes from CUDA graphs captured per padded batch size
            (:mod:`engine.nets.cudagraphs`; CUDA only, else ValueError).

    Counters: ``cache_hits``, ``cache_misses`` (positions served from / not found in the cache,
    only when keys are given) and ``positions_evaluated`` (positions that went through the net,
    counting each of the 8 copies in "all" mode once).
    Raises ValueError for an unknown symmetry mode or dtype, TypeError for an unusable model.
    """

    def __init__(
        self,
        model: nn.Module,
        device: str | torch.device | None = None,
        dtype: str | torch.dtype | None = None,
        symmetries: str = "random",
        seed: int = 0,
        cache_size: int = 100_000,
        threads: int | None = None,
        channels_last: bool = True,
        max_batch: int | None = None,
        winograd: bool = False,
        cuda_graphs: bool = False,
    ) -> None:
        if symmetries not in SYMMETRY_MODES:
            raise ValueError(f"symmetries must be one of {SYMMETRY_MODES}, got {symmetries!r}")
        if cache_size < 0:
            raise ValueError("cache_size must be >= 0")
        if max_batch is not None and max_batch < 1:
            raise ValueError("max_batch must be >= 1")
        self.feature_set, self.planes = _model_io(model)
        self.device = resolve_device(device)
        if threads is not None:
            torch.set_num_threads(int(threads))
        self._source_model = model
        self._set_kernel(dtype, channels_last, winograd)
        net = self.model
        self._graphs = None
        if cuda_graphs:
            if self.device.type != "cuda":
                raise ValueError("CUDA graphs need a CUDA device")
            from engine.nets.cudagraphs import GraphRunner
            self._graphs = GraphRunner(net, self.device, lambda: self._autocast(cache_enabled=False),
                                       self.channels_last)
        self.symmetries = symmetries
        self.cache_size = int(cache_size)
        self.max_batch = max_batch
        self.cache_hits = 0
        self.cache_misses = 0
        self.positions_evaluated = 0
        # our nets' forward passes count toward the process's FLOPs (engine.nets.flops)
        self._net_config = model.config if isinstance(model, GoNet) else None
        self._rng = np.random.default_rng(seed)
        self._cache = EvalCache(max(1, self.cache_size))
        self._lock = threading.Lock()

    def _set_kernel(self, dtype: str | torch.dtype | None, channels_last: bool, winograd: bool) -> None:
        """Builds the net copy for a precision; the fields change together (one tuple that
        :meth:`_infer` reads once), so a forward pass never mixes two precisions."""
        dtype = resolve_dtype(dtype, self.device)
        model = self._source_model
        net = model.fused() if isinstance(model, GoNet) else copy.deepcopy(model)
        net = net.eval().requires_grad_(False).to(self.device)
        if winograd:
            if self.device.type != "cpu" or dtype != torch.float32:
                raise ValueError("Winograd convolutions run on the CPU in fp32 only")
            from engine.nets.winograd import winograd_model
            net = winograd_model(net)
        elif channels_last:
            net = net.to(memory_format=torch.channels_last)
        self._kernel = (net, dtype, bool(channels_last), bool(winograd))

    def use_precision(self, dtype: str | torch.dtype | None, channels_last: bool = True,
                      winograd: bool = False) -> None:
        """Switches the forward passes to another precision (what ``--precision auto`` does
        when its background measurement ends); passes already running finish in the old one.
        ValueError with CUDA graphs, which were captured in the old one."""
        if self._graphs is not None:
            raise ValueError("cannot switch the precision of CUDA graphs")
        self._set_kernel(dtype, channels_last, winograd)

    model = property(lambda self: self._kernel[0])
    dtype = property(lambda self: self._kernel[1])
    channels_last = property(lambda self: self._kernel[2])
    winograd = property(lambda self: self._kernel[3])

    # -- forward passes -------------------------------------------------------------------

    def _autocast(self, cache_enabled: bool = True, dtype: torch.dtype | None = None) -> contextlib.AbstractContextManager:
        dtype = self.dtype if dtype is None else dtype
        if dtype == torch.float32:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device.type, dtype=dtype, cache_enabled=cache_enabled)

    def _infer(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """One forward pass on device tensor ``x`` [B, P, N, N]; returns float32 device tensors
        (policy, value, ownership or None, score or None, short-term errors or None)."""
        if self._graphs is not None:
            out = self._graphs(x)
        else:
            net, dtype, channels_last, _winograd = self._kernel
            if channels_last:
                x = x.contiguous(memory_format=torch.channels_last)
            with torch.inference_mode(), self._autocast(dtype=dtype):
                out = net(x)
        if not isinstance(out, (tuple, list)) or len(out) not in (2, 4, 5, 6):
            raise TypeError("model must return (policy, value), (policy, value, ownership, score) "
                            "or (policy, value, ownership, score, uncertainty)")
        policy, value = out[0].float(), out[1].float().reshape(-1)
        ownership = out[2].float() if len(out) >= 4 and out[2] is not None else None
        score = out[3].float().reshape(-1) if len(out) >= 4 and out[3] is not None else None
        errors = out[4].float().reshape(-1, 2) if len(out) >= 5 and out[4] is not None else None
        opt = out[5].float() if len(out) == 6 and out[5] is not None else None
        with self._lock:
            self.positions_evaluated += x.shape[0]
        if self._net_config is not None:
            flops.COUNTER.add(x.shape[0] * flops.forward_flops(self._net_config, x.shape[-1]))
        return policy, value, ownership, score, errors, opt

    def _infer_chunked(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        if self.max_batch is None or x.shape[0] <= self.max_batch:
            return self._infer(x)
        parts = [self._infer(x[i : i + self.max_batch]) for i in range(0, x.shape[0], self.max_batch)]
        return tuple(None if p[0] is None else torch.cat(p) for p in zip(*parts))

    def _run(self, x_np: np.ndarray) -> Evaluation:
        """Evaluate [B, P, N, N] float32 planes through the net with the symmetry mode applied."""
        b = x_np.shape[0]
        x = torch.from_numpy(x_np)
        if self.device.type == "cuda":     # from page-locked memory, without waiting for the copy
            x = x.pin_memory().to(self.device, non_blocking=True)
        if self.symmetries == "all":
            stacked = torch.cat([symmetry.apply_symmetry(x, k) for k in range(symmetry.NUM_SYMMETRIES)])
            policy, value, ownership, score, errors, opt = self._infer_chunked(stacked)

            def average(logits: torch.Tensor) -> torch.Tensor:
                logp = torch.stack(
                    [
                        symmetry.inverse_policy_symmetry(F.log_softmax(logits[k * b : (k + 1) * b], dim=1), k)
                        for k in range(symmetry.NUM_SYMMETRIES)
                    ]
                )
                return torch.logsumexp(logp, dim=0) - math.log(symmetry.NUM_SYMMETRIES)

            policy = average(policy)
            if opt is not None:
                opt = average(opt)
            value = value.reshape(symmetry.NUM_SYMMETRIES, b).mean(0)
            if ownership is not None:
                ownership = torch.stack(
                    [
                        symmetry.inverse_policy_symmetry(ownership[k * b : (k + 1) * b], k)
                        for k in range(symmetry.NUM_SYMMETRIES)
                    ]
                ).mean(0)
            if score is not None:
                score = score.reshape(symmetry.NUM_SYMMETRIES, b).mean(0)
            if errors is not None:   # per position, not per point: the mean, as KataGo averages
                errors = errors.reshape(symmetry.NUM_SYMMETRIES, b, 2).mean(0)
        elif self.symmetries == "random":
            with self._lock:
                ks = self._rng.integers(0, symmetry.NUM_SYMMETRIES, size=b)
            inverse = np.asarray(symmetry.INVERSE)[ks]
            n = x.shape[-1]
            policy, value, ownership, score, errors, opt = self._infer_chunked(_gather_points(x, ks, n, False))
            policy = _gather_points(policy, inverse, n, policy.shape[-1] == n * n + 1)
            if opt is not None:
                opt = _gather_points(opt, inverse, n, True)
            if ownership is not None:
                ownership = _gather_points(ownership, inverse, n, False)
        else:
            policy, value, ownership, score, errors, opt = self._infer_chunked(x)

        def host(t: torch.Tensor | None) -> np.ndarray | None:
            return None if t is None else t.detach().to("cpu", torch.float32).numpy()

        out = Evaluation(host(policy), host(value), host(ownership), host(score), host(errors), host(opt))
        if not (np.isfinite(out.value).all() and np.isfinite(out.policy).all()):
            bad = ~(np.isfinite(out.value).reshape(b, -1).all(1) & np.isfinite(out.policy).reshape(b, -1).all(1))
            raise NetworkOutputError(
                f"network output is not finite (NaN or inf) for {int(bad.sum())} of {b} positions: "
                "the weights are corrupt or the net diverged")
        return out  # type: ignore[return-value]

    # -- public interface -----------------------------------------------------------------

    def evaluate(self, planes: np.ndarray, keys: np.ndarray | Sequence[int] | None = None) -> Evaluation:
        """Evaluate a batch of positions (one board size) in one forward pass.

        With ``keys`` (np.uint64 [B], one key per position that identifies its input planes for
        this board size, e.g. the position hash including side to move and history the features
        see), cached positions are served from the LRU cache and only the misses (each distinct
        key once) go through the net. Returns an ``Evaluation`` of float32 arrays.
        Raises ValueError for malformed planes or a wrong number of keys.
        """
        x = _as_planes(planes, self.planes)
        b, n = x.shape[0], x.shape[-1]
        if b == 0:
            own = np.zeros((0, n * n), np.float32)
            empty = np.zeros(0, np.float32)
            return Evaluation(np.zeros((0, n * n + 1), np.float32), empty, own, empty.copy())
        if keys is None or self.cache_size == 0:
            return self._run(x)
        key_arr = np.asarray(keys, dtype=np.uint64).reshape(-1)
        if key_arr.shape[0] != b:
            raise ValueError(f"got {key_arr.shape[0]} keys for {b} positions")
        key_list = key_arr.tolist()
        with self._lock:
            where, hit_rows = self._cache.lookup(key_list, n)
            # the hits' outputs are copied out now: another thread's insert may reuse their rows
            cached = self._cache.gather(n, hit_rows) if where.hits else None
            self.cache_hits += len(where.hits) + len(where.repeats)
            self.cache_misses += len(where.misses)
        every = len(where.misses) == b          # all distinct misses: no copy of the planes
        fresh = self._run(x if every else x[where.misses]) if where.misses else None
        if fresh is not None:
            with self._lock:
                self._cache.insert([key_list[i] for i in where.misses], n, *fresh)
            if every:
                return fresh                    # the cache keeps copies: these arrays are the caller's
        parts = [(where.hits, cached), (where.misses, fresh)]
        model = cached if cached is not None else fresh
        assert model is not None
        has_aux = model[2] is not None and model[3] is not None  # a property of the model
        out = Evaluation(np.empty((b, n * n + 1), np.float32), np.empty(b, np.float32),
                         np.empty((b, n * n), np.float32) if has_aux else None,
                         np.empty(b, np.float32) if has_aux else None,
                         np.empty((b, 2), np.float32) if model[4] is not None else None,
                         np.empty((b, n * n + 1), np.float32) if model[5] is not None else None)
        for rows, src in parts:
            if src is None or not rows:
                continue
            idx = np.asarray(rows, np.int64)
            for dst, part in zip(out, src):
                if dst is not None:
                    dst[idx] = part
        if where.repeats:
            rep, of = np.asarray(where.repeats, np.int64), np.asarray(where.repeat_of, np.int64)
            for dst in out:
                if dst is not None:
                    dst[rep] = dst[of]
        return out

    def clear_cache(self) -> None:
        """Forget every cached evaluation (e.g. after swapping weights)."""
        with self._lock:
            self._cache.clear()

    def stats(self) -> dict[str, Any]:
        """Counters and settings, for logs and benchmarks."""
        return {
            "device": str(self.device),
            "dtype": str(self.dtype).replace("torch.", ""),
            "symmetries": self.symmetries,
            "cache_entries": len(self._cache),
            "cache_hits": self.cache_hits,
            "cache_misses": self.cache_misses,
            "positions_evaluated": self.positions_evaluated,
        }
