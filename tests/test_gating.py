"""Gating without bias (train.gating): results count in start order, lost games are skipped but
unblock the order, slow and dead workers neither bias nor stall the decision; and a tiny agz
training loop end to end (sync and async pipelines)."""
import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from engine.core import BLACK, WHITE, Rules
from engine.evaluator import RandomEvaluator
from train.gating import CONTINUE, PROMOTE, REJECT, GateCoordinator, GateMatch, GateRule
from train.pool import Agent, PlaySettings
from train.records import read_sgf_moves
from train.rundir import RunDir

REPO = Path(__file__).resolve().parents[1]
RULES = Rules.preset("chinese", 0.5)


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def decide_in_order(rule, results):
    """The rule applied to ``results`` one by one: (games used, verdict)."""
    w = l = d = 0
    for n, r in enumerate(results, 1):
        w, l, d = w + (r == 1), l + (r == 0), d + (r == 0.5)
        verdict = rule.decide(w, l, d)[0]
        if verdict != CONTINUE:
            return n, verdict
    return len(results), CONTINUE


def check_unbiased(coord):
    """The counted games are exactly the start-order prefix minus the lost games, and the
    decision is the rule's verdict on that prefix, reached at its last game (not before)."""
    resolved = coord.games[:coord._next]
    assert coord.counted_indices == [g.index for g in resolved if g.state == "returned"]
    assert coord.sequence == [g.score for g in resolved if g.state == "returned"]
    n, verdict = decide_in_order(coord.rule, coord.sequence)
    assert n == len(coord.sequence) and verdict == coord.decision.verdict


# ---------------------------------------------------------------------------------------------
# The coordinator, with a hand-driven clock


def test_fast_wins_do_not_jump_the_queue():
    """Even-numbered games are slow losses, odd ones quick wins.  Counted as they arrive, the
    first 11 results would be wins (a promotion); counted in start order the candidate scores
    50% and fails."""
    clock = Clock()
    rule = GateRule(max_games=20)
    coord = GateCoordinator(rule, slack=20, deadline_min=1000.0, clock=clock)
    started = [coord.claim(worker=i % 4) for i in range(40)]
    assert started == list(range(40)) and coord.claim(0) is None      # max_games + slack
    arrivals = sorted(((1.0 if i % 2 else 10.0), i) for i in started)
    naive = [1.0 if i % 2 else 0.0 for _, i in arrivals]
    assert decide_in_order(rule, naive) == (11, PROMOTE)             # the biased answer
    for t, i in arrivals:
        clock.t = t
        coord.report(i, 1.0 if i % 2 else 0.0)
        if t == 1.0:
            assert coord.sequence == [] and coord.decision is None  # game 0 still out
    d = coord.decision
    assert d.verdict == REJECT and d.counted == 19 and (d.wins, d.losses) == (9, 10)
    check_unbiased(coord)


def test_a_straggler_is_declared_lost_after_its_deadline_and_its_late_result_ignored():
    clock = Clock()
    rule = GateRule(max_games=10)
    coord = GateCoordinator(rule, slack=2, deadline_min=5.0, deadline_factor=3.0, clock=clock)
    for i in range(6):
        assert coord.claim(worker=0 if i != 2 else 1) == i
    clock.t = 1.0
    for i in (0, 1, 3, 4, 5):
        coord.report(i, 1.0)
    assert coord.sequence == [1.0, 1.0]                       # waits for game 2
    assert coord.deadline() == 5.0                            # max(5, 3 x median 1.0)
    clock.t = 4.9
    assert coord.expire() == []                               # not yet
    clock.t = 5.1
    assert coord.expire() == [2]
    assert coord.lost_games(1) == {2} and coord.lost == 1
    assert coord.sequence == [1.0] * 5 and coord.counted_indices == [0, 1, 3, 4, 5]
    assert coord.report(2, 0.0) is False and coord.late == 1  # too late: not counted
    assert coord.sequence == [1.0] * 5
    assert coord.claim(0) == 6                                # a replacement may start
    coord.report(6, 1.0)
    d = coord.decision
    assert d.verdict == PROMOTE and d.counted == 6 and d.lost == 1 and d.late == 1  # 6 of 10 >= 5.5
    check_unbiased(coord)


def test_expire_uses_the_median_game_time():
    clock = Clock()
    coord = GateCoordinator(GateRule(max_games=10), slack=2, deadline_min=1.0, deadline_factor=4.0, clock=clock)
    for i in range(4):
        coord.claim(0)
    clock.t = 2.0
    coord.report(0, 1.0)
    coord.report(1, 0.0)
    assert coord.deadline() == 8.0                            # 4 x median 2.0
    clock.t = 7.9
    assert coord.expire() == []
    clock.t = 8.1
    assert coord.expire() == [2, 3]


