"""The trainer stage: follows the run directory, trains, checkpoints (``python -m train.trainer``).

The step itself (optimiser, losses, precision, checkpoint files) is :mod:`train.learn.step`.
The trainer never runs ahead of self-play: it may do ``steps_per_game`` steps per game on disk
(or ``samples_per_position`` samples per position) and waits when it is ahead.

Sync pipeline (RUN_DIR/pipeline.json): the trainer works only in the "train" phase of a
generation: it does the steps the games on disk have paid for, writes a checkpoint (the
generation's candidate) and reports ``phase_done`` in the metrics; otherwise it waits.
With ``--no-keep-old-games`` the window samples only games whose last move the current self-play
model chose (see :meth:`train.replay.ReplayWindow.set_model_filter`).

Data-parallel (``--train-devices N``): this process is rank 0 of N DistributedDataParallel
processes that share each step's batch (:mod:`train.learn.ddp`); it alone decides and checkpoints.

Stage process: ``python -m train.trainer --run-dir DIR`` (started by ``train.loop``).
"""
from __future__ import annotations

import dataclasses
import os
import queue
import sys
import time
from typing import Any

import torch

from engine.nets import weights
from engine.nets.evaluator import resolve_device
from engine.nets.precision import choose_train_amp
from train.learn import ddp
from train import stage
from train.config import RunConfig
from train.replay import BatchLoader, ReplayWindow
from train.learn.step import LOSS_NAMES, MAX_SKIPPED_IN_A_ROW, Trainer


def allowed_steps(cfg: RunConfig, games: int, mean_positions: float) -> int:
    """Training steps self-play has paid for: ``steps_per_game`` per game beyond ``min_games``,
    or ``samples_per_position`` samples per position (positions estimated from the window's
    mean game)."""
    if games < cfg.min_games:
        return 0
    if cfg.samples_per_position:
        return int(cfg.samples_per_position * games * mean_positions / cfg.train_batch)
    return int(cfg.steps_per_game * games)


