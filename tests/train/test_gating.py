"""Gating without bias (train.gating): results count in number order, a lost game is played
again under its own number (never skipped, bounded), slow and dead workers neither bias nor
stall the decision; and a tiny agz training loop end to end (sync and async pipelines)."""
import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from engine.core import BLACK, WHITE, Rules, SearchParams
from engine.nets.evaluator import RandomEvaluator
from train.gating import CONTINUE, PROMOTE, REJECT, VOID, GateCoordinator, GateMatch, GateRule
from train.games.pool import Agent, PlaySettings
from train.games.records import read_sgf_moves
from train.rundir import RunDir

REPO = Path(__file__).resolve().parents[2]
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
    """The counted games are exactly the numbers 0, 1, ... in order, none skipped, and the
    decision is the rule's verdict on them, reached at the last one (not before)."""
    assert coord.counted_indices == list(range(len(coord.sequence)))
    assert all(g.state == "returned" for g in coord.games[:coord._next])
    assert coord.sequence == [g.score for g in coord.games[:coord._next]]
    n, verdict = decide_in_order(coord.rule, coord.sequence)
    assert n == len(coord.sequence) and verdict == coord.decision.verdict


# ---------------------------------------------------------------------------------------------
# The coordinator, with a hand-driven clock


def test_fast_wins_do_not_jump_the_queue():
    """Even-numbered games are slow losses, odd ones quick wins.  Counted as they arrive, the
    quick wins would make SPRT (elo1 400: it decides within a few games) promote; counted in
    number order the candidate scores 50% and is rejected."""
    clock = Clock()
    rule = GateRule(max_games=20, elo1=400)
    coord = GateCoordinator(rule, deadline_min=1000.0, clock=clock)
    started = [coord.claim(worker=i % 4) for i in range(20)]
    assert started == list(range(20)) and coord.claim(0) is None      # never more than max_games
    arrivals = sorted(((1.0 if i % 2 else 10.0), i) for i in started)
    naive = [1.0 if i % 2 else 0.0 for _, i in arrivals]
    assert decide_in_order(rule, naive)[1] == PROMOTE                 # the biased answer
    for t, i in arrivals:
        clock.t = t
        coord.report(i, 1.0 if i % 2 else 0.0)
        if t == 1.0:
            assert coord.sequence == [] and coord.decision is None  # game 0 still out
    d = coord.decision
    assert d.verdict == REJECT and (d.wins, d.losses) == (2, 3)   # games 0-4: L W L W L
    check_unbiased(coord)


def test_a_straggler_is_played_again_under_its_number_and_its_late_result_ignored():
    clock = Clock()
    rule = GateRule(max_games=10)
    coord = GateCoordinator(rule, deadline_min=5.0, deadline_factor=3.0, clock=clock)
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
    assert coord.lost == 1 and coord.sequence == [1.0, 1.0]   # replaced, not skipped: still waits
    assert coord.claim(1) == 6                                # worker 1 may still hold game 2
    assert coord.claim(0) == 2                                # game 2 again, same number
    assert coord.report(2, 0.0, worker=1) is False and coord.late == 1   # the lost attempt's result
    assert coord.lost_games(1) == {2} and coord.lost_games(1) == set()  # worker 1 drops it once
    clock.t = 6.0
    assert coord.report(2, 1.0, worker=0) is True
    d = coord.decision                                        # 6 wins in games 0-5 reach 5.5
    assert d.verdict == PROMOTE and d.counted == 6 and (d.lost, d.replayed, d.late) == (1, 1, 1)
    assert coord.claim(0) is None
    check_unbiased(coord)


def test_expire_uses_the_median_game_time_doubled_for_each_loss():
    clock = Clock()
    coord = GateCoordinator(GateRule(max_games=10), deadline_min=1.0, deadline_factor=4.0, clock=clock)
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
    assert coord.claim(0) == 4                                # worker 0 may still hold 2 and 3
    assert coord.claim(1) == 2 and coord.claim(1) == 3        # played again, lowest first
    clock.t = 8.1 + 15.9
    assert coord.expire() == [4]                              # a first attempt: 8
    clock.t = 8.1 + 16.1
    assert coord.expire() == [2, 3]                           # a second attempt: 2 x 8


def test_a_dead_workers_games_are_played_again_and_the_order_waits_for_them():
    clock = Clock()
    rule = GateRule(max_games=6)
    coord = GateCoordinator(rule, deadline_min=1e9, clock=clock)
    owners = [0, 1, 0, 1, 0, 0]
    for i, w in enumerate(owners):
        assert coord.claim(w) == i
    for i in (0, 2, 4, 5):
        coord.report(i, 1.0, worker=0)
    assert coord.sequence == [1.0]                             # game 1 (worker 1) blocks
    assert coord.worker_died(1) == [1, 3]
    assert coord.sequence == [1.0] and coord.decision is None  # 4 wins known, none skipped past
    assert [coord.claim(0), coord.claim(0), coord.claim(0)] == [1, 3, None]
    coord.report(3, 0.0, worker=0)
    assert coord.sequence == [1.0]
    coord.report(1, 1.0, worker=0)
    # 4 points in games 0-4 reach 3.3 (55% of 6): promoted at game 4, game 5 not needed
    d = coord.decision
    assert d.verdict == PROMOTE and d.counted == 5 and (d.lost, d.replayed) == (2, 2)
    check_unbiased(coord)


