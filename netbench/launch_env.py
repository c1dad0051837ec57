"""Which launcher started this process, and this rank's place in the job (pure).

One table, LAUNCHERS: the first row whose `when` variables are all set decides. The order
is the point, because real launchers stack their variables on top of each other:
- torchrun under srun carries SLURM_* too; its RANK/WORLD_SIZE are the ones torch uses.
- Open MPI's mpirun inside an sbatch allocation starts its daemons with srun, so its ranks
  also see SLURM_STEP_ID/SLURM_PROCID (the daemon's: one per node). OMPI_COMM_WORLD_* are
  set only by Open MPI's own launcher, so they win.
- MPICH/Hydra and Intel MPI (a Hydra) likewise bootstrap through srun; MPI_LOCALRANKID is
  set by Hydra's proxy and never by srun, so it tells them from srun's pmi2 plugin.
- srun's MPI plugins put PMI_* (pmi2) or PMIX_* (pmix) beside SLURM_*: inside an srun step
  Slurm's own variables decide, whatever the plugin (PMIx gives no world size at all).
- Bare PMI_RANK/PMIX_RANK outside any of these: some other PMI launcher.
torch.distributed needs a rendezvous address that only torchrun provides; under srun or
mpirun it has to be exported (MASTER_ADDR, MASTER_PORT).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from reports.shared.errors import UsageError

_SLURM_SPECIAL_STEPS = 0xFFFFFFF0


@dataclass(frozen=True, kw_only=True, slots=True)
class LaunchEnv:
    launcher: str  # "torchrun" | "mpirun" | "srun" | "none"
    rank: int = 0
    world: int = 1
    local_rank: int = 0
    master_addr: str | None = None
    master_port: int | None = None
    source: str = ""  # the LAUNCHERS row that decided, for messages


@dataclass(frozen=True, kw_only=True, slots=True)
class Launcher:
    """One row of the table: when these variables are set, read rank/world/local from these."""

    source: str
    launcher: str
    when: tuple[str, ...]
    rank: tuple[str, ...]
    world: tuple[str, ...]
    local: tuple[str, ...]
    extra: Callable[[Mapping[str, str]], bool] | None = None  # a further condition


def _int(env: Mapping[str, str], *names: str) -> int | None:
    for name in names:
        value = env.get(name, "").strip()
        if value:
            try:
                return int(value)
            except ValueError:
                raise UsageError(f"environment variable {name}={value!r} is not a whole number") from None
    return None


def _in_srun_step(env: Mapping[str, str]) -> bool:
    # the batch script and extern steps carry special ids near 2^32 (0xfffffffe, ...):
    # a plain `stoker net` in an sbatch script is not a rank of an srun step
    step = _int(env, "SLURM_STEP_ID", "SLURM_STEPID")
    return step is not None and step < _SLURM_SPECIAL_STEPS


LAUNCHERS: tuple[Launcher, ...] = (
    Launcher(
        source="torchrun",
        launcher="torchrun",
        when=("RANK", "WORLD_SIZE"),
        rank=("RANK",),
        world=("WORLD_SIZE",),
        local=("LOCAL_RANK",),
    ),
    Launcher(
        source="Open MPI mpirun",
        launcher="mpirun",
        when=("OMPI_COMM_WORLD_RANK",),
        rank=("OMPI_COMM_WORLD_RANK",),
        world=("OMPI_COMM_WORLD_SIZE",),
        local=("OMPI_COMM_WORLD_LOCAL_RANK",),
    ),
    Launcher(
        source="MPICH/Hydra or Intel MPI mpiexec",
        launcher="mpirun",
        when=("PMI_RANK", "MPI_LOCALRANKID"),
        rank=("PMI_RANK",),
        world=("PMI_SIZE",),
        local=("MPI_LOCALRANKID",),
    ),
    Launcher(
        source="srun step",
        launcher="srun",
        when=("SLURM_PROCID",),
        extra=_in_srun_step,
        rank=("SLURM_PROCID",),
        world=("SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"),
        local=("SLURM_LOCALID",),
    ),
    Launcher(
        source="PMI launcher",
        launcher="mpirun",
        when=("PMI_RANK",),
        rank=("PMI_RANK",),
        world=("PMI_SIZE",),
        local=("PMI_LOCAL_RANK",),
    ),
    Launcher(
        source="PMIx launcher",
        launcher="mpirun",
        when=("PMIX_RANK",),
        rank=("PMIX_RANK",),
        world=(),
        local=(),
    ),
)


def detect(env: Mapping[str, str]) -> LaunchEnv:
    """Read the launcher's environment; 'none' when nothing launched us.

    world is 0 when the launcher does not say (a bare PMIx launcher): the backend then
    asks for WORLD_SIZE or --backend mpi."""
    for row in LAUNCHERS:
        if all(env.get(name, "").strip() for name in row.when) and (row.extra is None or row.extra(env)):
            return LaunchEnv(
                launcher=row.launcher,
                source=row.source,
                rank=_int(env, *row.rank) or 0,
                world=_int(env, *row.world) or 0 if row.world else 0,
                local_rank=_int(env, *row.local) or 0 if row.local else 0,
                master_addr=env.get("MASTER_ADDR") or None,
                master_port=_int(env, "MASTER_PORT"),
            )
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