def run(run_dir: str, parent_pid: int | None = None, max_steps: int | None = None,
        train_devices: int | None = None) -> int:
    """The trainer stage: follows the run directory until stopped.  Returns an exit status.

    SIGTERM/SIGINT: checkpoint and exit.  SIGUSR1: do the steps self-play has paid for, then
    checkpoint and exit (the loop sends it when self-play has finished its game budget).
    ``train_devices`` (default: the run's ``--train-devices``) > 1: this process is rank 0 of a
    data-parallel group (:mod:`train.learn.ddp`) and starts the other ranks."""
    try:
        start = stage.stage_start("train", run_dir, parent_pid, train_devices=train_devices)
    except ValueError as exc:
        print(f"trainer: {exc}", file=sys.stderr)
        return 2
    rd, cfg, stop = start.rd, start.cfg, start.stop
    world = cfg.train_devices
    torch.manual_seed(cfg.seed * 7919 + 17)
    # The newest checkpoint that loads: a corrupt one is renamed *.corrupt, with a line saying so.
    latest = rd.latest_valid_model(weights.load, lambda text: print(f"trainer: {text}", file=sys.stderr,
                                                                    flush=True))
    if latest is None:
        print("trainer: no model in the run directory", file=sys.stderr)
        return 2
    step, path, (model, meta) = latest
    device = resolve_device(start.device)
    amp = choose_train_amp(model, device, cfg.board_size, cfg.train_batch // world, cfg.train.amp,
                           log=lambda text: print(text, flush=True))
    settings = dataclasses.replace(cfg.train, amp=amp)     # as measured; the saved config keeps "auto"
    group = None
    if world > 1:
        try:
            device = ddp.rank_device(device, 0, world)
            group = ddp.Leader(world, device, {
                "run_dir": str(rd.root), "model_path": str(path), "step": step, "settings": settings,
                "device": str(device), "threads": torch.get_num_threads(), "config": cfg.to_dict(),
                "loader_seed": cfg.seed * 1000 + step, "parent_pid": os.getpid()})
        except (ValueError, RuntimeError) as exc:
            print(f"trainer: {exc}", file=sys.stderr, flush=True)
            return 2
        trainer: Trainer = ddp.DDPTrainer(model, settings, device, step=step)
    else:
        trainer = Trainer(model, settings, device, step=step)
    resumed = trainer.load_state(rd)
    print(f"trainer: from {path.name} (step {step}), optimiser state {'restored' if resumed else 'fresh'}, "
          f"device {trainer.device}" + (f", {world} data-parallel ranks ({ddp.backend_for(device)})"
                                        if group is not None else ""), flush=True)
    parent = path.name
    window = ReplayWindow(rd, cfg.window, cfg.board_size)
    follow = None if cfg.keep_old_games else cfg.mode
    loader = BatchLoader(window, cfg.train_batch // world, model.feature_set, seed=cfg.seed * 1000 + step,
                         workers=cfg.loader_workers, follow_mode=follow,
                         shard=(0, world) if world > 1 else None)
    saved_step = step
    skipped_in_a_row = 0
    sums = {k: 0.0 for k in LOSS_NAMES}
    count = 0
    waited = 0.0
    last_metrics = time.time()
    last_refresh = 0.0
    t_train = 0.0
    start_step = step
    t_start = time.time()

    def log(final: bool = False) -> None:
        nonlocal sums, count, waited, t_train, last_metrics
        wall = max(1e-9, time.time() - last_metrics)
        rec: dict[str, Any] = {"source": "trainer", "step": trainer.step, "lr": trainer.lr,
                               "window_games": window.games, "window_positions": window.positions,
                               "games": window.games_on_disk,
                               "samples_per_s": count * cfg.train_batch / wall,
                               "train_samples_per_s": count * cfg.train_batch / t_train if t_train > 0 else 0.0,
                               "loader_positions_per_s": loader.positions_per_s * world,   # rank 0's x N
                               "waiting_share": waited / wall, "window_filtered_out": window.filtered_out,
                               "skipped_steps": trainer.skipped_steps}
        if world > 1:
            rec["train_devices"] = world
        if count:
            rec.update({k: sums[k] / count for k in LOSS_NAMES})
        if final:
            rec["event"] = "stop"
        rd.append_metrics(rec)
        sums = {k: 0.0 for k in LOSS_NAMES}
        count, waited, t_train = 0, 0.0, 0.0
        last_metrics = time.time()

    board_sizes = [cfg.board_size]
    phase: dict[str, Any] | None = rd.read_pipeline()
    last_phase = time.time()
    done_generations: set[Any] = set()
    entered: Any = None
    drain_counted = False
    try:
        while not stop:
            now = time.time()
            if now - last_phase >= 0.1:
                phase, last_phase = rd.read_pipeline(), now
            sync_train = phase is not None and not stop.drain
            if sync_train:
                assert phase is not None
                gen = phase.get("generation")
                if phase.get("phase") != "train" or gen in done_generations:
                    time.sleep(0.05)            # sync pipeline: not our phase
                    if group is not None:
                        group.idle(trainer.step, window.games_on_disk)
                    waited += time.time() - now
                    if time.time() - last_metrics >= cfg.metrics_every:
                        log()
                    continue
                if gen != entered:
                    entered, last_refresh = gen, 0.0     # see every game of the generation
            if now - last_refresh > 1.0:
                window.refresh()
                if follow is not None:
                    current = rd.selfplay_model(cfg.mode)
                    window.set_model_filter(rd.model_id(current[1]) if current else None)
                last_refresh = now
            owed = allowed_steps(cfg, window.games_on_disk, window.mean_positions_per_game())
            if max_steps is not None:
                owed = min(owed, max_steps)
            if sync_train and (trainer.step >= owed or window.positions == 0):
                # The generation's training is done: its checkpoint is the candidate.
                new = trainer.step != saved_step
                if new:
                    parent = trainer.save(rd, parent, board_sizes)
                    saved_step = trainer.step
                done_generations.add(gen)
                rd.append_metrics({"source": "trainer", "event": "phase_done", "generation": gen,
                                   "step": trainer.step, "checkpoint": trainer.step if new else None})
                continue
            if trainer.step >= owed or window.positions == 0:
                if stop.drain and not drain_counted:
                    # Count every game on disk once more before the last steps: the window may
                    # predate self-play's last games (SIGUSR1 comes after self-play exited).
                    drain_counted, last_refresh = True, 0.0
                    continue
                if stop.drain or (max_steps is not None and trainer.step >= max_steps):
                    break
                time.sleep(0.2)
                if group is not None:
                    group.idle(trainer.step, window.games_on_disk)
                waited += time.time() - now
                last_refresh = 0.0
            else:
                try:
                    batch = loader.next(timeout=1.0)
                except queue.Empty:     # the loader is still making its first batch
                    continue
                if group is not None:       # the other ranks take this step with rank 0
                    group.tell(ddp.TRAIN, trainer.step, window.games_on_disk)
                t0 = time.perf_counter()
                losses = trainer.train_step(batch)
                t_train += time.perf_counter() - t0
                if losses.get("skipped"):
                    skipped_in_a_row += 1
                    print(f"trainer: step {trainer.step + 1} skipped: non-finite loss or gradients "
                          f"({trainer.skipped_steps} skipped in all)", file=sys.stderr, flush=True)
                    if skipped_in_a_row >= MAX_SKIPPED_IN_A_ROW:
                        print(f"trainer: {skipped_in_a_row} steps in a row had non-finite losses: "
                              f"stopping (the last checkpoint, step {saved_step}, is intact)",
                              file=sys.stderr, flush=True)
                        return 4
                    continue
                skipped_in_a_row = 0
                for k in LOSS_NAMES:
                    sums[k] += losses[k]
                count += 1
                if trainer.step % cfg.checkpoint_every == 0 and not sync_train:
                    parent = trainer.save(rd, parent, board_sizes)
                    saved_step = trainer.step
            if time.time() - last_metrics >= cfg.metrics_every:
                log()
    finally:
        loader.close()
        if group is not None:
            group.close(trainer.step, trainer=trainer)     # a DDPTrainer whenever there is a group
    if trainer.step != saved_step:
        trainer.save(rd, parent, board_sizes)
    log(final=True)
    rate = (trainer.step - start_step) / max(1e-9, time.time() - t_start)
    print(f"trainer: stopped at step {trainer.step} ({rate:.2f} steps/s)", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    return stage.main("python -m train.trainer", "The training stage of a run (normally started by train.loop).",
                      run, argv, [
                          ("--max-steps", dict(type=int, default=None, help="stop at this training step")),
                          ("--train-devices", dict(type=int, default=None, help="data-parallel processes (default: "
                                                   "the run's --train-devices; see train/learn/ddp.py)"))])


if __name__ == "__main__":
    sys.exit(main())
