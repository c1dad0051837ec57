"""The bed that test_suite_stop.py stops: run only by that test, as a pytest of its own (the
name is no `test_*.py`, so the suite never collects it). It builds what the beds build — a
namespaced cluster (prefix `kst`), a throttled loop device with a process in its cgroup, a
process in a namespace in a session of its own, an mpirun with two ranks started as
test_net_mpi.py starts one, a one-node Slurm running a batch job (slurmd forks the job's
slurmstepd twice: it leaves the process tree) — writes what it built to `$STOKER_STOP_BED/up.json`, then blocks
in `subprocess.run` until it is stopped."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness.blockdev import start_in_cgroup, throttled_disk
from tests.harness.netns import NetnsCluster
from tests.harness.slurm import SlurmCluster

PREFIX = "kst"
SLEEP = "3607"  # a sleep no other test starts
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


@pytest.fixture
def cluster() -> Iterator[NetnsCluster]:
    with NetnsCluster(prefix=PREFIX, nodes=2) as c:
        yield c


def test_a_bed_that_waits_to_be_stopped(cluster: NetnsCluster) -> None:
    out = Path(os.environ["STOKER_STOP_BED"])
    with throttled_disk(rate=50 * 2**20, size="64M") as disk, SlurmCluster(prefix=PREFIX, nodes=1) as slurm:
        job = slurm.sbatch(["--output", str(slurm.dir / "job.out"), "--wrap", f"sleep {SLEEP}"])
        in_cgroup = subprocess.Popen(
            ["sleep", SLEEP], preexec_fn=lambda: start_in_cgroup(disk.cgroup_procs), cwd=disk.mount
        )
        in_ns = cluster.popen(1, ["sleep", SLEEP])
        mpirun = shutil.which("mpirun")
        assert mpirun is not None
        ranks = subprocess.Popen(
            [mpirun, "-np", "2", "--oversubscribe", "sleep", SLEEP], env={**os.environ, **MPI_ENV}
        )
        up = {
            "pids": [in_cgroup.pid, in_ns.pid, ranks.pid, slurm.daemon_pid(0)],
            "slurm": str(slurm.dir),
            "job": job,
            "image": str(disk.mount.parent / "disk.img"),
            "mount": str(disk.mount),
            "cgroup": str(disk.cgroup_procs.parent),
        }
        (out / "up.json").write_text(json.dumps(up))
        print("bed up", file=sys.stderr, flush=True)
        subprocess.run(["sleep", SLEEP], check=False)
