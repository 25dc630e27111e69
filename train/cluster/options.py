"""The options of ``train.loop --ray`` (:class:`RayOptions`, its ``--ray*`` arguments) and
connecting to the cluster; the driver that uses them is :mod:`train.cluster.driver`."""
from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from typing import Any

from train.supervisor import REPO_ROOT


def ray_available() -> bool:
    try:
        import ray  # noqa: F401  (lazy: ray is optional and slow to import)
    except ImportError:
        return False
    return True


@dataclass
class RayOptions:
    """Where and with what resources the stages run (per invocation, not saved in the run)."""

    address: str | None = "local"        # "local" | "auto" | "ray://..." | HOST:PORT | None (already initialised)
    cpus: int | None = None               # --ray local: logical CPUs of the local cluster
    selfplay_cpus: float = 1.0
    selfplay_gpus: float = 0.0
    trainer_cpus: float = 1.0
    trainer_gpus: float = 0.0
    gate_cpus: float = 1.0
    gate_gpus: float = 0.0
    shared_run_dir: bool = False          # the run dir is mounted at the same path everywhere
    slice_s: float = 1.0                  # seconds of self-play per play() call
    gate_actors: int = 0                  # >0: gating games on that many remote actors (RemoteGateMatch)
    selfplay_resource: str | None = None  # custom resource (1 unit) each self-play actor requests
    gate_resource: str | None = None      # custom resource (1 unit) each gating actor requests
    stall_s: float = 600.0                # no self-play call returned for this long: stop, exit 1
    notice_s: float = 30.0                # an actor not started after this long: say why

    def selfplay_request(self) -> dict[str, Any]:
        return _request(self.selfplay_cpus, self.selfplay_gpus, self.selfplay_resource)

    def gate_request(self) -> dict[str, Any]:
        return _request(self.gate_cpus, self.gate_gpus, self.gate_resource)


def _request(cpus: float, gpus: float, resource: str | None) -> dict[str, Any]:
    """Ray actor options for a resource request."""
    return {"num_cpus": cpus, "num_gpus": gpus, **({"resources": {resource: 1}} if resource else {})}


def add_ray_arguments(ap: argparse.ArgumentParser) -> None:
    """The ``--ray*`` options of ``train.loop``."""
    g = ap.add_argument_group("Ray cluster (see train/cluster/driver.py)")
    g.add_argument("--ray", default=None, metavar="ADDRESS",
                   help="run the stages as Ray actors: 'local' (a Ray cluster on this machine), 'auto' "
                        "(the cluster 'ray start' joined), or a cluster address")
    g.add_argument("--ray-cpus", type=int, default=None, help="--ray local: logical CPUs (default: this machine's)")
    g.add_argument("--ray-selfplay-cpus", type=float, default=1.0, help="CPUs per self-play actor")
    g.add_argument("--ray-selfplay-gpus", type=float, default=0.0, help="GPUs per self-play actor")
    g.add_argument("--ray-trainer-cpus", type=float, default=1.0, help="CPUs of the trainer actor")
    g.add_argument("--ray-trainer-gpus", type=float, default=0.0, help="GPUs of the trainer actor")
    g.add_argument("--ray-gate-cpus", type=float, default=1.0, help="CPUs of the gating actor")
    g.add_argument("--ray-gate-gpus", type=float, default=0.0, help="GPUs of the gating actor")
    g.add_argument("--ray-shared-run-dir", action="store_true",
                   help="the run dir is on a filesystem every node mounts at the same path: the trainer "
                        "and gate may run on any node (default: on the driver's)")
    g.add_argument("--ray-slice", type=float, default=1.0, help="seconds of self-play per actor call")
    g.add_argument("--ray-gate-actors", type=int, default=0,
                   help="play gating games on this many Ray actors (any node; --ray-gate-cpus/-gpus each), "
                        "counted in start order by the driver; 0: one gate stage actor on the driver's node")
    g.add_argument("--ray-selfplay-resource", default=None, metavar="NAME",
                   help="each self-play actor also requests one unit of this custom resource, so it runs "
                        "only on nodes started with ray start --resources '{\"NAME\": N}'")
    g.add_argument("--ray-gate-resource", default=None, metavar="NAME",
                   help="the same for the --ray-gate-actors gating actors")
    g.add_argument("--ray-stall-timeout", type=float, default=600.0, metavar="SECONDS",
                   help="stop with exit status 1 when no self-play actor has returned a call for this long "
                        "(every node able to host one is gone and none joins)")


def options_from_namespace(a: argparse.Namespace) -> RayOptions:
    """The options from ``train.loop``'s arguments; ValueError for impossible values."""
    if a.ray_stall_timeout <= 0 or a.ray_slice <= 0:
        raise ValueError("--ray-stall-timeout and --ray-slice must be positive")
    return RayOptions(address=a.ray, cpus=a.ray_cpus, selfplay_cpus=a.ray_selfplay_cpus,
                      selfplay_gpus=a.ray_selfplay_gpus, trainer_cpus=a.ray_trainer_cpus,
                      trainer_gpus=a.ray_trainer_gpus, gate_cpus=a.ray_gate_cpus, gate_gpus=a.ray_gate_gpus,
                      shared_run_dir=a.ray_shared_run_dir, slice_s=a.ray_slice, gate_actors=a.ray_gate_actors,
                      selfplay_resource=a.ray_selfplay_resource, gate_resource=a.ray_gate_resource,
                      stall_s=a.ray_stall_timeout)


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
