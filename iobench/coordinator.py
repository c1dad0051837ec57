"""Many nodes, one measurement: under torchrun, srun or mpirun with one task per node,
every node runs each workload at the same moment (a barrier before each) and rank 0
gathers the per-host results and writes the records.

The rendezvous is torch.distributed with gloo over TCP, imported only when there is more
than one task (`stoker io` alone never imports torch for this).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from reports.shared.errors import MeasurementAborted, UsageError

# (rank variable, size variable) of each launcher, most specific first
_LAUNCHER_ENV = (
    ("RANK", "WORLD_SIZE"),  # torchrun
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),  # Open MPI mpirun
    ("PMI_RANK", "PMI_SIZE"),  # MPICH / Intel MPI
    ("SLURM_PROCID", "SLURM_NTASKS"),  # srun
)


def host_name(environ: Mapping[str, str] | None = None) -> str:
    """This process's host name: STOKER_HOSTNAME when set (tests acting as several nodes
    on one machine, or a preferred name), else the system's."""
    env = os.environ if environ is None else environ
    return env.get("STOKER_HOSTNAME", "").strip() or socket.gethostname()


def launcher_rank(environ: Mapping[str, str]) -> tuple[int, int]:
    """(rank, world size) from the launcher's variables; (0, 1) outside a launcher."""
    for rank_var, size_var in _LAUNCHER_ENV:
        if rank_var in environ and size_var in environ:
            try:
                return int(environ[rank_var]), int(environ[size_var])
            except ValueError:
                raise UsageError(
                    f"{rank_var}/{size_var} are not numbers: {environ[rank_var]!r}/{environ[size_var]!r}"
                ) from None
    return 0, 1


@dataclass(kw_only=True, slots=True)
class Coordinator:
    """Barrier and gather across tasks. With one task, both are trivial."""

    rank: int = 0
    world: int = 1
    host: str = "localhost"
    _dist: Any = None

    def barrier(self) -> None:
        if self._dist is not None:
            self._call(self._dist.barrier)

    def gather(self, obj: Any) -> list[Any]:
        """Everyone's object, in rank order (every rank gets the list)."""
        if self._dist is None:
            return [obj]
        out: list[Any] = [None] * self.world
        self._call(self._dist.all_gather_object, out, obj)
        return out

    def _call(self, fn: Any, *args: Any) -> None:
        try:
            fn(*args)
        except RuntimeError as exc:  # a peer died or the rendezvous timed out
            raise MeasurementAborted(f"lost contact with another node: {str(exc).splitlines()[0]}") from None

    def close(self) -> None:
        if self._dist is not None:
            try:
                self._dist.destroy_process_group()
            except Exception:  # already torn down by a failure; nothing left to release
                pass
            self._dist = None


def connect(environ: Mapping[str, str] | None = None, timeout_s: float = 1800.0) -> Coordinator:
    env = os.environ if environ is None else environ
    rank, world = launcher_rank(env)
    host = host_name(env)
    if world <= 1:
        return Coordinator(rank=0, world=1, host=host)
    if not env.get("MASTER_ADDR") or not env.get("MASTER_PORT"):
        raise UsageError(
            f"{world} tasks found but MASTER_ADDR/MASTER_PORT are not set: export them "
            "(torchrun sets them; under srun/mpirun use the first node and a free port)"
        )
    try:
        import torch.distributed as dist
    except ImportError:
        raise UsageError(
            "several tasks need torch for the rendezvous: pip install torch (CPU is enough)"
        ) from None
    # env:// reuses torchrun's own store when there is one (TORCHELASTIC_USE_AGENT_STORE)
    dist.init_process_group(
        "gloo", init_method="env://", rank=rank, world_size=world, timeout=timedelta(seconds=timeout_s)
    )
    coord = Coordinator(rank=rank, world=world, host=host, _dist=dist)
    hosts = coord.gather(host)
    if len(set(hosts)) != len(hosts):
        coord.close()
        raise UsageError(
            "stoker io wants one task per node but several tasks share a host "
            f"({', '.join(sorted(hosts))}); launch with --ntasks-per-node=1 / --nproc-per-node=1"
        )
    return coord
