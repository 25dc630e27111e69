"""The C search's parameters and its pool forms of collect and backup, both importable from
:mod:`engine.core` as well.

:class:`SearchParams` mirrors C's ``search_params_t`` field by field, with C's defaults.
:func:`collect_many` and :func:`backup_many` run one C call over many searches (the game pool's
and the analysis engine's batching) over :class:`engine.core.Search` objects (typed ``Any``
here: engine.core imports this module).  Every numpy buffer handed to C is checked first
(:func:`check_buffer`: dtype, layout, shape and capacity), so that C never writes or reads past
an array; ValueError with a clear message."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from engine.native import ffi, lib


def check_buffer(name: str, array: np.ndarray, dtype, shape: tuple, writable: bool) -> None:
    """ValueError unless ``array`` is a C-contiguous numpy array of ``dtype``, writable when
    ``writable``, whose shape is ``shape``; an entry ``(">=", n)`` accepts any length >= n."""
    if not isinstance(array, np.ndarray):
        raise ValueError(f"{name} must be a numpy array, got {type(array).__name__}")
    if array.dtype != np.dtype(dtype):
        raise ValueError(f"{name} must be {np.dtype(dtype)}, got {array.dtype}")
    if not array.flags.c_contiguous:
        raise ValueError(f"{name} must be C-contiguous")
    if writable and not array.flags.writeable:
        raise ValueError(f"{name} must be writable")
    if array.ndim != len(shape):
        raise ValueError(f"{name} must have {len(shape)} dimensions, got shape {array.shape}")
    for axis, (want, got) in enumerate(zip(shape, array.shape)):
        if isinstance(want, tuple):
            if got < want[1]:
                raise ValueError(f"{name} has room for {got} along axis {axis}, needs {want[1]}")
        elif got != want:
            raise ValueError(f"{name} must have shape {shape_text(shape)}, got {array.shape}")


def shape_text(shape: tuple) -> str:
    """A shape for messages: ``(>=12, 20, 9, 9)``."""
    return "(" + ", ".join(f">={w[1]}" if isinstance(w, tuple) else str(w) for w in shape) + ")"


def _floats_or_null(a: np.ndarray | None, n: int):
    """A C float buffer of ``a[:n]`` (kept alive by cffi until the call returns), or NULL."""
    return ffi.NULL if a is None else ffi.from_buffer("float[]", np.ascontiguousarray(a[:n], np.float32))


def _rows_or_null(a: np.ndarray | None, n: int, width: int, name: str):
    """A C float buffer of ``a[:n]`` as ``[n, width]`` rows (short-term errors: width 2;
    optimistic policy logits: N*N+1), or NULL; ValueError naming ``name`` for another shape."""
    if a is None:
        return ffi.NULL
    rows = np.ascontiguousarray(np.asarray(a)[:n], np.float32)
    if rows.shape != (n, width):
        raise ValueError(f"{name} must have shape ({n}, {width}), got {rows.shape}")
    return ffi.from_buffer("float[]", rows)


def _pool_geometry(searches: Sequence[Any]) -> tuple[int, int]:
    """(board size, planes) shared by every search of a pool; ValueError when they differ."""
    first = searches[0]
    for s in searches:
        if s.size != first.size or s._nplanes != first._nplanes:
            raise ValueError("the searches of one batch must share board size and feature set")
    return first.size, first._nplanes


def collect_many(searches: Sequence[Any], per_search: int, planes: np.ndarray,
                 keys: np.ndarray, counts: np.ndarray) -> int:
    """Collects up to ``per_search`` leaves from each search into one buffer (one C call);
    returns the leaves collected, ``counts[i]`` those of search i.

    The searches must share board size and feature set.  ``planes`` must be float32
    [>= len*per_search, P, N, N], ``keys`` uint64 [>= len*per_search], ``counts`` int32
    [>= len(searches)], all C-contiguous and writable: ValueError otherwise, before C writes
    anything, and for ``per_search`` outside 0..max_batch of a search."""
    n = len(searches)
    if n == 0:
        return 0
    per_search = int(per_search)
    if per_search < 0 or any(per_search > s.max_batch for s in searches):
        raise ValueError("per_search must be 0..max_batch of every search")
    size, nplanes = _pool_geometry(searches)
    room = n * per_search
    check_buffer("planes", planes, np.float32, ((">=", room), nplanes, size, size), True)
    check_buffer("keys", keys, np.uint64, ((">=", room),), True)
    check_buffer("counts", counts, np.int32, ((">=", n),), True)
    ptrs = ffi.new("search_t *[]", [s._ptr for s in searches])
    total = lib.search_collect_many(ptrs, n, per_search, ffi.from_buffer("float[]", planes),
                                    ffi.from_buffer("uint64_t[]", keys),
                                    ffi.from_buffer("int32_t[]", counts))
    for s, c in zip(searches, counts[:n].tolist()):
        s._pending[0] = c
    return int(total)


def backup_many(searches: Sequence[Any], counts: np.ndarray, policy: np.ndarray,
                values: np.ndarray, scores: np.ndarray | None = None,
                uncertainty: np.ndarray | None = None, policy_opt: np.ndarray | None = None) -> None:
    """Backs up one batch's results into the searches collected by :func:`collect_many`.

    ``counts`` are the leaves pending in each search (as collect_many returned them);
    ``policy`` holds logits [>= sum(counts), N*N+1] and ``values`` [>= sum(counts)], rows in
    collection order; ``scores`` [>= sum(counts)] the score leads, or None; ``uncertainty``
    [>= sum(counts), 2] the net's short-term win/loss and score errors (the playouts' weights
    when the searches use them), or None; ``policy_opt`` [>= sum(counts), N*N+1] the logits of
    an optimistic policy head (blended in by ``policy_optimism``), or None.  ValueError, before C reads anything, when the
    counts do not match the pending leaves or a buffer is too small or of the wrong shape."""
    if not searches:
        return
    n = len(searches)
    size, _ = _pool_geometry(searches)
    counts = np.asarray(counts)
    if counts.ndim != 1 or counts.shape[0] < n or not np.issubdtype(counts.dtype, np.integer):
        raise ValueError(f"counts must be integers [>= {n}], got {counts.dtype} {counts.shape}")
    counts = np.ascontiguousarray(counts[:n], dtype=np.int32)
    pending = [s._pending[0] for s in searches]
    if counts.tolist() != pending:
        raise ValueError(f"counts {counts.tolist()} do not match the pending leaves {pending}")
    total = int(counts.sum())
    policy = np.ascontiguousarray(policy, dtype=np.float32)
    values = np.ascontiguousarray(values, dtype=np.float32)
    check_buffer("policy", policy, np.float32, ((">=", total), size * size + 1), False)
    check_buffer("values", values, np.float32, ((">=", total),), False)
    if scores is not None:
        scores = np.ascontiguousarray(scores, dtype=np.float32)
        check_buffer("scores", scores, np.float32, ((">=", total),), False)
    ptrs = ffi.new("search_t *[]", [s._ptr for s in searches])
    if lib.search_backup_many(ptrs, n, ffi.from_buffer("int32_t[]", counts),
                              ffi.from_buffer("float[]", policy), ffi.from_buffer("float[]", values),
                              _floats_or_null(scores, total), _rows_or_null(uncertainty, total, 2, "uncertainty"),
                              _rows_or_null(policy_opt, total, size * size + 1, "policy_opt")) != 0:
        raise RuntimeError("backup does not match the pending leaves")
    for s in searches:
        s._pending[0] = 0


def ramp_leaves(visits: int, ramp: int, cap: int, in_flight: int = 0) -> int:
    """Leaves a search may add to a batch under a batch ramp: at most one in flight per ``ramp``
    root visits and always at least one, less the ``in_flight`` ones already out, and at most
    ``cap``; ``ramp`` 0: ``cap`` (no ramp).  A small tree searched many leaves at a time under
    virtual loss spreads its visits and loses much of its strength; a large one keeps its batch.
    The engine's ``--batch-ramp``, the analysis engine's and the game pool's ``batch_ramp``."""
    if ramp <= 0:
        return cap
    return min(cap, max(1, visits // ramp) - in_flight)


def _search_defaults() -> dict[str, float | int]:
    """C's ``search_default_params``, field by field; floats as the shortest decimal that is the
    same float32 (1.1, not 1.100000023841858)."""
    p = ffi.new("search_params_t *")
    lib.search_default_params(p)
    return {name: float(str(np.float32(getattr(p, name)))) if f.type.cname == "float" else int(getattr(p, name))
            for name, f in ffi.typeof("search_params_t").fields}


_SEARCH_DEFAULTS = _search_defaults()


@dataclass
class SearchParams:
    """PUCT parameters; every field is documented in src_c/search.h (search_params_t) and its
    default is C's ``search_default_params`` (read here, never repeated)."""

    c_puct: float = _SEARCH_DEFAULTS["c_puct"]
    c_puct_base: float = _SEARCH_DEFAULTS["c_puct_base"]
    c_puct_factor: float = _SEARCH_DEFAULTS["c_puct_factor"]
    fpu_reduction: float = _SEARCH_DEFAULTS["fpu_reduction"]
    fpu_reduction_root: float = _SEARCH_DEFAULTS["fpu_reduction_root"]
    virtual_loss: float = _SEARCH_DEFAULTS["virtual_loss"]
    noise_alpha: float = _SEARCH_DEFAULTS["noise_alpha"]
    noise_epsilon: float = _SEARCH_DEFAULTS["noise_epsilon"]
    policy_temperature: float = _SEARCH_DEFAULTS["policy_temperature"]
    temperature: float = _SEARCH_DEFAULTS["temperature"]
    lcb_z: float = _SEARCH_DEFAULTS["lcb_z"]
    lcb_min_visit_frac: float = _SEARCH_DEFAULTS["lcb_min_visit_frac"]
    max_memory: int = _SEARCH_DEFAULTS["max_memory"]
    max_collisions: int = _SEARCH_DEFAULTS["max_collisions"]
    forced_playouts_k: float = _SEARCH_DEFAULTS["forced_playouts_k"]
    static_score_utility: float = _SEARCH_DEFAULTS["static_score_utility"]
    dynamic_score_utility: float = _SEARCH_DEFAULTS["dynamic_score_utility"]
    dynamic_score_scale: float = _SEARCH_DEFAULTS["dynamic_score_scale"]
    score_centre_zero_weight: float = _SEARCH_DEFAULTS["score_centre_zero_weight"]
    cpuct_stdev_prior: float = _SEARCH_DEFAULTS["cpuct_stdev_prior"]
    cpuct_stdev_prior_weight: float = _SEARCH_DEFAULTS["cpuct_stdev_prior_weight"]
    cpuct_stdev_scale: float = _SEARCH_DEFAULTS["cpuct_stdev_scale"]
    subtree_bias_factor: float = _SEARCH_DEFAULTS["subtree_bias_factor"]
    subtree_bias_free_prop: float = _SEARCH_DEFAULTS["subtree_bias_free_prop"]
    subtree_bias_weight_exponent: float = _SEARCH_DEFAULTS["subtree_bias_weight_exponent"]
    lcb_utility: float = _SEARCH_DEFAULTS["lcb_utility"]
    use_uncertainty: float = _SEARCH_DEFAULTS["use_uncertainty"]
    uncertainty_coeff: float = _SEARCH_DEFAULTS["uncertainty_coeff"]
    uncertainty_exponent: float = _SEARCH_DEFAULTS["uncertainty_exponent"]
    uncertainty_max_weight: float = _SEARCH_DEFAULTS["uncertainty_max_weight"]
    policy_optimism: float = _SEARCH_DEFAULTS["policy_optimism"]
    root_policy_optimism: float = _SEARCH_DEFAULTS["root_policy_optimism"]
    fpu_parent_nn: float = _SEARCH_DEFAULTS["fpu_parent_nn"]
    fpu_parent_nn_pow: float = _SEARCH_DEFAULTS["fpu_parent_nn_pow"]
    value_weight_exponent: float = _SEARCH_DEFAULTS["value_weight_exponent"]
    noise_pruning: float = _SEARCH_DEFAULTS["noise_pruning"]
    noise_prune_utility_scale: float = _SEARCH_DEFAULTS["noise_prune_utility_scale"]
    conservative_pass: float = _SEARCH_DEFAULTS["conservative_pass"]
    rollout_weight: float = _SEARCH_DEFAULTS["rollout_weight"]
    rollouts: float = _SEARCH_DEFAULTS["rollouts"]
    rollout_policy: float = _SEARCH_DEFAULTS["rollout_policy"]
    rollout_ramp_start: float = _SEARCH_DEFAULTS["rollout_ramp_start"]
    rollout_ramp_end: float = _SEARCH_DEFAULTS["rollout_ramp_end"]
    terminal_judge: float = _SEARCH_DEFAULTS["terminal_judge"]

    def _c(self):
        p = ffi.new("search_params_t *")
        for f in dataclasses.fields(self):
            setattr(p, f.name, getattr(self, f.name))
        return p
