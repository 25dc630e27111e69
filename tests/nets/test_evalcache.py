"""engine.nets.evalcache: the evaluator's LRU cache of outputs kept in arrays."""
import numpy as np
import pytest

from engine.nets.evalcache import EvalCache


def outputs(keys: list[int], size: int, aux: bool = True):
    """Outputs that name their key: every policy/ownership entry and the value/score = key."""
    k = np.asarray(keys, np.float32)
    return (np.repeat(k[:, None], size * size + 1, 1), k.copy(),
            np.repeat(k[:, None], size * size, 1) if aux else None, k.copy() if aux else None)


def served(cache: EvalCache, keys: list[int], size: int):
    where, rows = cache.lookup(keys, size)
    return where, cache.gather(size, rows) if where.hits else None


def test_hits_misses_repeats_and_gathered_outputs():
    cache = EvalCache(10)
    where, got = served(cache, [5, 6, 5, 7], 9)
    assert (where.hits, where.misses, where.repeats, where.repeat_of) == ([], [0, 1, 3], [2], [0])
    assert got is None
    cache.insert([5, 6, 7], 9, *outputs([5, 6, 7], 9))
    where, got = served(cache, [7, 8, 5], 9)
    assert (where.hits, where.misses) == ([0, 2], [1])
    policy, value, ownership, score, uncertainty, policy_opt = got
    assert uncertainty is None and policy_opt is None   # none inserted: none kept
    assert policy.shape == (2, 82) and ownership.shape == (2, 81)
    assert value.tolist() == [7, 5] and score.tolist() == [7, 5]
    assert (policy[0] == 7).all() and (ownership[1] == 5).all()
    assert len(cache) == 3
    # another board size is another key space
    assert served(cache, [5], 5)[0].misses == [0]


def test_least_recently_used_evicted_first_across_sizes():
    cache = EvalCache(3)
    cache.insert([1, 2], 9, *outputs([1, 2], 9))
    cache.insert([3], 5, *outputs([3], 5))
    served(cache, [1], 9)                       # 1 is now the most recent: 2, 3, 1
    cache.insert([4, 5], 9, *outputs([4, 5], 9))    # evicts 2 (size 9), then 3 (size 5)
    assert len(cache) == 3
    assert served(cache, [2, 1, 4, 5], 9)[0].misses == [0]
    assert served(cache, [3], 5)[0].misses == [0]
    # the freed rows are reused: the outputs still name their keys
    _, got = served(cache, [4, 5, 1], 9)
    assert got[1].tolist() == [4, 5, 1]


def test_a_batch_larger_than_the_cache_keeps_its_last_keys():
    cache = EvalCache(2)
    cache.insert([1, 2, 3, 4], 9, *outputs([1, 2, 3, 4], 9))
    where, got = served(cache, [1, 2, 3, 4], 9)
    assert where.hits == [2, 3] and got[1].tolist() == [3, 4]


def test_outputs_without_ownership_and_a_model_change():
    cache = EvalCache(4)
    cache.insert([1], 9, *outputs([1], 9, aux=False))
    _, got = served(cache, [1], 9)
    assert got[2] is None and got[3] is None and got[1].tolist() == [1]
    cache.insert([2], 9, *outputs([2], 9, aux=True))    # outputs of another kind: the size restarts
    where, got = served(cache, [1, 2], 9)
    assert where.misses == [0] and got[2].shape == (1, 81)
    cache.clear()
    assert len(cache) == 0 and served(cache, [2], 9)[0].misses == [0]


def test_capacity_must_be_positive():
    with pytest.raises(ValueError, match="capacity"):
        EvalCache(0)


def test_short_term_errors_are_kept_beside_the_outputs():
    cache = EvalCache(4)
    errors = np.array([[0.1, 2.0], [0.3, 4.0]], np.float32)
    cache.insert([1, 2], 9, *outputs([1, 2], 9), errors)
    _, got = served(cache, [2, 1], 9)
    np.testing.assert_array_equal(got[4], errors[[1, 0]])
    cache.insert([3], 9, *outputs([3], 9))              # a model without errors: the size restarts
    where, got = served(cache, [1, 3], 9)
    assert where.misses == [0] and got[4] is None


def test_optimistic_policy_is_kept_beside_the_outputs():
    cache = EvalCache(4)
    opt = np.arange(2 * 82, dtype=np.float32).reshape(2, 82)
    cache.insert([1, 2], 9, *outputs([1, 2], 9), None, opt)
    _, got = served(cache, [2, 1], 9)
    assert got[4] is None
    np.testing.assert_array_equal(got[5], opt[[1, 0]])
    cache.insert([3], 9, *outputs([3], 9))              # a model without it: the size restarts
    where, got = served(cache, [1, 3], 9)
    assert where.misses == [0] and got[5] is None
