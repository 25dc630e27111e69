"""tools.experiments.anchors: the one-parameter fit against fixed anchors, the adaptive choice of anchor,
ratings that ignore every other player, and a rating resumed without replaying its batches."""
from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from engine.nets import weights
from engine.nets.network import NetConfig
from tools import REPO_ROOT
from tools.experiments import anchors as A
from train.match.stats import score_from_elo

COMMITTED = REPO_ROOT / "experiments" / "anchors" / "7x7-komi9.json"
LADDER = A.AnchorSet(7, 9.0, "chinese", (A.Anchor("weak", "w", -400.0), A.Anchor("mid", "m", 0.0),
                                          A.Anchor("strong", "s", 300.0)), referee=None)


class FakeGames:
    """A game player for rate_net: the net is ``true_elo`` strong; each game's result is drawn
    from the logistic model with the batch's seed.  Records (anchor, seed) of every batch and can
    raise KeyboardInterrupt at a given call, as a kill would."""

    def __init__(self, true_elo: float, anchors: A.AnchorSet, interrupt_at: int | None = None) -> None:
        self.true_elo, self.elos, self.interrupt_at = true_elo, anchors.elos, interrupt_at
        self.calls: list[tuple[str, int]] = []

    def __call__(self, a, b, games, seed, folder):
        if self.interrupt_at is not None and len(self.calls) == self.interrupt_at:
            raise KeyboardInterrupt
        self.calls.append((b[0], seed))
        rng = random.Random(seed)
        p = score_from_elo(self.true_elo - self.elos[b[0]])
        out = []
        for k in range(games):
            won = 1.0 if rng.random() < p else 0.0
            out.append((a[0], b[0], won) if k % 2 == 0 else (b[0], a[0], 1.0 - won))
        return out


@pytest.fixture
def net(tmp_path: Path) -> Path:
    path = tmp_path / "net.pt"
    weights.save(path, weights.new_model(NetConfig(blocks=1, filters=8), seed=3), {"step": 0, "board_sizes": [5]})
    return path


def test_fit_known_answers():
    # 6 wins in 10 against one anchor: its Elo plus elo_from_score(0.6) = 400 log10(1.5).
    fit = A.fit_elo([(100.0, 1.0)] * 6 + [(100.0, 0.0)] * 4)
    assert fit.elo == pytest.approx(100.0 + 400 * math.log10(1.5), abs=1e-6)
    assert fit.games == 10 and fit.points == 6.0 and fit.unbounded is None
    # Symmetric games around 0: 3 of 4 against -200, 1 of 4 against +200, two draws against 0.
    sym = [(-200.0, 1.0)] * 3 + [(-200.0, 0.0)] + [(200.0, 1.0)] + [(200.0, 0.0)] * 3 + [(0.0, 0.5)] * 2
    fit = A.fit_elo(sym)
    assert fit.elo == pytest.approx(0.0, abs=1e-6)
    assert fit.lo == pytest.approx(-fit.hi, abs=1e-6)
    # The interval's ends are where twice the log-likelihood drops by 3.84.
    def loglik(x):
        return sum(s * math.log(score_from_elo(x - e)) + (1 - s) * math.log(1 - score_from_elo(x - e)) for e, s in sym)
    for end in (fit.lo, fit.hi):
        assert 2 * (loglik(fit.elo) - loglik(end)) == pytest.approx(A.CHI2_95, abs=1e-4)


def test_fit_of_a_clean_sweep_is_bounded_on_one_side():
    fit = A.fit_elo([(0.0, 1.0)] * 10)
    assert fit.unbounded == "above" and fit.hi == math.inf
    # 10 wins in 10: p^10 >= exp(-1.92) at the interval's lower end.
    p = math.exp(-A.CHI2_95 / 20)
    assert fit.lo == pytest.approx(400 * math.log10(p / (1 - p)), abs=1e-3) and fit.elo == fit.lo
    low = A.fit_elo([(0.0, 0.0)] * 10)
    assert low.unbounded == "below" and low.hi == pytest.approx(-fit.lo, abs=1e-3)
    with pytest.raises(ValueError):
        A.fit_elo([])


