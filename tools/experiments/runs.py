"""What the experiments share (:mod:`tools.experiments.pipelines` and
:mod:`tools.experiments.strength`): a finished run's summary, a run's final net, and a round robin
between nets played through one game pool."""
from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from engine.core import BLACK, WHITE
from train.config import RunConfig
from train.gating import gate_settings
from train.games.pool import GamePool, GameSpec
from train.rundir import RunDir
from train.selfplay import make_agent


def run_summary_of(rd: RunDir) -> dict[str, Any] | None:
    """The last summary record of a run directory, or None."""
    found = [r for r in rd.read_metrics("loop") if r.get("event") == "summary"]
    return found[-1] if found else None


def final_model(rd: RunDir, cfg: RunConfig) -> Path:
    m = rd.best_model() if cfg.mode == "agz" else rd.latest_model()
    if m is None:
        raise FileNotFoundError(f"{rd.models}: no model")
    return m[1]


def round_robin(players: dict[str, Path], cfg: RunConfig, games_per_pair: int, visits: int | None = None,
                parallel: int = 64, seed: int = 0,
                pairs: list[tuple[str, str]] | None = None) -> list[tuple[str, str, float]]:
    """Every pair of ``players`` (name -> checkpoint; or only ``pairs``) plays ``games_per_pair``
    games, colours alternating, all through one GamePool (one forward pass per network per
    step); returns [(black, white, Black's score)]."""

    device = cfg.gate_device or cfg.device
    params = cfg.gate_search_params()          # checkpoints playing each other: gating's search
    agents = {name: make_agent(path, cfg, seed=seed + i, device=device, params=params)
              for i, (name, path) in enumerate(players.items())}
    for name, agent in agents.items():
        agent.model_id = name                 # SGF-free: the label is the player's name
    settings = gate_settings(cfg)
    if visits:
        settings.visits = visits
    rules = cfg.rules
    schedule = []
    for a, b in pairs if pairs is not None else itertools.combinations(agents, 2):
        for k in range(games_per_pair):
            schedule.append((a, b) if k % 2 == 0 else (b, a))
    it = iter(enumerate(schedule))

    def next_game(slot) -> GameSpec | None:
        nxt = next(it, None)
        if nxt is None:
            return None
        i, (black, white) = nxt
        return GameSpec(cfg.board_size, rules, agents[black], agents[white], settings, seed=seed * 100_003 + i,
                        tag=(black, white))

    pool = GamePool(max(1, min(parallel, len(schedule))), next_game, batch=cfg.gate_batch or cfg.batch,
                    max_leaves_per_search=cfg.max_leaves_per_search, batch_ramp=cfg.batch_ramp)
    results = []
    for fg in pool.run():
        black, white = fg.spec.tag
        score = 1.0 if fg.winner == BLACK else 0.0 if fg.winner == WHITE else 0.5
        results.append((black, white, score))
    return results
