"""netbench.launch_env: one test per row of LAUNCHERS, each built from the variables that
launcher really sets. The srun sets were captured from `srun -N 2 -n 4 env` on the
project's two-node Slurm (tests/harness/slurm.py, Slurm 22.05) under MpiDefault none, pmi2
and pmix, task 2 (node n2, local 0); the others from each launcher's documented set."""

from __future__ import annotations

import pytest

from netbench.launch_env import LAUNCHERS, detect
from reports.shared.errors import UsageError

# what every task of a 2-node, 4-task srun step carries (rank 2: node n2, first task there)
SRUN_STEP = {
    "SLURMD_NODENAME": "n2",
    "SLURM_CLUSTER_NAME": "stokerla",
    "SLURM_CPUS_ON_NODE": "2",
    "SLURM_GTIDS": "2,3",
    "SLURM_JOBID": "1",
    "SLURM_JOB_ID": "1",
    "SLURM_JOB_NODELIST": "n[1-2]",
    "SLURM_JOB_NUM_NODES": "2",
    "SLURM_LOCALID": "0",
    "SLURM_NNODES": "2",
    "SLURM_NODEID": "1",
    "SLURM_NODELIST": "n[1-2]",
    "SLURM_NPROCS": "4",
    "SLURM_NTASKS": "4",
    "SLURM_PROCID": "2",
    "SLURM_STEPID": "0",
    "SLURM_STEP_ID": "0",
    "SLURM_STEP_NODELIST": "n[1-2]",
    "SLURM_STEP_NUM_NODES": "2",
    "SLURM_STEP_NUM_TASKS": "4",
    "SLURM_STEP_TASKS_PER_NODE": "2(x2)",
    "SLURM_TASKS_PER_NODE": "2(x2)",
    "SLURM_TASK_PID": "26283",
}
# MpiDefault=pmi2 adds these (no MPI_LOCALRANKID)
PMI2 = {"PMI_FD": "11", "PMI_JOBID": "1.0", "PMI_RANK": "2", "PMI_SIZE": "4", "SLURM_MPI_TYPE": "pmi2"}
# MpiDefault=pmix adds these: a rank but no size (once the cause of a false PASS)
PMIX = {
    "PMIX_NAMESPACE": "slurm.pmix.1.0",
    "PMIX_RANK": "2",
    "PMIX_HOSTNAME": "n2",
    "PMIX_VERSION": "4.2.2rc2",
    "PMIX_SERVER_URI2": "pmix-server.26503;tcp4://127.0.0.1:41891",
    "PMIX_SECURITY_MODE": "native",
    "SLURM_MPI_TYPE": "pmix",
    "SLURM_PMIX_MAPPING_SERV": "(vector,(0,2,2))",
}
# the sbatch script itself (the batch step): job variables, no step id
SBATCH_SCRIPT = {
    "SLURM_JOB_ID": "7",
    "SLURM_JOBID": "7",
    "SLURM_NNODES": "2",
    "SLURM_NTASKS": "4",
    "SLURM_NODEID": "0",
    "SLURM_PROCID": "0",
    "SLURM_LOCALID": "0",
    "SLURM_JOB_NUM_NODES": "2",
}
# mpirun inside an sbatch allocation starts one daemon per node with srun: its ranks see that
# daemon step's SLURM_* (PROCID = node index, NTASKS = node count) beside the MPI launcher's own
MPIRUN_DAEMON_STEP = {
    **SBATCH_SCRIPT,
    "SLURM_STEP_ID": "0",
    "SLURM_STEPID": "0",
    "SLURM_PROCID": "1",
    "SLURM_NTASKS": "2",
    "SLURM_STEP_NUM_TASKS": "2",
    "SLURM_LOCALID": "0",
    "SLURM_NODEID": "1",
}
OPEN_MPI = {
    "OMPI_COMM_WORLD_RANK": "3",
    "OMPI_COMM_WORLD_SIZE": "4",
    "OMPI_COMM_WORLD_LOCAL_RANK": "1",
    "OMPI_COMM_WORLD_LOCAL_SIZE": "2",
    "OMPI_COMM_WORLD_NODE_RANK": "1",
    "OMPI_UNIVERSE_SIZE": "4",
    "PMIX_RANK": "3",
    "PMIX_NAMESPACE": "prterun-n1-1234@1",
    "PMIX_SERVER_URI41": "prterun-n1-1234@0.0;tcp4://127.0.0.1:5000",
}
HYDRA = {"PMI_RANK": "3", "PMI_SIZE": "4", "PMI_FD": "6", "MPI_LOCALRANKID": "1", "MPI_LOCALNRANKS": "2"}
INTEL_MPI = {**HYDRA, "I_MPI_ROOT": "/opt/intel/oneapi/mpi/2021.10.0", "I_MPI_HYDRA_TOPOLIB": "hwloc"}
TORCHRUN = {
    "RANK": "3",
    "WORLD_SIZE": "4",
    "LOCAL_RANK": "1",
    "LOCAL_WORLD_SIZE": "2",
    "GROUP_RANK": "1",
    "ROLE_RANK": "3",
    "MASTER_ADDR": "n1",
    "MASTER_PORT": "29500",
    "TORCHELASTIC_RUN_ID": "none",
}