def test_adaptive_choice_is_the_anchor_nearest_fifty_percent():
    anchors = LADDER.anchors
    assert A.nearest_anchor(120.0, anchors).name == "mid"
    assert A.nearest_anchor(160.0, anchors).name == "strong"
    assert A.nearest_anchor(-250.0, anchors).name == "weak"
    assert A.nearest_anchor(5000.0, anchors).name == "strong"
    assert A.choice_estimate(None, None, anchors) == 0.0           # the middle of the ladder
    assert A.choice_estimate(None, -380.0, anchors) == -380.0       # the prior


def test_rate_net_plays_the_nearest_anchor_batch_by_batch(tmp_path, net):
    fake = FakeGames(-380.0, LADDER)
    doc = A.rate_net(net, LADDER, tmp_path / "r.json", visits=2, prior=-380.0, seed=5, max_games=40,
                     target_halfwidth=1.0, play_games=fake)
    assert fake.calls[0][0] == "weak"
    est = None
    for i, batch in enumerate(doc["batches"]):
        if est is not None:
            assert batch["anchor"] == A.nearest_anchor(est, LADDER.anchors).name
        pairs = A.net_games([g for b in doc["batches"][:i + 1] for g in b["games"]], "net", LADDER.elos)
        est = A.fit_elo(pairs).elo
    assert doc["games"] == 40 and doc["done"] and len(doc["results"]) == 40


def test_rate_net_stops_when_the_interval_is_narrow(tmp_path, net):
    doc = A.rate_net(net, LADDER, tmp_path / "r.json", visits=2, seed=1, max_games=400, target_halfwidth=150.0,
                     play_games=FakeGames(50.0, LADDER))
    lo, hi = doc["elo_ci95"]
    assert (hi - lo) / 2 < 150.0 and doc["games"] < 400


def test_rate_net_writes_into_a_folder_that_does_not_exist_yet(tmp_path, net):
    """A unit's ``ratings/`` folder is made by the rating itself (the first registered unit died
    here after training, on the first atomic write)."""
    out = tmp_path / "runs" / "az" / "seed-1" / "ratings" / "f0.json"
    doc = A.rate_net(net, LADDER, out, visits=2, seed=1, max_games=10, play_games=FakeGames(0.0, LADDER))
    assert out.is_file() and json.loads(out.read_text())["games"] == doc["games"] == 10


def test_anchor_elos_are_the_committed_ones_whatever_else_played(tmp_path, net):
    doc = json.loads(COMMITTED.read_text())
    anchors = A.load_anchors(COMMITTED)
    assert anchors.elos == {a["name"]: a["elo"] for a in doc["anchors"]}
    assert anchors.elos[A.ZERO] == 0.0 and (anchors.board_size, anchors.komi) == (7, 9.0)
    rated = A.rate_net(net, COMMITTED, tmp_path / "r.json", visits=2, seed=2, max_games=30,
                       play_games=FakeGames(-100.0, anchors))
    assert rated["anchors"] == anchors.elos
    own = [tuple(g) for b in rated["batches"] for g in b["games"]]
    # The same games among others: other nets against the anchors and against this one.
    names = list(anchors.elos)
    others = [("other-net", names[0], 1.0), (names[-1], "other-net", 0.5), ("net", "other-net", 0.0),
              ("third", "net", 1.0), ("other-net", "third", 1.0)]
    mixed = others[:2] + own[:7] + others[2:] + own[7:]
    alone = A.fit_elo(A.net_games(own, "net", anchors.elos))
    together = A.fit_elo(A.net_games(mixed, "net", anchors.elos))
    assert together == alone
    assert rated["elo"] == pytest.approx(alone.elo, abs=0.05)