def test_a_dead_worker_unblocks_the_order_at_once():
    clock = Clock()
    rule = GateRule(max_games=6)
    coord = GateCoordinator(rule, slack=3, deadline_min=1e9, clock=clock)
    owners = [0, 1, 0, 1, 0, 0]
    for i, w in enumerate(owners):
        assert coord.claim(w) == i
    for i in (0, 2, 4, 5):
        coord.report(i, 1.0)
    assert coord.sequence == [1.0]                             # game 1 (worker 1) blocks
    assert coord.worker_died(1) == [1, 3]
    assert coord.counted_indices == [0, 2, 4, 5] and coord.lost == 2
    # 4 points of 6 games at 55% need 3.3: already reached -> promoted without waiting
    assert coord.decision.verdict == PROMOTE and coord.decision.lost == 2
    check_unbiased(coord)


def test_more_games_are_scheduled_than_needed():
    coord = GateCoordinator(GateRule(max_games=4), slack=2, deadline_min=1e9)
    assert [coord.claim(0) for _ in range(7)] == [0, 1, 2, 3, 4, 5, None]
    coord.worker_died(0)                                        # all six lost
    assert coord.claim(1) == 6                                  # replacements start
    assert coord.decision is None


# ---------------------------------------------------------------------------------------------
# Matches with worker threads (random evaluators: no network needed)


SETTINGS = PlaySettings(visits=4, temperature_moves=4, temperature=1.0, noise_epsilon=0.0, max_moves=30,
                        record_policy=False)


def make_agents(w):
    return Agent("candidate", RandomEvaluator(10 + w)), Agent("best", RandomEvaluator(20 + w))


def test_match_plays_alternating_colours_and_decides():
    seen = []
    lock = threading.Lock()

    def on_game(index, fg, counted):
        with lock:
            seen.append((index, fg.spec.black.model_id, fg.spec.white.model_id, counted))

    match = GateMatch(make_agents, GateRule(max_games=10), 5, RULES, SETTINGS, workers=2, slots=4, batch=16,
                      seed=1, on_game=on_game)
    d = match.run()
    assert d is not None and d.verdict in (PROMOTE, REJECT) and d.lost == 0
    for index, black, white, _ in seen:
        assert (black, white) == (("candidate", "best") if index % 2 == 0 else ("best", "candidate"))
    assert match.finished_games == len(seen) >= d.counted
    check_unbiased(match.coordinator)


def test_a_stuck_worker_neither_stalls_nor_biases_the_decision():
    release, stuck, came_back = threading.Event(), threading.Event(), threading.Event()
    # The match's clock: steps of the live worker, not wall time.  A game takes at most 30 moves
    # of at most 4 steps, so only the stuck worker's games outlive the 400-step deadline.
    steps = [0]

    def hook(w, pool):
        if w == 0:
            steps[0] += 1
        elif pool.active():
            stuck.set()
            release.wait(600)                # holds its games and never returns them
            came_back.set()

    match = GateMatch(make_agents, GateRule(max_games=12), 5, RULES, SETTINGS, workers=2, slots=4, batch=16,
                      deadline_min=400, deadline_factor=3.0, seed=2, step_hook=hook, clock=lambda: steps[0])
    try:
        d = match.run()
        # decided while the stuck worker still held its games: the match did not wait for it
        assert d is not None and stuck.is_set() and not came_back.is_set()
    finally:
        release.set()
    coord = match.coordinator
    stuck = [g.index for g in coord.games if g.worker == 1]
    assert stuck and all(coord.games[i].state == "lost" for i in stuck)
    assert d.lost == len(stuck) and not set(stuck) & set(coord.counted_indices)
    check_unbiased(coord)


def test_a_dead_worker_neither_stalls_nor_biases_the_decision():
    def hook(w, pool):
        if w == 1 and pool.stats.steps >= 2:
            raise RuntimeError("injected crash")

    # A clock that never moves: no deadline can fire, so only the worker's death frees its games.
    match = GateMatch(make_agents, GateRule(max_games=12), 5, RULES, SETTINGS, workers=2, slots=4, batch=16,
                      deadline_min=600.0, seed=3, step_hook=hook, clock=lambda: 0.0)
    d = match.run()
    assert d is not None
    assert "injected crash" in match.errors[1]
    coord = match.coordinator
    dead = [g.index for g in coord.games if g.worker == 1]
    assert dead and all(coord.games[i].state == "lost" for i in dead) and d.lost == len(dead)
    check_unbiased(coord)


