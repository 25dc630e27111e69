"""The in-process game runner: many games advanced together through batched searches.

THE game runner of the training system: self-play uses it with one agent for both colours,
gating and in-process matches with a different agent per colour.  A :class:`GamePool` holds
``slots`` games in flight.  Each :meth:`GamePool.step`:

1. starts a game in every idle slot (``next_game(slot) -> GameSpec | None``);
2. plays a move in every slot whose search has reached its visits (tree reuse: every tree of
   the game advances to the new root, keeping the matching subtree), ending games on two passes,
   resignation or the move cap;
3. groups the slots still searching by evaluator (and board size) and, per group, makes ONE
   ``collect_many`` call (one C call over all those trees), ONE forward pass and ONE
   ``backup_many`` call.  So the network sees ``batch`` leaves per call whatever the number of
   games, and Python work per step is per game, never per tree node.

Per move the runner applies the :class:`PlaySettings`: Dirichlet noise at the root of full
searches, temperature for the first moves, resignation below a threshold (unless the game is a
no-resign game), a move cap, and optional playout cap randomisation (KataGo): most moves get a
cheap search that is played but not recorded as a policy target.

Games in flight are inspectable and controllable per slot: :attr:`GamePool.slots` exposes each
game, its moves so far (with the model id that chose each move), its agents and trees; a slot can
be paused/resumed, abandoned, or switched to another agent mid-game (:meth:`Slot.set_agent`).
:meth:`GamePool.apply_new_model` implements the three answers to "a new model arrived" of
``--on-new-model``: discard, finish, switch.
"""
from __future__ import annotations

import dataclasses
import math
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import numpy as np

from engine.core import BLACK, WHITE, Game, Rules, Search, SearchParams, backup_many, collect_many, feature_planes, other
from engine.rootsearch import GumbelRoot, GumbelSettings, pruned_distribution
from train.records import GameRecord, MoveInfo, build_record

NEW_MODEL_POLICIES = ("discard", "finish", "switch")


@dataclass
class Agent:
    """A network that plays: its id (recorded with every move), evaluator and search parameters.

    Agents are compared by identity; two agents sharing an evaluator are batched together."""

    model_id: str
    evaluator: Any                      # engine.evaluator.Evaluator
    params: SearchParams = field(default_factory=SearchParams)

    @property
    def feature_set(self) -> str:
        return getattr(self.evaluator, "feature_set", "rich")


@dataclass
class PlaySettings:
    """How moves are searched and chosen in one game."""

    visits: int = 100                   # root visits of a full search (reused subtree included)
    cheap_visits: int = 0               # playout cap randomisation: visits of a cheap search (0: off)
    full_search_prob: float = 0.25      # with cheap_visits > 0: share of moves given a full search
    temperature_moves: int = 0          # the first this many moves (plies) sample visits^(1/T)
    temperature: float = 1.0            # T of those moves; later moves take the most visited
    noise_epsilon: float = 0.25         # Dirichlet noise weight at the root of full searches (0: off)
    noise_alpha: float = 10.83          # total Dirichlet concentration (alpha per move = this / legal)
    resign_threshold: float | None = None   # resign when the root value falls below (None: never)
    max_moves: int | None = None        # move cap, scored as if passed out (None: 2 * N * N)
    record_policy: bool = True          # keep visit distributions of full searches
    root: str = "puct"                  # puct | gumbel (engine.rootsearch: sequential halving, no noise,
                                        # no temperature; visits = new simulations per move)
    gumbel_considered: int = 16         # gumbel: moves sampled at the root (m)
    forced_playouts_k: float = 0.0      # puct: KataGo's forced playouts + target pruning in full searches

    def move_cap(self, size: int) -> int:
        return self.max_moves if self.max_moves is not None else 2 * size * size


@dataclass
class GameSpec:
    """A game for a slot: board, rules, one agent per colour, settings and a seed."""

    size: int
    rules: Rules
    black: Agent
    white: Agent
    settings: PlaySettings = field(default_factory=PlaySettings)
    seed: int = 0
    allow_resign: bool = True           # False: a no-resign (calibration) game
    tag: Any = None                     # the caller's data (game name, pairing, ...)