def test_resume_continues_without_replaying_finished_batches(tmp_path, net):
    out = tmp_path / "r.json"
    whole = FakeGames(0.0, LADDER)
    full = A.rate_net(net, LADDER, tmp_path / "whole.json", visits=2, seed=9, max_games=50, target_halfwidth=1.0,
                      play_games=whole)
    first = FakeGames(0.0, LADDER, interrupt_at=2)
    with pytest.raises(KeyboardInterrupt):
        A.rate_net(net, LADDER, out, visits=2, seed=9, max_games=50, target_halfwidth=1.0, play_games=first)
    saved = json.loads(out.read_text())
    assert len(saved["batches"]) == 2 and not saved["done"]
    second = FakeGames(0.0, LADDER)
    doc = A.rate_net(net, LADDER, out, visits=2, seed=9, max_games=50, target_halfwidth=1.0, play_games=second)
    assert first.calls + second.calls == whole.calls          # the same batches, the same seeds, none twice
    assert doc["batches"] == full["batches"] and doc["elo"] == full["elo"]
    again = FakeGames(0.0, LADDER)
    A.rate_net(net, LADDER, out, visits=2, seed=9, max_games=50, target_halfwidth=1.0, play_games=again)
    assert again.calls == []
    with pytest.raises(ValueError, match="another rating"):
        A.rate_net(net, LADDER, out, visits=4, seed=9, play_games=again)


def test_calibration_pairs_by_distance():
    names = ["mc-1", "mc-16", "gnugo-L1", "gnugo-L10", "mc-256x16"]
    pairs = {(a, b): n for a, b, n in A.calibration_pairs(names, {1: 12, 2: 6}, 3)}
    assert len(pairs) == 10
    assert pairs[("mc-1", "mc-16")] == 12 and pairs[("mc-1", "gnugo-L1")] == 6 and pairs[("mc-1", "gnugo-L10")] == 3
    assert pairs[("gnugo-L1", "gnugo-L10")] == 2         # GNU Go repeats its games


def test_calibrate_fits_every_game_with_the_zero_anchor_fixed(tmp_path):
    true = {"a": -300.0, "b": 0.0, "c": 250.0}

    def play(x, y, games, seed, folder):
        rng = random.Random(seed)
        p = score_from_elo(true[x[0]] - true[y[0]])
        return [(x[0], y[0], float(rng.random() < p)) if k % 2 == 0 else (y[0], x[0], float(rng.random() >= p))
                for k in range(games)]

    doc = A.calibrate([(n, f"spec-{n}") for n in true], 7, 9.0, tmp_path, games={1: 40, 2: 20}, zero="b",
                      play_games=play, log=lambda s: None)
    assert [p["games"] for p in doc["pairs"]] == [40, 20, 40] and len(doc["games"]) == 100
    elo = {a["name"]: a["elo"] for a in doc["anchors"]}
    assert elo["b"] == 0.0 and elo["a"] < 0.0 < elo["c"]
    assert all(a["elo_ci95"][0] <= a["elo"] <= a["elo_ci95"][1] for a in doc["anchors"])


def test_calibrate_and_rate_with_real_games(tmp_path, net):
    """Tiny real games (5x5, uniform Monte Carlo anchors at 1-4 visits, no referee; pairs in two
    processes): the fit anchors its zero, and the file it writes rates a net."""
    ladder = [A.mc_anchor(1), A.mc_anchor(2), A.mc_anchor(4)]
    doc = A.calibrate(ladder, 5, 7.0, tmp_path / "cal", games={1: 2}, other_games=2, zero="mc-2", referee=None,
                      parallel=2, jobs=2, log=lambda s: None)
    assert {a["name"] for a in doc["anchors"]} == {"mc-1", "mc-2", "mc-4"} and len(doc["games"]) == 6
    assert next(a for a in doc["anchors"] if a["name"] == "mc-2")["elo"] == 0.0
    path = tmp_path / "anchors.json"
    path.write_text(json.dumps(doc))
    rated = A.rate_net(net, path, tmp_path / "net.json", visits=2, batch=2, max_games=4, parallel=2)
    assert rated["games"] == 4 and rated["done"] and (tmp_path / "net-games").is_dir()


def test_help_names_both_commands(capsys):
    with pytest.raises(SystemExit):
        A.main(["--help"])
    text = capsys.readouterr().out
    assert "calibrate" in text and "rate" in text
