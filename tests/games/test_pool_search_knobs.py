"""The game pool plays with its players' own search parameters (Dirichlet noise, move
temperature, forced playouts: ``Agent.params``) and only turns them off where the game says so:
noise and forced playouts in cheap searches and under the Gumbel root, the temperature after
``temperature_moves``.  Seen from the searches themselves (hand-made evaluators, no network)."""
import dataclasses

from engine.core import Rules, Search, SearchParams
from engine.nets.evaluator import RandomEvaluator
from train.games.pool import Agent, GamePool, GameSpec, PlaySettings

RULES = Rules.preset("chinese", 0.5)
OWN = SearchParams(noise_epsilon=0.3, noise_alpha=5.0, forced_playouts_k=1.5, temperature=0.7, c_puct=1.4)


def watched_games(monkeypatch, settings, params=OWN, games=2):
    """Plays ``games`` games of one agent searching with ``params`` under ``settings``; returns
    the agent and one entry per move the pool searched: whether the search was full and ran
    under the Gumbel root, the moves before it, the search's parameters, whether noise was
    requested (with the parameters then in force) and the temperature the move was chosen at
    (None: not chosen by temperature)."""
    moves: list[dict] = []
    play, request, choose = GamePool._play_move, Search.request_noise, Search.choose

    def spy_play(pool, slot):
        moves.append({"full": slot.full, "gumbel": slot.gumbel is not None, "before": len(slot.game.moves),
                      "params": slot.tree.params, "noise": noised.pop(id(slot.tree), None), "temperature": None})
        return play(pool, slot)

    noised: dict[int, SearchParams] = {}

    def spy_request(tree):
        noised[id(tree)] = tree.params
        return request(tree)

    def spy_choose(tree):
        moves[-1]["temperature"] = tree.params.temperature
        return choose(tree)

    monkeypatch.setattr(GamePool, "_play_move", spy_play)
    monkeypatch.setattr(Search, "request_noise", spy_request)
    monkeypatch.setattr(Search, "choose", spy_choose)
    agent = Agent("m", RandomEvaluator(3), params)
    specs = iter([GameSpec(5, RULES, agent, agent, settings, seed=s, allow_resign=False) for s in range(games)])
    pool = GamePool(games, lambda slot: next(specs, None), batch=16)
    assert len(list(pool.run())) == games
    return agent, moves


def test_full_searches_take_the_players_noise_and_forced_playouts_cheap_ones_do_not(monkeypatch):
    settings = PlaySettings(visits=12, cheap_visits=4, full_search_prob=0.5, temperature_moves=0, max_moves=20)
    agent, moves = watched_games(monkeypatch, settings)
    full = [m for m in moves if m["full"]]
    cheap = [m for m in moves if not m["full"]]
    assert full and cheap
    for m in full:
        assert m["params"] == OWN                                        # the player's own, all of them
        assert m["noise"] == OWN                                         # noise requested at its weight
    for m in cheap:
        assert m["params"] == dataclasses.replace(OWN, noise_epsilon=0.0, forced_playouts_k=0.0)
        assert m["noise"] is None
    assert agent.params == OWN                                           # the player's stay as they were


def test_the_opening_moves_take_the_players_temperature_later_ones_the_most_visited(monkeypatch):
    _, moves = watched_games(monkeypatch, PlaySettings(visits=8, temperature_moves=4, max_moves=20))
    assert [m["temperature"] for m in moves if m["before"] < 4] == [0.7] * 8        # two games, 4 moves each
    later = [m["temperature"] for m in moves if m["before"] >= 4]
    assert later and set(later) == {0.0}


def test_a_player_without_noise_gets_none(monkeypatch):
    quiet = dataclasses.replace(OWN, noise_epsilon=0.0)
    _, moves = watched_games(monkeypatch, PlaySettings(visits=8, max_moves=12), params=quiet)
    assert moves and all(m["noise"] is None and m["params"] == quiet for m in moves)


def test_the_gumbel_root_turns_noise_forced_playouts_and_temperature_off(monkeypatch):
    settings = PlaySettings(visits=8, root="gumbel", gumbel_considered=4, temperature_moves=30, max_moves=12)
    _, moves = watched_games(monkeypatch, settings)
    assert moves and all(m["gumbel"] for m in moves)
    for m in moves:
        assert m["params"] == dataclasses.replace(OWN, noise_epsilon=0.0, forced_playouts_k=0.0)
        assert m["noise"] is None and m["temperature"] is None          # the Gumbel root chose the move

