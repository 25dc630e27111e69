"""The seed experiment's paired analysis (tools.experiments.paired) on hand-made tables with known answers."""
import math

import pytest

from tools.experiments.paired import contrasts, design_means, holm, t_quantile, t_sf, t_test


def test_student_t_matches_the_tables():
    assert t_quantile(0.975, 2) == pytest.approx(4.3027, abs=1e-4)
    assert t_quantile(0.975, 7) == pytest.approx(2.3646, abs=1e-4)
    assert t_quantile(0.975, 10_000) == pytest.approx(1.9602, abs=1e-3)
    assert 2 * t_sf(2.0, 7) == pytest.approx(0.08562, abs=1e-5)
    assert t_sf(0.0, 3) == 0.5 and t_sf(-1.0, 4) == pytest.approx(1 - t_sf(1.0, 4))


def test_t_interval_of_known_values():
    mean, (lo, hi), p = t_test([100, 120, 80, 100])
    se = math.sqrt(800 / 3) / 2
    assert mean == 100
    assert lo == pytest.approx(100 - 3.1824 * se, abs=0.01) and hi == pytest.approx(100 + 3.1824 * se, abs=0.01)
    assert p == pytest.approx(2 * t_sf(100 / se, 3)) and p < 0.01


def test_holm_step_down():
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, 0.001]) == pytest.approx([0.5, 0.002])
    assert holm([0.9, 0.8]) == pytest.approx([1.0, 1.0])


def test_pairing_on_the_seed_removes_the_seed_effect():
    """Seeds differ by hundreds of Elo, the same for both designs; the design adds +50 every
    time, give or take 10.  Paired, the contrast is 50 with a narrow interval; unpaired, the
    two designs' intervals overlap widely."""
    seed_effect = {1: -400, 2: 120, 3: 290, 4: 10}
    noise = {1: 10, 2: -10, 3: 0, 4: 0}
    elo = {}
    for s, e in seed_effect.items():
        elo[("az", s)] = e
        elo[("agz-async-finish", s)] = e + 50 + noise[s]
    (c,) = contrasts(elo, {"gating": {"agz-async-finish": 1, "az": -1}})
    assert c.estimate == pytest.approx(50) and c.seeds == 4
    assert 30 < c.ci95[0] < 50 < c.ci95[1] < 70 and c.p_holm < 0.01
    means = design_means(elo)
    assert means["az"]["elo_ci95"][1] > means["agz-async-finish"]["elo_ci95"][0]   # unpaired: overlap


def test_contrasts_skip_seeds_missing_a_design_and_adjust_over_the_set():
    elo = {("a", 1): 0, ("b", 1): 100, ("a", 2): 10, ("b", 2): 90, ("a", 3): 0, ("b", 3): 105,
           ("c", 1): 0, ("c", 2): 20, ("c", 3): -20, ("d", 1): 5}
    got = contrasts(elo, {"b-a": {"b": 1, "a": -1}, "c-a": {"c": 1, "a": -1}, "d-a": {"d": 1, "a": -1}})
    assert [c.name for c in got] == ["b-a", "c-a"]            # d has one seed: not estimated
    assert got[0].per_seed == {1: 100, 2: 80, 3: 105}
    assert got[0].p_holm == pytest.approx(min(1, 2 * got[0].p))
    assert got[1].p_holm == pytest.approx(max(got[0].p_holm, got[1].p))