@dataclass
class FinishedGame:
    """A game that ended (or was abandoned: ``reason == "abandoned"``)."""

    slot: int
    spec: GameSpec
    game: Game
    moves: list[MoveInfo]
    reason: str                         # passes | resign | move cap | abandoned
    winner: int                         # BLACK, WHITE, 0 = draw or abandoned
    started: float
    finished: float
    leaves: int = 0                     # positions this game sent to evaluators (all its searches)
    players: dict[int, list[str]] | None = None   # model ids per colour: set-up, then switches

    def record(self) -> GameRecord:
        """The training record (ValueError for an abandoned game).  It names the players of
        both colours from the set-up, even when the game ended before a colour moved."""
        if self.reason == "abandoned":
            raise ValueError("an abandoned game has no record")
        s = self.spec.settings
        players = self.players or {BLACK: [self.spec.black.model_id], WHITE: [self.spec.white.model_id]}
        return build_record(self.game, self.moves, reason=self.reason, winner=self.winner,
                            no_resign=not self.spec.allow_resign,
                            resign_threshold=s.resign_threshold if self.spec.allow_resign else None,
                            seed=self.spec.seed, started=self.started, finished=self.finished,
                            players=players)


@dataclass
class PoolStats:
    """Counters since the pool was made (subtract two snapshots for rates)."""

    steps: int = 0
    forward_passes: int = 0
    leaves: int = 0                     # positions sent to evaluators
    moves: int = 0
    full_moves: int = 0                 # moves with a full search (training positions)
    games: int = 0                      # games finished (not abandoned)
    abandoned: int = 0                  # games dropped unfinished, for any reason
    abandoned_leaves: int = 0           # ... and the leaves their searches had sent to evaluators
    discarded: int = 0                  # games abandoned because a new model arrived (policy discard)
    discarded_leaves: int = 0
    switched_leaves: int = 0            # leaves of searches cut short by a switch to a new model
    search_seconds: float = 0.0         # collect_many + backup_many
    net_seconds: float = 0.0            # evaluator calls
    move_seconds: float = 0.0           # choosing and playing moves, starting games

    def snapshot(self) -> "PoolStats":
        return dataclasses.replace(self)

    def minus(self, other: "PoolStats") -> "PoolStats":
        return PoolStats(**{f.name: getattr(self, f.name) - getattr(other, f.name)
                            for f in dataclasses.fields(self)})


IDLE, PLAYING, PAUSED = "idle", "playing", "paused"


