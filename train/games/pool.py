"""The game runner: many games advanced together, batched searches beside polled GTP programs.

THE game runner of the project: self-play uses it with one agent for both colours, gating with
a different net per colour, matches and ladders (:mod:`train.match.schedule`) with any mix of our nets
and GTP programs, ``tools.checks.solve5`` against a random player.  A :class:`GamePool` holds ``slots``
games in flight, each from a :class:`GameSpec`: board, rules, set-up (fixed handicap stones,
forced opening moves), one agent per colour and its :class:`MoveLimit` (visits and/or seconds).

Two kinds of agent play:

- an :class:`Agent` is a net searched in this process; the searches of all games batch together;
- a :class:`TurnAgent` answers one move at a time (a GTP program, :class:`train.match.gtp_agent.GTPAgent`;
  a random or scripted player): the pool starts its genmove and polls for the answer at every
  step while the other slots keep batching.

Each :meth:`GamePool.step`:

1. starts a game in every idle slot (``next_game(slot) -> GameSpec | None``): set-up stones and
   opening moves played, turn agents told;
2. plays a move in every slot whose search has reached its visits or seconds (tree reuse: every
   tree of the game advances to the new root, keeping the matching subtree), or whose turn agent
   has answered; ends games on two passes, resignation, the move cap, or a forfeit of a turn
   agent: time (no answer within its seconds), crash (its process died), illegal move, error (it
   refused a command);
3. groups the slots still searching by evaluator (and board size) and, per group, makes ONE
   ``collect_many`` call (one C call over all those trees), ONE forward pass and ONE
   ``backup_many`` call.  So the network sees ``batch`` leaves per call whatever the number of
   games, and Python work per step is per game, never per tree node (:mod:`train.games.batcher`;
   ``lanes=2`` overlaps a lane's forward pass with the other lane's step, ``search_threads``
   splits the C calls over threads).

An agent searches with its own :class:`engine.core.SearchParams` (``Agent.params``: Dirichlet
noise at the root, move temperature, forced playouts, ...).  Per move the runner applies the
game's :class:`PlaySettings`: the agent's noise and forced playouts in full PUCT searches only
(not in cheap searches nor under the Gumbel root), its temperature for the first
``temperature_moves`` moves only (later moves take the most visited child), resignation by the
engine's rule (:func:`engine.play.movepolicy.should_resign`) below a threshold (unless the game
is a no-resign game), a move cap, and optional playout cap randomisation (KataGo): most moves
get a cheap search that is played but not recorded as a policy target.

Games in flight are inspectable and controllable per slot: :attr:`GamePool.slots` exposes each
game, its moves so far (with the model id that chose each move), its agents and trees; a slot can
be abandoned, or switched to another agent mid-game (:meth:`Slot.set_agent`).
:meth:`GamePool.apply_new_model` implements the three answers to "a new model arrived" of
``--on-new-model``: discard, finish, switch.
"""
from __future__ import annotations

import dataclasses
import time
from collections import defaultdict
from typing import Any, Callable, Iterable

import numpy as np

from engine import coords
from engine.core import BLACK, WHITE, Game, IllegalMoveError, Search, other, winrate_of
from engine.play.movepolicy import best_other_move, raw_pass_allowed, should_resign
from engine.play.player import SearchResult
from engine.play.rootsearch import GumbelRoot, GumbelSettings, pruned_distribution
from train.games.batcher import Batcher, PoolStats
from train.games.spec import Agent, FinishedGame, GameSpec, MoveLimit, PlaySettings, Player, TurnAgent
from train.games.gtp_client import EngineDied, EngineTimeout, GTPError
from train.games.records import MoveInfo

__all__ = ["Agent", "FinishedGame", "GamePool", "GameSpec", "MoveLimit", "PlaySettings", "Player", "PoolStats",
           "Slot", "TurnAgent", "NEW_MODEL_POLICIES"]

NEW_MODEL_POLICIES = ("discard", "finish", "switch")


IDLE, PLAYING = "idle", "playing"


