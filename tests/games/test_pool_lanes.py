"""train.games.pool with two lanes (train.games.batcher): a lane's forward pass runs on a worker thread while
the pool serves the other lane; and with search threads; hand-made evaluators, no network."""
import threading

import pytest

from engine.core import BLACK, Rules
from engine.nets.evaluator import RandomEvaluator
from train.games.pool import Agent, GamePool, GameSpec, PlaySettings
from train.games.records import replay

RULES = Rules.preset("chinese", 0.5)


class Recording:
    """Wraps an evaluator; records the thread and batch size of every call."""

    def __init__(self, inner, fail_after: int | None = None):
        self.inner = inner
        self.feature_set, self.planes = inner.feature_set, inner.planes
        self.calls: list[tuple[str, int]] = []
        self.fail_after = fail_after

    def evaluate(self, planes, keys=None):
        self.calls.append((threading.current_thread().name, len(planes)))
        if self.fail_after is not None and len(self.calls) > self.fail_after:
            raise RuntimeError("the network broke")
        return self.inner.evaluate(planes, keys)


def play(lanes: int, games: int = 6, slots: int = 4, visits: int = 12, search_threads: int = 1, batch: int = 16):
    ev = Recording(RandomEvaluator(3))
    agent = Agent("net", ev)
    counter = iter(range(games))

    def next_game(slot):
        i = next(counter, None)
        return None if i is None else GameSpec(5, RULES, agent, agent, PlaySettings(visits=visits), seed=i)

    pool = GamePool(slots, next_game, batch=batch, max_leaves_per_search=4, lanes=lanes,
                    search_threads=search_threads)
    finished = []
    for _ in range(20_000):                          # a budget in steps
        finished += pool.step()
        if pool.idle:
            break
    return pool, ev, finished


def test_two_lanes_play_every_game_off_the_main_thread_and_the_same_way_twice():
    pool, ev, finished = play(lanes=2)
    assert len(finished) == 6 and pool.idle and pool._batcher.in_flight == 0
    main = threading.current_thread().name
    assert ev.calls and all(name != main for name, _ in ev.calls)
    assert max(n for _, n in ev.calls) <= 16
    assert pool.stats.leaves == sum(n for _, n in ev.calls)
    for fg in finished:
        rec = fg.record()
        assert replay(rec).result_string() == rec.result_string()
    # fixed seeds: the same games, whatever the threads' timing
    _, _, again = play(lanes=2)
    moves = sorted((fg.spec.seed, [m.point for m in fg.moves]) for fg in finished)
    assert moves == sorted((fg.spec.seed, [m.point for m in fg.moves]) for fg in again)
    # one lane: every call in the calling thread
    _, one, finished1 = play(lanes=1)
    assert len(finished1) == 6 and all(name == main for name, _ in one.calls)


def test_a_step_leaves_its_lane_in_flight_and_the_other_lane_is_served_next():
    ev = Recording(RandomEvaluator(1))
    agent = Agent("net", ev)
    pool = GamePool(4, lambda slot: GameSpec(5, RULES, agent, agent, PlaySettings(visits=64), seed=slot.index),
                    batch=8, max_leaves_per_search=4, lanes=2)
    pool.step()                                      # lane 0: slots 0 and 2 start and search
    assert pool._batcher.in_flight == 1
    assert [s.game is not None and s.tree.pending_total > 0 for s in pool.slots] == [True, False, True, False]
    pool.step()                                      # lane 1: slots 1 and 3; lane 0 still in flight
    assert pool._batcher.in_flight == 2
    assert all(s.tree.pending_total > 0 for s in pool.slots)
    pool.step()                                      # lane 0 backed up and collected again
    assert pool._batcher.in_flight == 2
    pool._batcher.drain()
    assert all(s.tree.pending_total == 0 and s.tree.check() == 0 for s in pool.slots)


def test_abandon_and_a_new_model_wait_for_the_batches_in_flight():
    old, new = Agent("old", Recording(RandomEvaluator(1))), Agent("new", Recording(RandomEvaluator(2)))
    current = [old]
    pool = GamePool(4, lambda slot: GameSpec(5, RULES, current[0], current[0], PlaySettings(visits=8),
                                             seed=slot.index), batch=16, lanes=2)
    while min(len(s.moves) for s in pool.slots) < 3:
        assert not pool.step()
    assert pool._batcher.in_flight > 0
    current[0] = new
    assert pool.apply_new_model(new, "switch") == 4
    assert pool._batcher.in_flight == 0
    assert all(t.check() == 0 for s in pool.slots for t in s.trees.values())
    pool.step()
    assert pool._batcher.in_flight == 1
    assert pool.abandon(1) is not None and pool._batcher.in_flight == 0
    pool.slots[2].set_agent(BLACK, old)              # a slot's own switch drains too
    assert pool._batcher.in_flight == 0
    pool.accepting = False
    finished = []
    for _ in range(20_000):
        finished += pool.step()
        if pool.idle:
            break
    assert pool.idle and len(finished) == 3
    assert all("new" in fg.record().model_ids for fg in finished)


def test_an_evaluator_error_reaches_the_caller_and_bad_lanes_are_refused():
    ev = Recording(RandomEvaluator(1), fail_after=3)
    agent = Agent("net", ev)
    pool = GamePool(2, lambda slot: GameSpec(5, RULES, agent, agent, PlaySettings(visits=64), seed=0),
                    batch=8, lanes=2)
    with pytest.raises(RuntimeError, match="the network broke"):
        for _ in range(100):
            pool.step()
    with pytest.raises(ValueError, match="lanes"):
        GamePool(2, lambda slot: None, lanes=3)


def test_search_threads_split_the_trees_and_play_the_same_games(monkeypatch):
    import train.games.batcher

    threads_seen = set()
    collect = train.games.batcher.collect_many

    def recording_collect(*args, **kwargs):
        threads_seen.add(threading.current_thread().name)
        return collect(*args, **kwargs)

    monkeypatch.setattr(train.games.batcher, "collect_many", recording_collect)

    def games(threads: int, lanes: int):
        pool, ev, finished = play(lanes, games=30, slots=24, visits=10, search_threads=threads, batch=64)
        assert len(finished) == 30 and pool.idle
        return sorted((fg.spec.seed, [m.point for m in fg.moves]) for fg in finished), ev.calls

    one, calls = games(1, 1)
    assert max(n for _, n in calls) > 40            # batches big enough for three parts of 8 trees
    assert threads_seen == {threading.current_thread().name}
    three, calls3 = games(3, 1)
    assert three == one and calls3 == calls
    assert any(name.startswith("pool-search") for name in threads_seen)
    assert games(3, 2)[0] == games(1, 2)[0]
    with pytest.raises(ValueError, match="search_threads"):
        GamePool(2, lambda slot: None, search_threads=0)