def test_numbers_stop_at_max_games_and_lost_ones_come_back_first():
    coord = GateCoordinator(GateRule(max_games=4), deadline_min=1e9)
    assert [coord.claim(0) for _ in range(5)] == [0, 1, 2, 3, None]
    assert coord.worker_died(0) == [0, 1, 2, 3]
    assert [coord.claim(1) for _ in range(5)] == [0, 1, 2, 3, None]
    assert coord.replayed == 4 and coord.decision is None


def test_a_game_lost_too_often_ends_the_match_void():
    coord = GateCoordinator(GateRule(max_games=4), deadline_min=1e9, max_losses=3)
    assert (coord.claim(0), coord.claim(1)) == (0, 1)
    coord.report(0, 1.0, worker=0)
    for w in (1, 2):
        assert coord.worker_died(w) == [1]
        assert coord.claim(w + 1) == 1 and coord.decision is None
    assert coord.worker_died(3) == [1]
    d = coord.decision
    assert d.verdict == VOID and "game 1 lost 3 times" in d.reason and "best model stays" in d.reason
    assert (d.counted, d.lost, d.replayed) == (1, 3, 2)
    assert coord.claim(0) is None


def test_a_replay_must_outlast_the_attempt_it_stands_in_for_up_to_max_short_times():
    coord = GateCoordinator(GateRule(max_games=4), deadline_min=1e9, max_short=2)
    assert (coord.claim(0), coord.claim(0)) == (0, 1)
    coord.progress(0, {0: 30, 1: 12})
    coord.progress(1, {0: 99})                                  # not worker 1's game: ignored
    assert coord.worker_died(0) == [0, 1]
    assert coord.claim(1) == 0
    assert coord.report(0, 1.0, worker=1, moves=30) is False   # game 0 had already lasted 30 moves
    assert coord.short == 1 and coord.sequence == []
    assert coord.claim(1) == 0                                  # so it is played again
    assert coord.report(0, 0.0, worker=1, moves=31) is True and coord.sequence == [0.0]
    assert coord.claim(1) == 1
    assert coord.report(1, 1.0, worker=1, moves=5) is False    # one short replay of game 1
    assert coord.claim(1) == 1
    assert coord.report(1, 1.0, worker=1, moves=12) is False   # two: max_short
    assert coord.waived == 1 and coord.claim(1) == 1
    assert coord.report(1, 1.0, worker=1, moves=3) is True     # the next counts whatever its length
    assert coord.sequence == [0.0, 1.0] and coord.short == 3 and coord.decision is None


# ---------------------------------------------------------------------------------------------
# Matches with worker threads (random evaluators: no network needed)


SETTINGS = PlaySettings(visits=4, temperature_moves=4, max_moves=30, record_policy=False)
OPENING = SearchParams(temperature=1.0)          # the first 4 moves sampled, no noise


def make_agents(w):
    return Agent("candidate", RandomEvaluator(10 + w), OPENING), Agent("best", RandomEvaluator(20 + w), OPENING)


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
    written = [i for i, _, _, counted in seen if counted]
    assert len(written) == len(set(written)) and set(range(d.counted)) <= set(written)
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
    stuck = [g.index for g in coord.games if g.losses]       # the stuck worker's first games
    assert stuck and d.lost == len(stuck) and d.late == 0
    # the order waited for them: each one below the decision was played again by worker 0
    assert [i for i in stuck if i < d.counted] and all(coord.games[i].worker == 0 for i in stuck if i < d.counted)
    assert d.replayed >= len([i for i in stuck if i < d.counted])
    check_unbiased(coord)


def test_a_dead_worker_neither_stalls_nor_biases_the_decision():
    def hook(w, pool):
        if w == 1 and pool.stats.steps >= 2:
            raise RuntimeError("injected crash")

    written = []

    def on_game(index, fg, counted):
        if counted:
            written.append(index)

    # A clock that never moves: no deadline can fire, so only the worker's death frees its games.
    match = GateMatch(make_agents, GateRule(max_games=12), 5, RULES, SETTINGS, workers=2, slots=4, batch=16,
                      deadline_min=600.0, seed=3, step_hook=hook, clock=lambda: 0.0, on_game=on_game)
    d = match.run()
    assert d is not None and d.verdict in (PROMOTE, REJECT)
    assert "injected crash" in match.errors[1]
    coord = match.coordinator
    dead = [g.index for g in coord.games if g.losses]
    assert dead and d.lost == len(dead)
    assert all(coord.games[i].worker == 0 and coord.games[i].state == "returned" for i in dead if i < d.counted)
    assert len(written) == len(set(written)) and set(range(d.counted)) <= set(written)   # one result per number
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


@pytest.mark.slow          # a training run with gating
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


@pytest.mark.slow          # a training run with gating
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