class Slot:
    """One game in flight.  Read freely; change only through the methods."""

    def __init__(self, index: int, max_leaves: int):
        self.index = index
        self.max_leaves = max_leaves
        self.status = IDLE
        self.spec: GameSpec | None = None
        self.game: Game | None = None
        self.agents: dict[int, Player] = {}
        self.trees: dict[int, Search] = {}        # the colours played by an Agent
        self.moves: list[MoveInfo] = []
        self.setup: list[int] = []                # handicap stones on the board
        self.players: dict[int, list[str]] = {}   # model ids each colour was given, in order
        self.started = 0.0
        self.turn_started = 0.0          # time.monotonic() when the current move was asked for
        self.target = 0                  # root visits the current search must reach
        self.full = True                 # the current search is a full one
        self.stalled = False             # the search cannot grow (forces the move)
        self.gumbel: GumbelRoot | None = None   # the Gumbel root search of this move, if any
        self.leaves = 0                  # leaves this game has sent to evaluators
        self.search_leaves = 0           # ... for the move being searched now
        self._rng = np.random.default_rng(index)
        self._searching: Search | None = None   # the tree of the search in progress (None: none)
        self._drain: Callable[[], None] = lambda: None   # backs up the pool's batches in flight
        self._seconds: float | None = None       # ... and its time limit
        self._evaluator: Any = None              # ... and its agent's evaluator
        self._spare: dict[tuple[int, str], list[Search]] = defaultdict(list)
        self._seed = 0

    # -- inspection -----------------------------------------------------------------------
    @property
    def to_move(self) -> int:
        assert self.game is not None
        return self.game.to_move

    @property
    def agent(self) -> Player:
        """The agent to move."""
        return self.agents[self.to_move]

    @property
    def turn_based(self) -> bool:
        """The side to move is a turn agent (polled, not searched here)."""
        return not isinstance(self.agent, Agent)

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
        tree = self._searching if self._searching is not None else self.tree
        visits = tree.visits
        if visits >= self.target:
            return True
        seconds = self._seconds if self._searching is not None else (
            self.spec.limit(self.to_move).seconds if self.spec is not None else None)
        return seconds is not None and visits > 0 and time.monotonic() - self.turn_started >= seconds

    # -- control ----------------------------------------------------------------------------
    def start(self, spec: GameSpec) -> None:
        """Begins ``spec`` in this slot (the previous game, if any, is dropped): the handicap
        stones and the opening moves are played (MoveInfo with no search for the latter), trees
        made for the agents.  The first move is not asked for yet.  ValueError for a handicap
        the board does not allow or an illegal opening (the caller's bug)."""
        self._release_trees()
        self.spec = spec
        self.game = game = Game(spec.size, spec.rules)
        self.moves = []
        self.agents = {BLACK: spec.black, WHITE: spec.white}
        self.players = {BLACK: [spec.black.model_id], WHITE: [spec.white.model_id]}
        self.trees = {}
        self._rng = np.random.default_rng([spec.seed, self.index])
        self._seed = spec.seed
        self.setup = spec.handicap_points()
        for point in self.setup:
            game.play(point, BLACK)
        if self.setup:
            game.set_to_move(WHITE)
        for point in spec.opening:
            color = game.to_move
            try:
                game.play(point, color)
            except IllegalMoveError as exc:
                raise ValueError(f"illegal opening move {point}: {exc}") from exc
            self.moves.append(MoveInfo(color, point, self.agents[color].model_id, 0, 0.0, None))
        for color in (BLACK, WHITE):
            if isinstance(self.agents[color], Agent):
                self._attach_tree(color)
        self.started = time.time()
        self.leaves = 0
        self.status = PLAYING

    def set_agent(self, color: int, agent: Agent) -> None:
        """Switches ``color`` to ``agent`` mid-game: later moves record the new model id.  The
        colour's tree is rebuilt (its priors and values came from the old network)."""
        if self.game is None:
            raise RuntimeError("no game in this slot")
        self._drain()                   # no tree may change while its leaves are in flight
        self.agents[color] = agent
        named = self.players.setdefault(color, [])
        if agent.model_id not in named:
            named.append(agent.model_id)
        old = self.trees.pop(color, None)
        if old is not None and self.trees.get(other(color)) is not old:
            self._spare_tree(old)       # a tree shared with the other colour stays with it
        self._attach_tree(color)
        if self.status != IDLE and not self.turn_based:
            self._begin_search()

    # -- internals --------------------------------------------------------------------------
    def _attach_tree(self, color: int) -> None:
        """Gives ``color`` a tree: the other colour's when it has the same agent, else a fresh
        (or recycled) tree at the current position."""
        agent = self.agents[color]
        o = other(color)
        assert isinstance(agent, Agent)
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
        self._searching = None
        trees = list({id(t): t for t in self.trees.values()}.values())
        self.trees = {}
        for t in trees:
            self._spare[(t.size, t.feature_set)].append(t)

    def _begin_search(self) -> None:
        """Sets up the search of the next move: full or cheap, noise, visit target."""
        assert self.spec is not None
        s = self.spec.settings
        self.full = s.cheap_visits <= 0 or self._rng.random() < s.full_search_prob
        visits = self.spec.limit(self.to_move).visits or s.visits
        self.target = visits if self.full else s.cheap_visits
        self.stalled = False
        self.search_leaves = 0
        self.gumbel = None
        gumbel = s.root == "gumbel"
        agent = self.agent
        assert isinstance(agent, Agent)
        own = agent.params                      # noise and forced playouts in full PUCT searches only
        explore = self.full and not gumbel
        noise = explore and own.noise_epsilon > 0
        params = dataclasses.replace(own, noise_epsilon=own.noise_epsilon if noise else 0.0,
                                     forced_playouts_k=own.forced_playouts_k if explore else 0.0)
        self.tree.set_params(params)
        self._searching = self.tree
        self._seconds = self.spec.limit(self.to_move).seconds
        self._evaluator = agent.evaluator
        if noise:
            self.tree.request_noise()
        if gumbel:
            self.tree.set_root_targets(None)
            self.gumbel = GumbelRoot(self.tree, self.target, self._rng, GumbelSettings(s.gumbel_considered))


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
        lanes: 1, or 2 to overlap the forward passes with the CPU side (:mod:`train.games.batcher`):
            the slots ``i % 2 == k`` form lane k, and each step serves one lane: it backs up the
            lane's batch, whose forward pass ran on a worker thread meanwhile, plays its moves and
            sends its next batch.  ``batch`` stays the leaves per forward pass.
        search_threads: threads that collect and back up the leaves of one batch, each over its
            part of the trees (:mod:`train.games.batcher`); the games are the same for any number.
        batch_ramp: > 0, a tree's leaves per step also grow with it: at most one per
            ``batch_ramp`` root visits (at least one), as the engine's ``--batch-ramp``; 0: every
            tree its full share from the first visit.
        clock: times the stats' seconds (``time.thread_time``: CPU time of the thread timed).
    """

    def __init__(self, slots: int, next_game: Callable[[Slot], GameSpec | None], batch: int = 256,
                 max_leaves_per_search: int = 8, lanes: int = 1, search_threads: int = 1,
                 clock: Callable[[], float] = time.perf_counter, batch_ramp: int = 0):
        if slots < 1 or batch < 1 or max_leaves_per_search < 1:
            raise ValueError("slots, batch and max_leaves_per_search must be >= 1")
        self.batch = int(batch)
        self.max_leaves = int(max_leaves_per_search)
        self.slots = [Slot(i, self.max_leaves) for i in range(slots)]
        self.next_game = next_game
        self.stats = PoolStats()
        self.accepting = True            # False: idle slots get no new games (draining)
        self.lanes = int(lanes)
        self._clock = clock
        self._batcher = Batcher(self.stats, self.batch, self.max_leaves, self.lanes, search_threads, clock,
                                batch_ramp)
        self._lane = 0
        for slot in self.slots:
            slot._drain = self._batcher.drain

    # -- queries --------------------------------------------------------------------------
    def playing(self) -> list[Slot]:
        return [s for s in self.slots if s.status == PLAYING]

    def active(self) -> list[Slot]:
        """Slots holding a game."""
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
        self._batcher.drain()           # its trees go back to the spares: nothing in flight
        gone = FinishedGame(slot.index, slot.spec, slot.game, slot.moves, "abandoned", 0,
                            slot.started, time.time(), slot.leaves, setup=slot.setup)
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
        self._batcher.drain()
        hit = 0
        for slot in self.active():
            colors = [c for c in (BLACK, WHITE) if isinstance(slot.agents[c], Agent) and stale(slot.agents[c])]
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
        """One round: start games, play the moves whose searches are done or whose turn agents
        have answered, then one batched evaluation per evaluator.  Returns the games that
        finished.  With two lanes a step serves one lane (see the class docstring)."""
        finished: list[FinishedGame] = []
        lane = self._lane
        self._lane = (lane + 1) % self.lanes
        self._batcher.complete(lane)    # the lane's batch in flight (two lanes) is backed up
        lane_slots = self.slots if self.lanes == 1 else self.slots[lane::self.lanes]
        t0 = self._clock()
        if self.accepting:
            for slot in lane_slots:
                if slot.status == IDLE:
                    self._fill_slot(slot, finished)
        searching: list[Slot] = []
        for slot in lane_slots:
            if slot.status != PLAYING:
                continue
            refilled = False
            # Tree reuse can leave the next move's search already complete: play it at once.
            while slot.status == PLAYING:
                if slot._searching is None and slot.turn_based:   # a search in progress: an Agent's turn
                    done = self._poll_turn(slot)
                    if done is None and slot.turn_based and slot.status == PLAYING:
                        break           # no answer yet (or the next move is a turn agent's too)
                elif slot.search_done:
                    done = self._play_move(slot)
                else:
                    searching.append(slot)
                    break
                if done is not None:
                    finished.append(done)
                    if self.accepting and not refilled:
                        refilled = True  # once per step: an agent failing every set-up cannot spin here
                        self._fill_slot(slot, finished)
        self.stats.move_seconds += self._clock() - t0
        searched = self._batcher.round(searching, lane)
        if not searched and not finished and any(s.turn_based for s in self.playing()):
            time.sleep(0.001)           # only turn agents are thinking: do not spin the CPU
        self.stats.steps += 1
        return finished

    def run(self, stop: Callable[[], bool] | None = None) -> Iterable[FinishedGame]:
        """Steps until every slot is idle (``next_game`` returned None) or ``stop()``."""
        while not (stop is not None and stop()):
            yield from self.step()
            if self.idle:
                return

    def _fill_slot(self, slot: Slot, finished: list[FinishedGame]) -> None:
        """Starts the next game in ``slot`` (or leaves it idle); a game lost at its set-up (a turn
        agent failing) goes to ``finished``."""
        spec = self.next_game(slot)
        if spec is None:
            slot.status = IDLE
            slot._release_trees()
            slot.game, slot.spec, slot.moves = None, None, []
            return
        slot.start(spec)
        done = self._tell_setup(slot) or self._begin_turn(slot)
        if done is not None:
            finished.append(done)

    def _tell_setup(self, slot: Slot) -> FinishedGame | None:
        """Starts the game in the turn agents and plays the set-up into them; a failure is a
        forfeit of that agent."""
        game, spec = slot.game, slot.spec
        assert game is not None and spec is not None
        turn = [c for c in (BLACK, WHITE) if not isinstance(slot.agents[c], Agent)]
        for color in turn:
            try:
                slot.agents[color].new_game(spec.size, spec.rules)
            except (EngineTimeout, EngineDied, GTPError) as exc:
                return self._forfeit(slot, color, exc, "new game failed")
            slot.players[color] = [slot.agents[color].model_id]   # a GTP engine's name is known now
        for color, point in game.moves:
            for receiver in turn:
                try:
                    slot.agents[receiver].play(color, point)
                except (EngineTimeout, EngineDied, GTPError) as exc:
                    return self._forfeit(slot, receiver, exc, f"set-up move {_vertex(point, game.size)}")
        return None

    def _begin_turn(self, slot: Slot) -> FinishedGame | None:
        """Asks the side to move for its move: a search, or a turn agent's genmove."""
        slot.turn_started = time.monotonic()
        if not slot.turn_based:
            slot._begin_search()
            return None
        color = slot.to_move
        try:
            slot.agent.start_genmove(color, slot.spec.limit(color).seconds)  # type: ignore[union-attr]
        except (EngineTimeout, EngineDied, GTPError) as exc:
            return self._forfeit(slot, color, exc, "genmove")
        return None

    def _poll_turn(self, slot: Slot) -> FinishedGame | None:
        """Plays the turn agent's move if it has answered; its forfeits end the game."""
        game, spec = slot.game, slot.spec
        assert game is not None and spec is not None
        color, agent = slot.to_move, slot.agent
        limit = spec.limit(color).seconds
        try:
            move = agent.poll_genmove()  # type: ignore[union-attr]
        except (EngineTimeout, EngineDied, GTPError) as exc:
            return self._forfeit(slot, color, exc, "genmove")
        except ValueError as exc:
            return self._forfeit(slot, color, exc, "unreadable move", reason="illegal")
        elapsed = time.monotonic() - slot.turn_started
        if limit is not None and elapsed > limit and (move is not None or elapsed > limit + 1.0):
            if move is None and hasattr(agent, "kill"):
                agent.kill()            # it would still be thinking in its next game
            return self._finish(slot, "time", other(color),
                                _blame(slot, color, f"move took {elapsed:.2f} s, limit {limit:g} s"))
        if move is None:
            return None
        if move == "resign":
            return self._finish(slot, "resign", other(color))
        try:
            game.play(move, color)  # type: ignore[arg-type]
        except (IllegalMoveError, ValueError) as exc:
            why = getattr(exc, "reason", str(exc))
            return self._finish(slot, "illegal", other(color),
                                _blame(slot, color, f"illegal move {_vertex(move, game.size)} ({why})"))
        return self._after_play(slot, MoveInfo(color, int(move), agent.model_id, 0, 0.0, None, elapsed))

    def _play_move(self, slot: Slot) -> FinishedGame | None:
        """Chooses and plays the move of a finished search; returns the game if it ended."""
        spec, game = slot.spec, slot.game
        assert spec is not None and game is not None
        s = spec.settings
        color = game.to_move
        tree, agent = slot.tree, slot.agent
        value = tree.value
        visits = tree.visits
        if spec.allow_resign and should_resign(winrate_of(value), len(game.moves), game.size, s.resign, visits,
                                               handicap=len(slot.setup), white=color == WHITE):
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
            temperature = agent.params.temperature if len(game.moves) < s.temperature_moves else 0.0
            if temperature != tree.params.temperature:
                tree.set_params(dataclasses.replace(tree.params, temperature=temperature))
            point = tree.choose()
        if point == game.pass_point:
            point = self._pass_or_play_on(slot, tree, value, visits, s.resign)
        slot.gumbel = None
        game.play(point, color)
        self.stats.full_moves += int(slot.full)
        return self._after_play(slot, MoveInfo(color, point, agent.model_id, visits, value, policy,
                                               time.monotonic() - slot.turn_started))

    def _pass_or_play_on(self, slot: Slot, tree: Search, value: float, visits: int, resign: float) -> int:
        """The pass the search chose, or its best other move where the pass would lose by the raw
        count these games are scored by (:func:`engine.play.movepolicy.raw_pass_allowed`)."""
        game = slot.game
        assert game is not None
        color = game.to_move
        result = SearchResult(move=game.pass_point, value=value, visits=visits, playouts=0, evals=0,
                              seconds=0.0, children=tree.children())
        if raw_pass_allowed(game, color, result, resign):
            return game.pass_point
        alt = best_other_move(game, color, result)
        if alt is None:
            return game.pass_point
        self.stats.passes_refused += 1
        return alt

    def _after_play(self, slot: Slot, info: MoveInfo) -> FinishedGame | None:
        """Records a move just played into the game: trees advance, a turn agent opponent is
        told; ends the game on two passes or the move cap, else asks for the next move."""
        game, spec = slot.game, slot.spec
        assert game is not None and spec is not None
        slot.moves.append(info)
        slot._searching = None
        for t in {id(t): t for t in slot.trees.values()}.values():
            t.advance(info.point, info.color)
        self.stats.moves += 1
        opponent = other(info.color)
        if not isinstance(slot.agents[opponent], Agent):
            try:
                slot.agents[opponent].play(info.color, info.point)
            except (EngineTimeout, EngineDied, GTPError) as exc:
                return self._forfeit(slot, opponent, exc, f"play {_vertex(info.point, game.size)}")
        if game.is_over:
            return self._finish(slot, "passes")
        if len(game.moves) - len(slot.setup) >= spec.settings.move_cap(game.size):
            return self._finish(slot, "move cap")
        return self._begin_turn(slot)

    def _forfeit(self, slot: Slot, loser: int, exc: BaseException, what: str,
                 reason: str | None = None) -> FinishedGame:
        """Ends the game lost by ``loser``, whose agent raised ``exc`` doing ``what``: on time
        (EngineTimeout), crash (EngineDied), or ``reason`` (default: error, a refused command)."""
        if reason is None:
            reason = "time" if isinstance(exc, EngineTimeout) else "crash" if isinstance(exc, EngineDied) else "error"
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return self._finish(slot, reason, other(loser), _blame(slot, loser, f"{what}: {first}"))

    def _finish(self, slot: Slot, reason: str, winner: int | None = None, detail: str = "") -> FinishedGame:
        game, spec = slot.game, slot.spec
        assert game is not None and spec is not None
        if winner is None:
            score = game.score()
            winner = BLACK if score > 0 else WHITE if score < 0 else 0
        done = FinishedGame(slot.index, spec, game, slot.moves, reason, winner, slot.started, time.time(),
                            slot.leaves, players=slot.players, detail=detail, setup=slot.setup)
        slot.status = IDLE
        slot._release_trees()
        slot.game, slot.spec, slot.moves = None, None, []
        self.stats.games += 1
        return done


def _vertex(point: int, size: int) -> str:
    return coords.to_gtp(point, size) if 0 <= point <= size * size else str(point)


def _blame(slot: Slot, color: int, text: str) -> str:
    """``text`` prefixed with the colour and name of the player it is about."""
    return f"{'Black' if color == BLACK else 'White'} ({slot.agents[color].model_id}): {text}"