class Slot:
    """One game in flight.  Read freely; change only through the methods."""

    def __init__(self, index: int, max_leaves: int):
        self.index = index
        self.max_leaves = max_leaves
        self.status = IDLE
        self.spec: GameSpec | None = None
        self.game: Game | None = None
        self.agents: dict[int, Agent] = {}
        self.trees: dict[int, Search] = {}
        self.moves: list[MoveInfo] = []
        self.players: dict[int, list[str]] = {}   # model ids each colour was given, in order
        self.started = 0.0
        self.target = 0                  # root visits the current search must reach
        self.full = True                 # the current search is a full one
        self.stalled = False             # the search cannot grow (forces the move)
        self.gumbel: GumbelRoot | None = None   # the Gumbel root search of this move, if any
        self.leaves = 0                  # leaves this game has sent to evaluators
        self.search_leaves = 0           # ... for the move being searched now
        self._rng = np.random.default_rng(index)
        self._spare: dict[tuple[int, str], list[Search]] = defaultdict(list)
        self._seed = 0

    # -- inspection -----------------------------------------------------------------------
    @property
    def to_move(self) -> int:
        assert self.game is not None
        return self.game.to_move

    @property
    def agent(self) -> Agent:
        """The agent to move."""
        return self.agents[self.to_move]

    @property
    def tree(self) -> Search:
        """The tree searching the current move."""
        return self.trees[self.to_move]

    def model_ids(self) -> list[str]:
        """Model ids that chose this game's moves so far, in order of first use."""
        seen: list[str] = []
        for m in self.moves:
            if m.model_id not in seen:
                seen.append(m.model_id)
        return seen

    @property
    def search_done(self) -> bool:
        if self.stalled:
            return True
        if self.gumbel is not None:
            return self.gumbel.update()
        return self.tree.visits >= self.target

    # -- control ----------------------------------------------------------------------------
    def start(self, spec: GameSpec) -> None:
        """Begins ``spec`` in this slot (the previous game, if any, is dropped)."""
        self._release_trees()
        self.spec = spec
        self.game = Game(spec.size, spec.rules)
        self.moves = []
        self.agents = {BLACK: spec.black, WHITE: spec.white}
        self.players = {BLACK: [spec.black.model_id], WHITE: [spec.white.model_id]}
        self.trees = {}
        self._rng = np.random.default_rng([spec.seed, self.index])
        self._seed = spec.seed
        for color in (BLACK, WHITE):
            self._attach_tree(color)
        self.started = time.time()
        self.leaves = 0
        self.status = PLAYING
        self._begin_search()

    def set_agent(self, color: int, agent: Agent) -> None:
        """Switches ``color`` to ``agent`` mid-game: later moves record the new model id.  The
        colour's tree is rebuilt (its priors and values came from the old network)."""
        if self.game is None:
            raise RuntimeError("no game in this slot")
        self.agents[color] = agent
        named = self.players.setdefault(color, [])
        if agent.model_id not in named:
            named.append(agent.model_id)
        old = self.trees.pop(color, None)
        if old is not None and self.trees.get(other(color)) is not old:
            self._spare_tree(old)       # a tree shared with the other colour stays with it
        self._attach_tree(color)
        if self.status != IDLE:
            self._begin_search()

    def pause(self) -> None:
        if self.status == PLAYING:
            self.status = PAUSED

    def resume(self) -> None:
        if self.status == PAUSED:
            self.status = PLAYING

    # -- internals --------------------------------------------------------------------------
    def _attach_tree(self, color: int) -> None:
        """Gives ``color`` a tree: the other colour's when it has the same agent, else a fresh
        (or recycled) tree at the current position."""
        agent = self.agents[color]
        o = other(color)
        if o in self.trees and self.agents[o] is agent:
            self.trees[color] = self.trees[o]
            return
        assert self.game is not None
        key = (self.game.size, agent.feature_set)
        spare = self._spare[key]
        self._seed += 1
        if spare:
            tree = spare.pop()
            tree.set_params(agent.params)
            tree.set_game(self.game)
        else:
            tree = Search(self.game, agent.params, agent.feature_set, max_batch=self.max_leaves,
                          seed=(self._seed * 1_000_003 + self.index) & 0x7FFFFFFFFFFFFFFF)
        self.trees[color] = tree

    def _spare_tree(self, tree: Search | None) -> None:
        if tree is not None and all(t is not tree for t in self.trees.values()):
            self._spare[(tree.size, tree.feature_set)].append(tree)

    def _release_trees(self) -> None:
        trees = list({id(t): t for t in self.trees.values()}.values())
        self.trees = {}
        for t in trees:
            self._spare[(t.size, t.feature_set)].append(t)

    def _begin_search(self) -> None:
        """Sets up the search of the next move: full or cheap, noise, visit target."""
        assert self.spec is not None
        s = self.spec.settings
        self.full = s.cheap_visits <= 0 or self._rng.random() < s.full_search_prob
        self.target = s.visits if self.full else s.cheap_visits
        self.stalled = False
        self.search_leaves = 0
        self.gumbel = None
        gumbel = s.root == "gumbel"
        noise = self.full and s.noise_epsilon > 0 and not gumbel
        forced = s.forced_playouts_k if self.full and not gumbel else 0.0
        params = dataclasses.replace(self.agent.params, noise_epsilon=s.noise_epsilon if noise else 0.0,
                                     noise_alpha=s.noise_alpha, forced_playouts_k=forced)
        self.tree.set_params(params)
        if noise:
            self.tree.request_noise()
        if gumbel:
            self.tree.set_root_targets(None)
            self.gumbel = GumbelRoot(self.tree, self.target, self._rng, GumbelSettings(s.gumbel_considered))


class _Buffer:
    """Planes/keys/counts buffers of one (evaluator, board size) group, grown on demand."""

    def __init__(self, planes: int, size: int):
        self.planes_n, self.size = planes, size
        self.planes = np.zeros((0, planes, size, size), np.float32)
        self.keys = np.zeros(0, np.uint64)
        self.counts = np.zeros(0, np.int32)

    def ensure(self, leaves: int, searches: int) -> None:
        if self.planes.shape[0] < leaves:
            cap = max(leaves, 2 * self.planes.shape[0])
            self.planes = np.zeros((cap, self.planes_n, self.size, self.size), np.float32)
            self.keys = np.zeros(cap, np.uint64)
        if self.counts.shape[0] < searches:
            self.counts = np.zeros(max(searches, 2 * self.counts.shape[0]), np.int32)