CASES = [
    # name, environment, (launcher, source, rank, world, local)
    ("srun MpiDefault=none", SRUN_STEP, ("srun", "srun step", 2, 4, 0)),
    ("srun MpiDefault=pmi2", {**SRUN_STEP, **PMI2}, ("srun", "srun step", 2, 4, 0)),
    ("srun MpiDefault=pmix", {**SRUN_STEP, **PMIX}, ("srun", "srun step", 2, 4, 0)),
    (
        "srun --mpi=pmix_v4",
        {**SRUN_STEP, **PMIX, "SLURM_MPI_TYPE": "pmix_v4"},
        ("srun", "srun step", 2, 4, 0),
    ),
    ("Open MPI mpirun", OPEN_MPI, ("mpirun", "Open MPI mpirun", 3, 4, 1)),
    ("Open MPI mpirun in sbatch", {**MPIRUN_DAEMON_STEP, **OPEN_MPI}, ("mpirun", "Open MPI mpirun", 3, 4, 1)),
    ("MPICH/Hydra mpiexec", HYDRA, ("mpirun", "MPICH/Hydra or Intel MPI mpiexec", 3, 4, 1)),
    (
        "Hydra mpiexec in sbatch",
        {**MPIRUN_DAEMON_STEP, **HYDRA},
        ("mpirun", "MPICH/Hydra or Intel MPI mpiexec", 3, 4, 1),
    ),
    ("Intel MPI mpirun", INTEL_MPI, ("mpirun", "MPICH/Hydra or Intel MPI mpiexec", 3, 4, 1)),
    ("torchrun", TORCHRUN, ("torchrun", "torchrun", 3, 4, 1)),
    ("torchrun under srun", {**SRUN_STEP, **PMIX, **TORCHRUN}, ("torchrun", "torchrun", 3, 4, 1)),
    ("bare PMI launcher", {"PMI_RANK": "2", "PMI_SIZE": "3"}, ("mpirun", "PMI launcher", 2, 3, 0)),
    ("bare PMIx launcher", {"PMIX_RANK": "2", "PMIX_NAMESPACE": "x"}, ("mpirun", "PMIx launcher", 2, 0, 0)),
    ("sbatch script, no step", SBATCH_SCRIPT, ("none", "", 0, 1, 0)),
    ("sbatch extern step", {**SBATCH_SCRIPT, "SLURM_STEP_ID": str(0xFFFFFFFE)}, ("none", "", 0, 1, 0)),
    ("nothing", {}, ("none", "", 0, 1, 0)),
]


@pytest.mark.parametrize(("env", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_each_launcher_resolves_rank_world_local(
    env: dict[str, str], want: tuple[str, str, int, int, int]
) -> None:
    le = detect(env)
    assert (le.launcher, le.source, le.rank, le.world, le.local_rank) == want


def test_every_row_of_the_table_is_exercised() -> None:
    seen = {detect(env).source for _, env, _ in CASES}
    assert seen >= {row.source for row in LAUNCHERS}


def test_a_garbled_rank_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="SLURM_PROCID='x'"):
        detect({**SRUN_STEP, "SLURM_PROCID": "x"})
