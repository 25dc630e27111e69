"""``python -m engine analysis``: KataGo's JSON analysis protocol on stdin/stdout.

One query per input line, one response per analysed turn on stdout, as KataGo 1.15's
``katago analysis`` documents them (docs/Analysis_Engine.md); KaTrain drives it as its engine
(``altcommand``).  The queries (:mod:`engine.analysis.query`) become turn requests in a queue
ordered by ``priority`` (highest first, then the earlier query); the responses are built by
:mod:`engine.analysis.report`.

The scheduler: each search thread (``--threads``) keeps up to ``--positions`` turns searching at
once, and every round makes, per network and board size, ONE forward pass over all of them:
``engine.core.collect_many`` gathers up to ``--batch`` leaves from all those trees in one C
call, the evaluator runs once, ``backup_many`` hands the results back (the game pool's batching,
:mod:`train.games.pool`, applied to analysis).  A turn stops at its ``maxVisits`` (exactly: its last
round asks for the visits it lacks), its ``maxTime``, when a ``terminate`` action names it, or
when its tree cannot grow; a new turn takes the freed place at the next round.  With one
position at a time (``--positions 1``) the turns run strictly by priority.

Actions: ``query_version``, ``query_models``, ``clear_cache`` (the evaluators' caches),
``terminate`` / ``terminate_all`` (a queued turn answers ``noResults`` at once, a running one
stops and reports what it has; the action itself is echoed).  At the end of the input every
queued turn is still analysed, then the process exits 0.  Bad input never stops the engine: it
answers KataGo's error objects and goes on.
"""
from __future__ import annotations

import argparse
import dataclasses
import heapq
import json
import random
import sys
import threading
import time
import traceback
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence, TextIO

import numpy as np

import engine
from engine.analysis.query import PROTOCOL, QueryDefaults, TurnRequest, error, parse_query, warning
from engine.rules import net_rules_note
from engine.analysis.report import analysis_response, no_results
from engine.core import Search, SearchParams, backup_many, collect_many, feature_planes
from engine.searchcore import ramp_leaves
from engine.nets.loading import make_evaluator_factory, net_feature_set
from engine.options import DEFAULTS, default_threads
from engine.play.searchopts import with_net_defaults
from engine.play.settings_cli import add_dataclass_arguments, dataclass_from_args, described, positive_int
from engine.options import build_parser as gtp_parser

DEFAULT_POSITIONS = 16


# AnalysisConfig's fields whose options are the GTP engine's (engine.options), shared by this command line.
ENGINE_OPTIONS = ("batch", "batch_ramp", "threads", "seed")


@dataclass
class AnalysisConfig:
    """The engine's settings: the command line sets them (:func:`build_parser`, the GTP engine's
    options giving :data:`ENGINE_OPTIONS`)."""

    positions: int = described(DEFAULT_POSITIONS, "turns each search thread searches at once, their leaves "
                                                  f"batched into one network call (default {DEFAULT_POSITIONS}); 1 "
                                                  "analyses one turn at a time, strictly by priority",
                               type=positive_int, group=PROTOCOL)
    defaults: QueryDefaults = field(default_factory=QueryDefaults, metadata={"compose": True})
    batch: int = described(16, "most leaves (positions) in one network call")
    batch_ramp: int = described(8, "a turn's leaves per call: at most one per this many of its visits (0: its "
                                   "full share of the batch)")
    threads: int = described(1, "search threads, each with its own turns and forward passes")
    seed: int = described(0, "random seed")
    ownership_playouts: int = 32        # playouts behind ownership when the net has none
    model_name: str = ""                # query_models
    clock: Callable[[], float] = time.monotonic


class _Job:
    """A turn being searched by one worker."""

    def __init__(self, req: TurnRequest, tree: Search, evaluator: Any, now: float):
        self.req = req
        self.tree = tree
        self.evaluator = evaluator
        self.started = now
        self.next_report = None if req.first_report_after is None else now + req.first_report_after
        self.stalled = False

    @property
    def remaining(self) -> int:
        return self.req.max_visits - self.tree.visits

    def finished(self, now: float) -> bool:
        r = self.req
        return (r.terminated or self.stalled or self.remaining <= 0
                or (r.max_seconds is not None and now - self.started >= r.max_seconds))