def test_every_worker_dead_is_an_error():
    from train.gating import GateError

    def hook(w, pool):
        raise RuntimeError(f"boom {w}")

    match = GateMatch(make_agents, GateRule(max_games=4), 5, RULES, SETTINGS, workers=2, slots=2, seed=4,
                      step_hook=hook)
    with pytest.raises(GateError, match="boom"):
        match.run()


# ---------------------------------------------------------------------------------------------
# The loop end to end

TINY = ["--board-size", "5", "--komi", "2.5", "--blocks", "1", "--filters", "8", "--visits", "8",
        "--parallel-games", "4", "--batch", "16", "--train-batch", "16", "--min-games", "2",
        "--metrics-every", "1", "--threads", "1", "--seed", "5", "--mode", "agz",
        "--gate-games", "6", "--gate-workers", "2", "--gate-parallel-games", "4", "--gate-visits", "4",
        "--gate-deadline-min", "60", "--quiet"]


def run_loop(args, timeout=120):
    return subprocess.run([sys.executable, "-m", "train.loop", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=timeout)


def check_decisions(rd: RunDir):
    decisions = [r for r in rd.read_metrics("gate") if r.get("event") == "decision"]
    assert decisions, "no gating decision logged"
    for rec in decisions:
        on_disk = rd.read_decision(rec["candidate"])
        assert on_disk is not None and on_disk["verdict"] == rec["verdict"] in ("promote", "reject")
        assert rec["counted"] == rec["wins"] + rec["losses"] + rec["draws"] <= 6
        assert rec["lag_s"] >= 0 and rec["games_played"] >= rec["counted"]
        sgfs = sorted((rd.gating / rec["candidate"]).glob("g*.sgf"))
        assert len(sgfs) >= rec["counted"]
        for p in sgfs:
            index = int(p.stem[1:])
            _, _, moves, props = read_sgf_moves(p.read_bytes())
            cand_black = index % 2 == 0
            assert props["PB"] == (rec["candidate"] if cand_black else rec["best"])
            assert props["PW"] == (rec["best"] if cand_black else rec["candidate"])
    promoted = [r for r in decisions if r["verdict"] == "promote"]
    best = rd.best_model()
    assert best[0] == (promoted[-1]["candidate_step"] if promoted else 0)
    return decisions


def test_agz_sync_loop_end_to_end(tmp_path):
    rd = RunDir(tmp_path / "run")
    r = run_loop(["--run-dir", str(rd.root), "--pipeline", "sync", "--generation-games", "8",
                  "--budget", "16g", "--on-new-model", "discard", *TINY])
    assert r.returncode == 0, r.stdout + r.stderr
    assert rd.count_games() == 16
    steps = [s for s, _ in rd.list_models()]
    assert steps == [0, 8, 16]                                 # one candidate per generation
    decisions = check_decisions(rd)
    assert [d["candidate"] for d in decisions] == ["model-0000008", "model-0000016"]
    assert [d["generation"] for d in decisions] == [1, 2]
    phases = [(p["phase"], p["generation"]) for p in rd.read_metrics("loop") if p.get("event") == "phase"]
    assert phases[:6] == [("selfplay", 1), ("train", 1), ("gate", 1), ("selfplay", 2), ("train", 2), ("gate", 2)]
    summary = [m for m in rd.read_metrics("loop") if m.get("event") == "summary"][-1]
    assert summary["games"] == 16 and summary["decisions"] == 2 and summary["gating_games"] >= 2
    assert summary["selfplay_wait_s"] > 0 and summary["pipeline"] == "sync"
    assert summary["eval_lag_mean_s"] is not None
    for key in ("games_per_hour", "positions_per_hour", "wasted_evals", "wasted_share"):
        assert key in summary
    assert "summary (agz, sync" in r.stderr


def test_agz_async_loop_end_to_end(tmp_path):
    # A games budget, not a time budget: the same games, checkpoints and last decision on any
    # machine.  After the 16 games the trainer does the 16 steps they paid for (a checkpoint
    # every 4), then the gate decides on the last checkpoint before the loop ends.
    rd = RunDir(tmp_path / "run")
    r = run_loop(["--run-dir", str(rd.root), "--budget", "16g", "--checkpoint-every", "4", *TINY])
    assert r.returncode == 0, r.stdout + r.stderr
    assert rd.count_games() == 16
    assert [s for s, _ in rd.list_models()] == [0, 4, 8, 12, 16]
    decisions = check_decisions(rd)
    assert decisions[-1]["candidate"] == "model-0000016"
    assert [m for m in rd.read_metrics("loop") if m.get("event") == "stop"][-1]["reason"] == "game budget reached"
    summary = [m for m in rd.read_metrics("loop") if m.get("event") == "summary"][-1]
    assert summary["pipeline"] == "async" and summary["selfplay_wait_s"] == 0
    assert not rd.pipeline_path.exists()
