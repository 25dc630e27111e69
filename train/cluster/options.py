"""The options of ``train.loop --ray`` (:class:`RayOptions`, its ``--ray*`` arguments) and
connecting to the cluster; the driver that uses them is :mod:`train.cluster.driver`."""
from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from typing import Any

from engine.play.settings_cli import add_dataclass_arguments, dataclass_from_args, described
from train.supervisor import REPO_ROOT


def ray_available() -> bool:
    try:
        import ray  # noqa: F401  (lazy: ray is optional and slow to import)
    except ImportError:
        return False
    return True


RAY = "Ray cluster (see train/cluster/driver.py)"      # the title of train.loop's --ray* option group


@dataclass
class RayOptions:
    """Where and with what resources the stages run (per invocation, not saved in the run):
    ``train.loop``'s ``--ray*`` options (:func:`add_ray_arguments`)."""

    address: str | None = described("local", "run the stages as Ray actors: 'local' (a Ray cluster on this machine), "
                                              "'auto' (the cluster 'ray start' joined), or a cluster address",
                                     option="ray", metavar="ADDRESS", cli_default=None)   # None: already initialised
    cpus: int | None = described(None, "--ray local: logical CPUs (default: this machine's)", option="ray_cpus")
    selfplay_cpus: float = described(1.0, "CPUs per self-play actor", option="ray_selfplay_cpus")
    selfplay_gpus: float = described(0.0, "GPUs per self-play actor", option="ray_selfplay_gpus")
    trainer_cpus: float = described(1.0, "CPUs of the trainer actor", option="ray_trainer_cpus")
    trainer_gpus: float = described(0.0, "GPUs of the trainer actor", option="ray_trainer_gpus")
    gate_cpus: float = described(1.0, "CPUs of the gating actor", option="ray_gate_cpus")
    gate_gpus: float = described(0.0, "GPUs of the gating actor", option="ray_gate_gpus")
    shared_run_dir: bool = described(False, "the run dir is on a filesystem every node mounts at the same path: the "
                                            "trainer and gate may run on any node (default: on the driver's)",
                                     option="ray_shared_run_dir", flag="switch")
    slice_s: float = described(1.0, "seconds of self-play per actor call", option="ray_slice")
    gate_actors: int = described(0, "play gating games on this many Ray actors (any node; --ray-gate-cpus/-gpus "
                                    "each), counted in start order by the driver; 0: one gate stage actor on the "
                                    "driver's node", option="ray_gate_actors")
    selfplay_resource: str | None = described(None, "each self-play actor also requests one unit of this custom "
                                                    "resource, so it runs only on nodes started with ray start "
                                                    "--resources '{\"NAME\": N}'",
                                              option="ray_selfplay_resource", metavar="NAME")
    gate_resource: str | None = described(None, "the same for the --ray-gate-actors gating actors",
                                          option="ray_gate_resource", metavar="NAME")
    stall_s: float = described(600.0, "stop with exit status 1 when no self-play actor has returned a call for this "
                                      "many seconds (every node able to host one is gone and none joins)",
                               option="ray_stall_timeout", metavar="SECONDS")
    notice_s: float = 30.0                # an actor not started after this many seconds: say why

    def selfplay_request(self) -> dict[str, Any]:
        return _request(self.selfplay_cpus, self.selfplay_gpus, self.selfplay_resource)

    def gate_request(self) -> dict[str, Any]:
        return _request(self.gate_cpus, self.gate_gpus, self.gate_resource)


def _request(cpus: float, gpus: float, resource: str | None) -> dict[str, Any]:
    """Ray actor options for a resource request."""
    return {"num_cpus": cpus, "num_gpus": gpus, **({"resources": {resource: 1}} if resource else {})}


def add_ray_arguments(ap: argparse.ArgumentParser) -> None:
    """The ``--ray*`` options of ``train.loop``: RayOptions' fields."""
    add_dataclass_arguments(ap, RayOptions, {RAY: ap.add_argument_group(RAY)})


def options_from_namespace(a: argparse.Namespace) -> RayOptions:
    """The options from ``train.loop``'s arguments; ValueError for impossible values."""
    if a.ray_stall_timeout <= 0 or a.ray_slice <= 0:
        raise ValueError("--ray-stall-timeout and --ray-slice must be positive")
    return dataclass_from_args(a, RayOptions)


def _alive_nodes() -> list[dict[str, Any]]:
    import ray  # lazy: ray is optional and slow to import
    return [n for n in ray.nodes() if n.get("Alive")]


def init_ray(opts: RayOptions) -> bool:
    """Connects to (or starts) the cluster; returns whether this call initialised Ray (and so
    must shut it down)."""
    import ray  # lazy: ray is optional and slow to import
    if ray.is_initialized():
        return False
    env = {"env_vars": {"PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}}
    if opts.address in (None, "local"):
        ray.init(num_cpus=opts.cpus or os.cpu_count(), include_dashboard=False, runtime_env=env,
                 log_to_driver=False)
    else:
        ray.init(address=opts.address, runtime_env=env, log_to_driver=False)
    return True
