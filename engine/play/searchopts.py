"""The search's KataGo-style options by name, for command lines, GTP and match specs.

Each option is a :class:`engine.core.SearchParams` field (documented in src_c/search.h) and
may also be given by its KataGo config name where KataGo has one, so a KataGo user's settings
carry over:

==============================  ==============================  ===========
our name                        KataGo's name                   range
==============================  ==============================  ===========
``c_puct``                      ``cpuctExploration``            0 .. 10
``c_puct_factor``               ``cpuctExplorationLog``         0 .. 10
``c_puct_base``                 ``cpuctExplorationBase``        10 .. 100000
``fpu_reduction``               ``fpuReductionMax``             0 .. 2
``fpu_reduction_root``          ``rootFpuReductionMax``         0 .. 2
``lcb_min_visit_frac``          ``minVisitPropForLCB``          0 .. 1
``static_score_utility``        ``staticScoreUtilityFactor``    0 .. 1
``dynamic_score_utility``       ``dynamicScoreUtilityFactor``   0 .. 1
``dynamic_score_scale``         ``dynamicScoreCenterScale``     0.2 .. 5
``score_centre_zero_weight``    ``dynamicScoreCenterZeroWeight`` 0 .. 1
``cpuct_stdev_prior``           ``cpuctUtilityStdevPrior``      1e-8 .. 10
``cpuct_stdev_prior_weight``    ``cpuctUtilityStdevPriorWeight`` 0 .. 100
``cpuct_stdev_scale``           ``cpuctUtilityStdevScale``      0 .. 1
``subtree_bias_factor``         ``subtreeValueBiasFactor``      0 .. 1
``subtree_bias_free_prop``      ``subtreeValueBiasFreeProp``    0 .. 1
``subtree_bias_weight_exponent`` ``subtreeValueBiasWeightExponent`` 0 .. 1
``use_uncertainty``             ``useUncertainty``              0 .. 1 (nonzero: on)
``uncertainty_coeff``           ``uncertaintyCoeff``            0.0001 .. 1
``uncertainty_exponent``        ``uncertaintyExponent``         0 .. 2
``uncertainty_max_weight``      ``uncertaintyMaxWeight``        1 .. 100
``policy_optimism``             ``policyOptimism``              0 .. 1
``root_policy_optimism``        ``rootPolicyOptimism``          0 .. 1
``fpu_parent_nn``               ``fpuParentWeightByVisitedPolicy`` 0 .. 1 (nonzero: on)
``fpu_parent_nn_pow``           ``fpuParentWeightByVisitedPolicyPow`` 0 .. 5
``value_weight_exponent``       ``valueWeightExponent``         0 .. 1
``noise_pruning``               ``useNoisePruning``             0 .. 1 (nonzero: on)
``noise_prune_utility_scale``   ``noisePruneUtilityScale``      0.001 .. 10
``conservative_pass``           ``conservativePass``            0 .. 1 (nonzero: on)
``lcb_utility``                 (KataGo's LCB always does)      0 .. 1 (nonzero: on)
``rollout_weight``              (none: AlphaGo's lambda)        0 .. 1
``rollouts``                    (none)                          1 .. 256
``rollout_policy``              (none)                          0 .. 2 (1: tactical playouts, 2: and 3x3 patterns)
``rollout_ramp_start``          (none)                          0 .. 1 (stones / points)
``rollout_ramp_end``            (none)                          0 .. 1 (stones / points)
``terminal_judge``              (none)                          0 .. 256 (playouts; 0: Tromp-Taylor count)
==============================  ==============================  ===========

The ranges are KataGo's; the switches also take ``true`` and ``false``.  The score utility
needs a net with a score head (ours and KataGo's have one); without it the search backs up
values only and the score options change nothing.  Uncertainty-weighted playouts need a net
with short-term error heads (KataGo's, model version >= 9); with any other net every playout
weighs 1 and the uncertainty options change nothing.  Policy optimism needs a net with an
optimistic policy head (KataGo's two-channel policy heads, model version >= 12); with any other
net the optimism options change nothing.  The first six are the search's base constants:
our c_puct grows as c_puct + c_puct_factor * log((N + base + 1) / base), KataGo's the same
way (without the +1); KataGo's GTP uses 1.0, 0.45 and 500, FPU reductions 0.2 and 0.1 at the
root, and 0.15 for the LCB's visit share, where ours are 1.1, 1.0, 19652, 0.25, 0.25 and 0.1.
Conservative pass is on by default, as in KataGo's GTP and analysis engines (after the
opponent's pass, our pass is judged by the net as a position where play goes on, not as a
Tromp-Taylor end of the game); self-play and gating, scored Tromp-Taylor, turn it off.
"""
from __future__ import annotations