class _Buffers:
    """Input planes, keys and counts of one (feature set, board size) batch, grown on demand."""

    def __init__(self, feature_set: str, size: int):
        self.shape = (feature_planes(feature_set), size, size)
        self.planes = np.zeros((0, *self.shape), np.float32)
        self.keys = np.zeros(0, np.uint64)
        self.counts = np.zeros(0, np.int32)

    def ensure(self, leaves: int, searches: int) -> None:
        if self.planes.shape[0] < leaves:
            self.planes = np.zeros((leaves, *self.shape), np.float32)
            self.keys = np.zeros(leaves, np.uint64)
        if self.counts.shape[0] < searches:
            self.counts = np.zeros(searches, np.int32)


class _Worker:
    def __init__(self) -> None:
        self.jobs: list[_Job] = []
        self.buffers: dict[tuple[str, int], _Buffers] = {}


class AnalysisEngine:
    """The protocol without the process: ``submit_line`` (any thread) reads a query, ``step``
    runs one scheduler round of a worker, ``run`` serves until the input is closed and every
    turn is answered.  ``write`` receives each output line (without the newline)."""

    def __init__(self, evaluator_for: Callable[[int], Any], config: AnalysisConfig | None = None,
                 write: Callable[[str], None] | None = None,
                 warn: Callable[[str], None] | None = None):
        self.config = config or AnalysisConfig()
        self.evaluator_for = evaluator_for
        self._write = write or (lambda text: None)
        self._warn = warn or (lambda text: None)
        self._out_lock = threading.Lock()
        self._cond = threading.Condition(threading.Lock())
        self._queue: list[tuple[tuple[int, int], TurnRequest]] = []
        self._open: dict[str, list[TurnRequest]] = defaultdict(list)   # queued or running, by id
        self._running: set[int] = set()          # id() of requests a worker has taken
        self._arrivals = 0
        self._closed = False
        self._evaluators: dict[int, Any] = {}
        self.workers = [_Worker() for _ in range(max(1, self.config.threads))]
        self.responses = 0

    # -- output -----------------------------------------------------------------------------
    def emit(self, obj: dict) -> None:
        """Writes one JSON object as one line (KataGo's form: sorted keys, no spaces)."""
        text = json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False)
        with self._out_lock:
            self._write(text)

    # -- input ------------------------------------------------------------------------------
    def submit_line(self, line: str) -> None:
        """Reads one input line: answers errors, warnings and actions at once, queues turns."""
        line = line.strip()
        if not line:
            return
        with self._cond:
            arrival = self._arrivals
        parsed = parse_query(line, self.config.defaults, arrival)
        for message in parsed.messages:
            self.emit(message)
        if parsed.action is not None:
            self._act(parsed.action)
            return
        if not parsed.requests:
            return
        size = parsed.requests[0].game.size
        qid = parsed.requests[0].id
        try:
            evaluator = self.evaluator_for(size)
        except (ValueError, OSError) as exc:
            self.emit(error(f"Cannot analyse a {size}x{size} board: {exc}", "boardXSize", qid))
            return
        self._evaluators[id(evaluator)] = evaluator
        note = net_rules_note(parsed.requests[0].game.rules, getattr(evaluator, "feature_set", "rich"))
        if note:
            self.emit(warning(note, "rules", qid))
        with self._cond:
            for req in parsed.requests:
                req.arrival = self._arrivals
                self._arrivals += 1
                heapq.heappush(self._queue, (req.sort_key, req))
                self._open[req.id].append(req)
            self._cond.notify_all()

    def close_input(self) -> None:
        """No more input: the queued turns are still analysed, then ``run`` returns."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def _act(self, query: dict) -> None:
        action = query["action"]
        if action == "query_version":
            self.emit({**query, "version": engine.__version__, "git_hash": "<omitted>"})
        elif action == "query_models":
            self.emit({**query, "models": [{
                "name": self.config.model_name, "internalName": self.config.model_name,
                "maxBatchSize": self.config.batch, "usesHumanSLProfile": False,
                "version": 0, "usingFP16": "false"}]})
        elif action == "clear_cache":
            for ev in list(self._evaluators.values()):
                clear = getattr(ev, "clear_cache", None)
                if clear is not None:
                    clear()
            self.emit(query)
        else:
            turns = set(query["turnNumbers"]) if "turnNumbers" in query else None
            target = query.get("terminateId") if action == "terminate" else None
            unanswered = []
            with self._cond:
                ids = [target] if target is not None else list(self._open)
                for qid in ids:
                    for req in self._open.get(qid, []):
                        if turns is not None and req.turn not in turns or req.terminated:
                            continue
                        req.terminated = True
                        if id(req) not in self._running:     # still queued: answered here
                            unanswered.append(req)
                for req in unanswered:
                    self._forget(req)
            for req in unanswered:
                self.emit(no_results(req))
            self.emit(query)

    def _forget(self, req: TurnRequest) -> None:
        """Under the lock: the request is answered (the queue skips it when popped)."""
        reqs = self._open.get(req.id)
        if reqs is not None:
            reqs[:] = [r for r in reqs if r is not req]
            if not reqs:
                del self._open[req.id]
        self._running.discard(id(req))

    # -- scheduling -------------------------------------------------------------------------
    def _take(self, worker: _Worker) -> None:
        """Fills the worker's free places with the highest-priority queued turns."""
        taken = []
        with self._cond:
            while len(worker.jobs) + len(taken) < self.config.positions and self._queue:
                _, req = heapq.heappop(self._queue)
                if req.terminated or req.id not in self._open:
                    continue                      # terminated while queued: already answered
                self._running.add(id(req))
                taken.append(req)
        now = self.config.clock()
        for req in taken:
            evaluator = self.evaluator_for(req.game.size)
            fs = getattr(evaluator, "feature_set", "rich")
            tree = Search(req.game, req.params, fs, self.config.batch,
                          seed=self.config.seed)
            if req.avoid:
                tree.set_avoid(req.avoid)
            worker.jobs.append(_Job(req, tree, evaluator, now))

    def pending(self) -> bool:
        """Whether any turn is queued or being searched."""
        with self._cond:
            return bool(self._queue) or bool(self._running)

    def step(self, index: int = 0) -> bool:
        """One round of worker ``index``: take queued turns into free places, one batched
        evaluation per network and board size, then answer the turns that are done and the
        reports that are due.  False when the worker had nothing to search."""
        worker = self.workers[index]
        self._take(worker)
        if not worker.jobs:
            return False
        now = self.config.clock()
        searching = [j for j in worker.jobs if not j.finished(now)]
        groups: dict[tuple[int, int], list[_Job]] = defaultdict(list)
        for job in searching:
            groups[(id(job.evaluator), job.req.game.size)].append(job)
        for jobs in groups.values():
            for i in range(0, len(jobs), self.config.batch):
                self._evaluate(worker, jobs[i:i + self.config.batch])
        now = self.config.clock()
        still = []
        for job in worker.jobs:
            if job.finished(now):
                self._finish(job)
            else:
                if job.next_report is not None and now >= job.next_report:
                    self._report(job, during=True)
                    job.next_report = now + job.req.report_every
                still.append(job)
        worker.jobs = still
        return True

    def _evaluate(self, worker: _Worker, jobs: list[_Job]) -> None:
        """One forward pass over the next leaves of ``jobs`` (one network, one board size):
        each asks for its share of the batch, never more than the visits it lacks nor, with a
        ramp, than one per ``batch_ramp`` of its visits (a small tree searched many leaves at
        a time under virtual loss loses much of its strength)."""
        per = max(1, self.config.batch // len(jobs))
        ramp = self.config.batch_ramp
        wants: dict[int, list[_Job]] = defaultdict(list)
        for job in jobs:
            wants[max(1, min(job.remaining, ramp_leaves(job.tree.visits, ramp, per)))].append(job)
        first = jobs[0]
        key = (first.tree.feature_set, first.req.game.size)
        buf = worker.buffers.get(key)
        if buf is None:
            buf = worker.buffers[key] = _Buffers(*key)
        buf.ensure(sum(w * len(js) for w, js in wants.items()), len(jobs))
        parts = []
        offset = start = 0
        before = {id(j): j.tree.visits for j in jobs}
        for want, group in wants.items():
            counts = buf.counts[start:start + len(group)]
            total = collect_many([j.tree for j in group], want, buf.planes[offset:],
                                 buf.keys[offset:], counts)
            parts.append((group, counts, offset, total))
            offset += total
            start += len(group)
        try:
            if offset:
                out = first.evaluator.evaluate(buf.planes[:offset], keys=buf.keys[:offset])
                errors = getattr(out, "uncertainty", None)
                opt = getattr(out, "policy_opt", None)
                for group, counts, at, total in parts:
                    if total:
                        backup_many([j.tree for j in group], counts, out.policy[at:at + total],
                                    out.value[at:at + total],
                                    None if out.score is None else out.score[at:at + total],
                                    None if errors is None else errors[at:at + total],
                                    None if opt is None else opt[at:at + total])
        except Exception as exc:      # a failing network call fails these turns, not the engine
            for group, counts, at, total in parts:
                for job in group:
                    if job.tree.pending_total:
                        job.tree.cancel()
            self._fail(worker, jobs, exc)
            return
        for group, counts, _, _ in parts:
            for job, c in zip(group, counts):
                if c == 0 and job.tree.visits == before[id(job)]:
                    job.stalled = True      # nothing left to expand (the game is over)

    def _fail(self, worker: _Worker, jobs: list[_Job], exc: Exception) -> None:
        self._warn("".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
        for job in jobs:
            self.emit(error(f"Analysis failed: {type(exc).__name__}: {exc}", "moves", job.req.id))
            with self._cond:
                self._forget(job.req)
                self._cond.notify_all()
        worker.jobs = [j for j in worker.jobs if j not in jobs]

    def _report(self, job: _Job, during: bool) -> None:
        try:
            response = analysis_response(job.req, job.tree, job.evaluator, during,
                                         self.config.ownership_playouts, self.config.seed)
        except Exception as exc:     # noqa: BLE001 - reported, the engine goes on
            self._warn("".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
            response = error(f"Analysis failed: {type(exc).__name__}: {exc}", "moves", job.req.id)
        self.emit(response)

    def _finish(self, job: _Job) -> None:
        if job.tree.visits == 0:
            self.emit(no_results(job.req))
        else:
            self._report(job, during=False)
        self.responses += 1
        with self._cond:
            self._forget(job.req)
            self._cond.notify_all()

    def run_worker(self, index: int = 0) -> None:
        """Steps worker ``index`` until the input is closed and nothing is left to take."""
        while True:
            if self.step(index):
                continue
            with self._cond:
                if self._queue:
                    continue
                if self._closed:
                    return
                self._cond.wait(0.1)

    def run(self) -> None:
        """Serves with every worker (this thread is worker 0) until the input is closed and
        every turn is answered."""
        helpers = [threading.Thread(target=self.run_worker, args=(i,), daemon=True,
                                    name=f"analysis-{i}") for i in range(1, len(self.workers))]
        for t in helpers:
            t.start()
        self.run_worker(0)
        for t in helpers:
            t.join()


# -- the command line --------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    """The GTP engine's options (``--weights``, ``--threads``, ``--batch``, ``--visits``,
    ``--time``, ``--seed``, ``--precision``, ``--device``, ``--max-memory``, ``--search``, ``--log``) and the
    analysis engine's own."""
    p = gtp_parser()
    p.prog = "python -m engine analysis"
    p.description = ("Analyse positions for KaTrain: KataGo's JSON analysis protocol on stdin/stdout\n"
                     "(as `katago analysis`): "
                     "one query per line, one response per analysed turn.\nGive this command "
                     "line to KaTrain as its engine (altcommand).")
    p.epilog = ("analysis: --visits is the maxVisits of a query that gives none (default "
                f"{QueryDefaults().max_visits}), --time its maxTime; --threads search threads "
                "each search their own turns; the game options (--komi, --rules, --resign, "
                "--ponder, --lag-buffer) are not used: every query says its own.")
    analysis = p.add_argument_group(PROTOCOL, "how queries are served")
    add_dataclass_arguments(p, AnalysisConfig, {PROTOCOL: analysis}, exclude=ENGINE_OPTIONS)
    return p


def main(argv: Sequence[str] | None = None, stdin: TextIO | None = None,
         stdout: TextIO | None = None) -> int:
    """``python -m engine analysis [OPTIONS]``: serves until the end of the input."""
    args = build_parser().parse_args(argv)
    stdin = stdin if stdin is not None else sys.stdin
    stdout = stdout if stdout is not None else sys.stdout
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1 << 31)

    def warn(text: str) -> None:
        if not args.quiet or text.startswith("error"):     # one write a line (see engine.__main__)
            sys.stderr.write(text + "\n")
            sys.stderr.flush()

    uses_torch = args.weights not in ("uniform", "random")
    if args.threads is None:
        args.threads = default_threads(args.device) if uses_torch else 1
    if args.batch is None:
        args.batch = DEFAULTS.batch
    if uses_torch:
        import torch
        torch.set_num_threads(1)      # the parallelism is the search threads'
    log = None
    if args.log:
        try:
            log = open(args.log, "a", encoding="utf-8")
        except OSError as exc:
            print(f"error: cannot open log file: {exc}", file=sys.stderr)
            return 2
    try:
        factory = make_evaluator_factory(args, warn)
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    search = SearchParams()
    if args.max_memory is not None:
        search = dataclasses.replace(search, max_memory=args.max_memory)
    try:
        feature_set = net_feature_set(factory, 19)    # the shipped nets of every size are of one kind
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    search = with_net_defaults(search, feature_set, warn)
    for options in args.search:
        search = dataclasses.replace(search, **options)
    defaults = QueryDefaults(max_visits=min(args.visits or QueryDefaults().max_visits, args.max_visits_cap),
                             max_seconds=args.time, search=search)
    config = dataclass_from_args(args, AnalysisConfig(defaults=defaults,
                                                      model_name=args.weights or "shipped weights (by board size)"))
    log_lock = threading.Lock()

    def log_line(prefix: str, text: str) -> None:
        if log is not None:
            with log_lock:
                log.write(f"{prefix} {text}\n")
                log.flush()

    def write(text: str) -> None:
        stdout.write(text + "\n")
        stdout.flush()
        log_line("<", text)

    service = AnalysisEngine(factory, config, write=write, warn=warn)

    def read() -> None:
        try:
            for line in stdin:
                log_line(">", line.rstrip("\n"))
                try:
                    service.submit_line(line)
                except Exception as exc:   # noqa: BLE001 - a bug must not stop the engine
                    warn("".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
                    service.emit(error(f"Internal error reading the query: {type(exc).__name__}: {exc}"))
        finally:
            service.close_input()

    reader = threading.Thread(target=read, daemon=True, name="analysis-input")
    reader.start()
    warn("Started, ready to begin handling requests")
    try:
        service.run()
    except KeyboardInterrupt:
        return 0
    except BrokenPipeError:
        return 0
    finally:
        if log is not None:
            log.close()
        if "engine.nets.autoprecision" in sys.modules:     # no measurement left inside torch at exit
            sys.modules["engine.nets.autoprecision"].stop_all()
    return 0