class GamePool:
    """Plays up to ``slots`` games at once (see the module docstring).

    Args:
        slots: games in flight.
        next_game: called with an idle :class:`Slot`; returns the next game's spec, or None to
            leave the slot idle (e.g. the game budget is spent).
        batch: leaves per forward pass (per evaluator); each searching game contributes
            ``batch // games`` leaves (at least 1, at most ``max_leaves_per_search``).
        max_leaves_per_search: cap on leaves collected from one tree per step: more leaves per
            tree means more virtual loss distortion of small searches.
    """

    def __init__(self, slots: int, next_game: Callable[[Slot], GameSpec | None], batch: int = 256,
                 max_leaves_per_search: int = 8):
        if slots < 1 or batch < 1 or max_leaves_per_search < 1:
            raise ValueError("slots, batch and max_leaves_per_search must be >= 1")
        self.batch = int(batch)
        self.max_leaves = int(max_leaves_per_search)
        self.slots = [Slot(i, self.max_leaves) for i in range(slots)]
        self.next_game = next_game
        self.stats = PoolStats()
        self.accepting = True            # False: idle slots get no new games (draining)
        self._buffers: dict[tuple[int, int], _Buffer] = {}

    # -- queries --------------------------------------------------------------------------
    def playing(self) -> list[Slot]:
        return [s for s in self.slots if s.status == PLAYING]

    def active(self) -> list[Slot]:
        """Slots holding a game (playing or paused)."""
        return [s for s in self.slots if s.status != IDLE]

    @property
    def idle(self) -> bool:
        return all(s.status == IDLE for s in self.slots)

    # -- control --------------------------------------------------------------------------
    def abandon(self, index: int, why: str = "stopped") -> FinishedGame | None:
        """Drops the game in slot ``index`` (nothing is recorded); returns what it was.  ``why``
        is "new model" for a discard (counted in ``stats.discarded``) or anything else."""
        slot = self.slots[index]
        if slot.status == IDLE or slot.game is None or slot.spec is None:
            return None
        gone = FinishedGame(slot.index, slot.spec, slot.game, slot.moves, "abandoned", 0,
                            slot.started, time.time(), slot.leaves)
        slot.status = IDLE
        slot._release_trees()
        slot.game, slot.spec, slot.moves = None, None, []
        self.stats.abandoned += 1
        self.stats.abandoned_leaves += gone.leaves
        if why == "new model":
            self.stats.discarded += 1
            self.stats.discarded_leaves += gone.leaves
        return gone

    def abandon_all(self) -> list[FinishedGame]:
        return [g for g in (self.abandon(s.index) for s in self.slots) if g is not None]

    def apply_new_model(self, agent: Agent, policy: str,
                        stale: Callable[[Agent], bool] | None = None) -> int:
        """What games in flight do when ``agent`` (a new model) arrives; returns the slots hit.

        ``discard``: abandon every game with a stale agent (ELF OpenGo); ``finish``: leave them
        to finish with the old model (Leela Zero clients; new games come from ``next_game``);
        ``switch``: give every stale colour the new agent and continue the same games.
        ``stale(agent)`` says which agents the new one replaces (default: any other model id)."""
        if policy not in NEW_MODEL_POLICIES:
            raise ValueError(f"unknown policy {policy!r} (known: {', '.join(NEW_MODEL_POLICIES)})")
        stale = stale or (lambda a: a.model_id != agent.model_id)
        hit = 0
        for slot in self.active():
            colors = [c for c in (BLACK, WHITE) if stale(slot.agents[c])]
            if not colors:
                continue
            hit += 1
            if policy == "discard":
                self.abandon(slot.index, why="new model")
            elif policy == "switch":
                if slot.to_move in colors:
                    self.stats.switched_leaves += slot.search_leaves   # that search starts again
                for c in colors:
                    slot.set_agent(c, agent)
        return hit

    # -- running --------------------------------------------------------------------------
    def step(self) -> list[FinishedGame]:
        """One round: start games, play the moves whose searches are done, then one batched
        evaluation per evaluator.  Returns the games that finished."""
        finished: list[FinishedGame] = []
        t0 = time.perf_counter()
        if self.accepting:
            self._fill_idle()
        for slot in self.playing():
            # Tree reuse can leave the next move's search already complete: play it at once.
            while slot.status == PLAYING and slot.search_done:
                done = self._play_move(slot)
                if done is not None:
                    finished.append(done)
                    if self.accepting:
                        self._fill_slot(slot)
        self.stats.move_seconds += time.perf_counter() - t0
        self._search_round()
        self.stats.steps += 1
        return finished

    def run(self, stop: Callable[[], bool] | None = None) -> Iterable[FinishedGame]:
        """Steps until every slot is idle (``next_game`` returned None) or ``stop()``."""
        while not (stop is not None and stop()):
            yield from self.step()
            if self.idle:
                return

    def _fill_idle(self) -> None:
        for slot in self.slots:
            if slot.status == IDLE:
                self._fill_slot(slot)

    def _fill_slot(self, slot: Slot) -> None:
        spec = self.next_game(slot)
        if spec is None:
            slot.status = IDLE
            slot._release_trees()
            slot.game, slot.spec, slot.moves = None, None, []
        else:
            slot.start(spec)

    def _search_round(self) -> None:
        groups: dict[tuple[int, int], list[Slot]] = defaultdict(list)
        for slot in self.slots:
            if slot.status == PLAYING and not slot.search_done:
                groups[(id(slot.agent.evaluator), slot.spec.size)].append(slot)  # type: ignore[union-attr]
        for (_, size), slots in groups.items():
            evaluator = slots[0].agent.evaluator
            for i in range(0, len(slots), self.batch):
                self._evaluate_group(evaluator, size, slots[i:i + self.batch])

    def _evaluate_group(self, evaluator: Any, size: int, slots: list[Slot]) -> None:
        """One collect_many, one forward pass and one backup_many over ``slots``."""
        trees = [s.tree for s in slots]
        per = max(1, min(self.max_leaves, self.batch // len(slots)))
        key = (id(evaluator), size)
        buf = self._buffers.get(key)
        feature_set = trees[0].feature_set
        if buf is None:
            buf = self._buffers[key] = _Buffer(feature_planes(feature_set), size)
        buf.ensure(per * len(trees), len(trees))
        before = [t.visits for t in trees]
        t0 = time.perf_counter()
        counts = buf.counts[:len(trees)]
        total = collect_many(trees, per, buf.planes, buf.keys, counts)
        t1 = time.perf_counter()
        if total:
            out = evaluator.evaluate(buf.planes[:total], keys=buf.keys[:total])
            t2 = time.perf_counter()
            backup_many(trees, counts, out.policy, out.value)
            self.stats.forward_passes += 1
            self.stats.leaves += total
        else:
            t2 = t1
        t3 = time.perf_counter()
        self.stats.search_seconds += (t1 - t0) + (t3 - t2)
        self.stats.net_seconds += t2 - t1
        for slot, tree, b, c in zip(slots, trees, before, counts):
            slot.leaves += int(c)
            slot.search_leaves += int(c)
            if c == 0 and tree.visits == b:
                slot.stalled = True       # nothing to expand (e.g. every line ends the game)

    def _play_move(self, slot: Slot) -> FinishedGame | None:
        """Chooses and plays the move of a finished search; returns the game if it ended."""
        spec, game = slot.spec, slot.game
        assert spec is not None and game is not None
        s = spec.settings
        color = game.to_move
        tree, agent = slot.tree, slot.agent
        value = tree.value
        visits = tree.visits
        if (spec.allow_resign and s.resign_threshold is not None and visits > 1
                and value < s.resign_threshold):
            return self._finish(slot, "resign", other(color))
        policy = None
        gumbel = slot.gumbel if slot.gumbel is not None and slot.gumbel.started else None
        if slot.full and s.record_policy:
            if gumbel is not None:
                policy = gumbel.policy_target()
            elif tree.params.forced_playouts_k > 0:
                policy = pruned_distribution(tree, tree.params)
            else:
                policy = tree.visit_distribution()
        if gumbel is not None and gumbel.move is not None:
            point = gumbel.move
        else:
            temperature = s.temperature if len(game.moves) < s.temperature_moves else 0.0
            if temperature != tree.params.temperature:
                tree.set_params(dataclasses.replace(tree.params, temperature=temperature))
            point = tree.choose()
        slot.gumbel = None
        game.play(point, color)
        slot.moves.append(MoveInfo(color, point, agent.model_id, visits, value, policy))
        for t in {id(t): t for t in slot.trees.values()}.values():
            t.advance(point, color)
        self.stats.moves += 1
        self.stats.full_moves += int(slot.full)
        if game.is_over:
            return self._finish(slot, "passes")
        if len(game.moves) >= s.move_cap(game.size):
            return self._finish(slot, "move cap")
        slot._begin_search()
        return None

    def _finish(self, slot: Slot, reason: str, winner: int | None = None) -> FinishedGame:
        game, spec = slot.game, slot.spec
        assert game is not None and spec is not None
        if winner is None:
            score = game.score()
            winner = BLACK if score > 0 else WHITE if score < 0 else 0
        done = FinishedGame(slot.index, spec, game, slot.moves, reason, winner, slot.started, time.time(),
                            slot.leaves, players=slot.players)
        slot.status = IDLE
        slot._release_trees()
        slot.game, slot.spec, slot.moves = None, None, []
        self.stats.games += 1
        return done