import argparse
import dataclasses
import math
from typing import Callable

from engine.core import SearchParams

#: KataGo's config name of each option.
KATAGO_NAMES = {
    "c_puct": "cpuctExploration",
    "c_puct_factor": "cpuctExplorationLog",
    "c_puct_base": "cpuctExplorationBase",
    "fpu_reduction": "fpuReductionMax",
    "fpu_reduction_root": "rootFpuReductionMax",
    "lcb_min_visit_frac": "minVisitPropForLCB",
    "static_score_utility": "staticScoreUtilityFactor",
    "dynamic_score_utility": "dynamicScoreUtilityFactor",
    "dynamic_score_scale": "dynamicScoreCenterScale",
    "score_centre_zero_weight": "dynamicScoreCenterZeroWeight",
    "cpuct_stdev_prior": "cpuctUtilityStdevPrior",
    "cpuct_stdev_prior_weight": "cpuctUtilityStdevPriorWeight",
    "cpuct_stdev_scale": "cpuctUtilityStdevScale",
    "subtree_bias_factor": "subtreeValueBiasFactor",
    "subtree_bias_free_prop": "subtreeValueBiasFreeProp",
    "subtree_bias_weight_exponent": "subtreeValueBiasWeightExponent",
    "use_uncertainty": "useUncertainty",
    "uncertainty_coeff": "uncertaintyCoeff",
    "uncertainty_exponent": "uncertaintyExponent",
    "uncertainty_max_weight": "uncertaintyMaxWeight",
    "policy_optimism": "policyOptimism",
    "root_policy_optimism": "rootPolicyOptimism",
    "fpu_parent_nn": "fpuParentWeightByVisitedPolicy",
    "fpu_parent_nn_pow": "fpuParentWeightByVisitedPolicyPow",
    "value_weight_exponent": "valueWeightExponent",
    "noise_pruning": "useNoisePruning",
    "noise_prune_utility_scale": "noisePruneUtilityScale",
    "conservative_pass": "conservativePass",
}
#: Every option by our name: KataGo's, then ours without a KataGo counterpart.
OPTIONS = (*KATAGO_NAMES, "lcb_utility", "rollout_weight", "rollouts", "rollout_policy",
           "rollout_ramp_start", "rollout_ramp_end", "terminal_judge")
