"""The search's parameters (:class:`SearchParams`, C's ``search_params_t``); importable from
:mod:`engine.core` as well."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from engine.native import ffi, lib


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

    def _c(self):
        p = ffi.new("search_params_t *")
        for f in dataclasses.fields(self):
            setattr(p, f.name, getattr(self, f.name))
        return p
