"""Which launcher started this process, and this rank's place in the job (pure).

torchrun: RANK/WORLD_SIZE/LOCAL_RANK/MASTER_ADDR/MASTER_PORT. Open MPI's mpirun:
OMPI_COMM_WORLD_RANK/_SIZE/_LOCAL_RANK; MPICH/Hydra: PMI_RANK/PMI_SIZE; PMIx: PMIX_RANK.
srun: SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID (only inside a step: SLURM_STEP_ID set).
torch.distributed needs a rendezvous address that only torchrun provides; under srun or
mpirun it has to be exported (MASTER_ADDR, MASTER_PORT).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from reports.errors import UsageError


_SLURM_SPECIAL_STEPS = 0xFFFFFFF0


@dataclass(frozen=True, kw_only=True, slots=True)
class LaunchEnv:
    launcher: str                 # "torchrun" | "mpirun" | "srun" | "none"
    rank: int = 0
    world: int = 1
    local_rank: int = 0
    master_addr: str | None = None
    master_port: int | None = None


def _int(env: Mapping[str, str], *names: str) -> int | None:
    for name in names:
        value = env.get(name, "").strip()
        if value:
            try:
                return int(value)
            except ValueError:
                raise UsageError(f"environment variable {name}={value!r} is not a whole number") from None
    return None


def detect(env: Mapping[str, str]) -> LaunchEnv:
    """Read the launcher's environment; 'none' when nothing launched us."""
    addr = env.get("MASTER_ADDR") or None
    port = _int(env, "MASTER_PORT")
    if _int(env, "RANK") is not None and _int(env, "WORLD_SIZE") is not None:
        return LaunchEnv(launcher="torchrun", rank=_int(env, "RANK") or 0, world=_int(env, "WORLD_SIZE") or 1,
                         local_rank=_int(env, "LOCAL_RANK") or 0, master_addr=addr, master_port=port)
    mpi_rank = _int(env, "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK")
    if mpi_rank is not None:
        world = _int(env, "OMPI_COMM_WORLD_SIZE", "PMI_SIZE")
        local = _int(env, "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "PMI_LOCAL_RANK")
        return LaunchEnv(launcher="mpirun", rank=mpi_rank, world=world or 0, local_rank=local or 0,
                         master_addr=addr, master_port=port)
    step = _int(env, "SLURM_STEP_ID")
    # the batch script and extern steps carry special ids near 2^32 (0xfffffffe, ...):
    # a plain `stoker net` in an sbatch script is not a rank of an srun step
    if step is not None and step < _SLURM_SPECIAL_STEPS and _int(env, "SLURM_PROCID") is not None:
        return LaunchEnv(launcher="srun", rank=_int(env, "SLURM_PROCID") or 0, world=_int(env, "SLURM_NTASKS") or 1,
                         local_rank=_int(env, "SLURM_LOCALID") or 0, master_addr=addr, master_port=port)
    return LaunchEnv(launcher="none")


def require_rendezvous(le: LaunchEnv) -> tuple[str, int]:
    """MASTER_ADDR/PORT for torch.distributed, or a one-line UsageError saying to export them."""
    if le.master_addr and le.master_port:
        return le.master_addr, le.master_port
    raise UsageError(
        f"under {le.launcher} torch.distributed needs a rendezvous address: export MASTER_ADDR "
        "(the first node's host name) and MASTER_PORT (a free port, e.g. 29500) before launching, "
        "or use --backend mpi"
    )