#: Accepted range of each option (KataGo's).
RANGES = {
    "c_puct": (0.0, 10.0),
    "c_puct_factor": (0.0, 10.0),
    "c_puct_base": (10.0, 100000.0),
    "fpu_reduction": (0.0, 2.0),
    "fpu_reduction_root": (0.0, 2.0),
    "lcb_min_visit_frac": (0.0, 1.0),
    "static_score_utility": (0.0, 1.0),
    "dynamic_score_utility": (0.0, 1.0),
    "dynamic_score_scale": (0.2, 5.0),
    "score_centre_zero_weight": (0.0, 1.0),
    "cpuct_stdev_prior": (1e-8, 10.0),
    "cpuct_stdev_prior_weight": (0.0, 100.0),
    "cpuct_stdev_scale": (0.0, 1.0),
    "subtree_bias_factor": (0.0, 1.0),
    "subtree_bias_free_prop": (0.0, 1.0),
    "subtree_bias_weight_exponent": (0.0, 1.0),
    "use_uncertainty": (0.0, 1.0),
    "uncertainty_coeff": (0.0001, 1.0),
    "uncertainty_exponent": (0.0, 2.0),
    "uncertainty_max_weight": (1.0, 100.0),
    "policy_optimism": (0.0, 1.0),
    "root_policy_optimism": (0.0, 1.0),
    "fpu_parent_nn": (0.0, 1.0),
    "fpu_parent_nn_pow": (0.0, 5.0),
    "value_weight_exponent": (0.0, 1.0),
    "noise_pruning": (0.0, 1.0),
    "noise_prune_utility_scale": (0.001, 10.0),
    "conservative_pass": (0.0, 1.0),
    "lcb_utility": (0.0, 1.0),
    "rollout_weight": (0.0, 1.0),
    "rollouts": (1.0, 256.0),
    "rollout_policy": (0.0, 2.0),
    "rollout_ramp_start": (0.0, 1.0),
    "rollout_ramp_end": (0.0, 1.0),
    "terminal_judge": (0.0, 256.0),
}
_BY_NAME = {**{k: k for k in OPTIONS}, **{v: k for k, v in KATAGO_NAMES.items()}}

#: KataGo's GTP values of the options (KataGo 1.17, program/setup.cpp) where ours differ: the
#: search a KataGo net plays with (:func:`net_defaults`).  lcb_utility: KataGo's LCB always
#: reads utility.
KATAGO_GTP = {
    "c_puct": 1.0, "c_puct_factor": 0.45, "c_puct_base": 500.0,
    "fpu_reduction": 0.2, "fpu_reduction_root": 0.1, "lcb_min_visit_frac": 0.15,
    "static_score_utility": 0.1, "dynamic_score_utility": 0.3,
    "cpuct_stdev_scale": 0.85, "subtree_bias_factor": 0.45,
    "use_uncertainty": 1.0, "policy_optimism": 1.0, "root_policy_optimism": 0.2,
    "fpu_parent_nn": 1.0, "value_weight_exponent": 0.25, "noise_pruning": 1.0,
    "lcb_utility": 1.0,
}


#: The options that need heads our nets lack (short-term errors, an optimistic policy).
HEAD_OPTIONS = ("use_uncertainty", "policy_optimism", "root_policy_optimism")
#: The search our own nets play with: KataGo's GTP values of every option they can use (with the
#: leaf ramp, +49 [+4, +96] over C's defaults at 400 visits and +45 at 64:
#: docs/results/search-options.md).
OUR_NETS = {k: v for k, v in KATAGO_GTP.items() if k not in HEAD_OPTIONS}
#: Playouts mixed into our nets' leaf values (AlphaGo's lambda, the default 16 playouts a leaf)
#: on boards up to :data:`ROLLOUT_MAX_SIZE`, with the shipped 9x9 net at 400 visits
#: (docs/results/search-options.md): uniformly random ones at lambda 0.5 were +70 [+6, +141]
#: over :data:`OUR_NETS` alone (+70 [+6, +140] at 0.5 s a move); tactical ones (capture and
#: escape atari, no joining self-atari) +107 [+42, +181] over those.  A lambda growing with the
#: board's stones (0 while at most 17% of its points hold one, 1 from 44% on) was +81 [+17, +152]
#: over tactical ones at 0.5, but against Pachi at 1,600 visits it did worse (27-19 of the first
#: 46 openings, against 31.5 for random playouts at 0.5): not a default.  MoGo's 3x3 patterns in
#: the playouts (``rollout_policy=2``) were +67 [+4, +135] over tactical ones, but against Pachi
#: ``-t =5000`` they scored 65.5% where tactical ones scored 71.5% on the same openings (18
#: better, 25 worse): not a default either.  Not measured on larger boards, where a playout
#: costs more and judges less: off there.
ROLLOUTS = {"rollout_weight": 0.5, "rollout_policy": 1.0}
ROLLOUT_MAX_SIZE = 9


def net_defaults(feature_set: str | None, size: int | None = None) -> dict[str, float]:
    """The options a net's search starts from (``--search`` then overrides any): KataGo's GTP
    values for KataGo nets, whose search was tuned with them (against KataGo itself, with its
    net, they bring ours level: docs/results/katago.md), and for ours (``rich`` features)
    those of them they can use (:data:`OUR_NETS`, a measured gain), with playouts at the
    leaves (:data:`ROLLOUTS`) when the board ``size`` is known and at most
    :data:`ROLLOUT_MAX_SIZE`; none for Leela Zero's, where none was measured, nor for test
    evaluators without a feature set (None)."""
    if not feature_set:
        return {}
    if feature_set.startswith("kata"):
        return dict(KATAGO_GTP)
    if feature_set != "rich":
        return {}
    if size is not None and size <= ROLLOUT_MAX_SIZE:
        return {**OUR_NETS, **ROLLOUTS}
    return dict(OUR_NETS)


def net_kind(feature_set: str | None) -> str:
    """How the engine names a net's kind on stderr: ``KataGo net`` or ``our net``."""
    return "KataGo net" if (feature_set or "").startswith("kata") else "our net"


def with_net_defaults(params: SearchParams, feature_set: str | None,
                      say: Callable[[str], None] = lambda text: None, size: int | None = None) -> SearchParams:
    """``params`` with the options of the net's kind on a board of ``size`` (:func:`net_defaults`)
    set, said through ``say`` when there are any (the engine and its analysis engine print it on
    stderr)."""
    profile = net_defaults(feature_set, size)
    if not profile:
        return params
    params = with_options(params, profile)
    kind = "tactical" if profile.get("rollout_policy") else "random"
    playouts = f" and {kind} playouts at the leaves" if "rollout_weight" in profile else ""
    say(f"{net_kind(feature_set)}: KataGo's search settings{playouts} ({describe(params)}); --search changes any")
    return params


def option_field(name: str) -> str:
    """The SearchParams field of an option given by our name or KataGo's; ValueError if unknown."""
    try:
        return _BY_NAME[name.strip()]
    except KeyError:
        raise ValueError(f"unknown search option {name!r} (known: {', '.join(OPTIONS)}, "
                         f"or KataGo's {', '.join(KATAGO_NAMES.values())})") from None


def is_option(name: str) -> bool:
    return name.strip() in _BY_NAME


def option_value(name: str, text: str | float) -> tuple[str, float]:
    """(field, value) of option ``name`` set to ``text``; ValueError when the value is not a
    number in the option's range."""
    field = option_field(name)
    lo, hi = RANGES[field]
    if isinstance(text, str) and text.strip().lower() in ("true", "false"):
        text = 1.0 if text.strip().lower() == "true" else 0.0   # KataGo's booleans
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise ValueError(f"search option {name}: {text!r} is not a number") from None
    if not (math.isfinite(value) and lo <= value <= hi):
        raise ValueError(f"search option {name}: {value:g} is outside {lo:g}..{hi:g}")
    return field, value


def parse_options(text: str) -> dict[str, float]:
    """Fields and values of ``NAME=VALUE[,NAME=VALUE...]`` (our names or KataGo's)."""
    out: dict[str, float] = {}
    for item in filter(None, (x.strip() for x in text.split(","))):
        name, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"expected NAME=VALUE, got {item!r}")
        field, v = option_value(name, value.strip())
        out[field] = v
    return out


def options_arg(text: str) -> dict[str, float]:
    """:func:`parse_options` as an argparse ``type``: bad options are a usage error."""
    try:
        return parse_options(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def with_options(params: SearchParams, options: dict[str, float]) -> SearchParams:
    """``params`` with the options (fields as :func:`parse_options` returns them) set."""
    return dataclasses.replace(params, **options)


def describe(params: SearchParams) -> str:
    """``name=value`` of the options that differ from the defaults (``default`` if none)."""
    base = SearchParams()
    diff = [f"{k}={getattr(params, k):g}" for k in OPTIONS if getattr(params, k) != getattr(base, k)]
    return ",".join(diff) or "default"
