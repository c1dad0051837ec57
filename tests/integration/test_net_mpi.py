"""mpi4py with a real MPI (Debian's Open MPI) at 2 ranks: every op, out-of-place and in
place, checked against the nccl-tests formulas with factors worked out by hand."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import PYTHON, bed_missing

FACTOR_2 = {
    "all_reduce": 1.0,
    "all_gather": 0.5,
    "reduce_scatter": 0.5,
    "alltoall": 0.5,
    "broadcast": 1.0,
    "reduce": 1.0,
    "sendrecv": 1.0,
    "gather": 0.5,  # (n-1)/n as nccl-tests' GatherGetBw, ScatterGetBw, AlltoAllvGetBw
    "scatter": 0.5,
    "alltoallv": 0.5,
    "hypercube": 1.0,  # busbw = algbw (src/hypercube.cu); its algbw is half the size / time at 2 ranks
}
MPI_ENV = {
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    "OMPI_MCA_btl_tcp_if_include": "lo",
    "OMPI_MCA_oob_tcp_if_include": "lo",
}


def _env() -> dict[str, str]:
    return {
        **{k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")},
        **MPI_ENV,
    }


@pytest.fixture(scope="module")
def mpirun() -> str:
    exe = shutil.which("mpirun")
    if exe is None:
        bed_missing("mpirun not installed (./install.sh installs Open MPI)")
    installed = subprocess.run(
        [PYTHON, "-c", "import importlib.util as u; print(u.find_spec('mpi4py') is not None)"],
        capture_output=True,
        text=True,
        timeout=60,
        env=_env(),
    )
    if installed.stdout.strip() != "True":
        bed_missing("mpi4py not installed (pip install mpi4py)")
    # both are here (as in CI): an mpi4py that will not load with this MPI is a failure, not a skip
    probe = subprocess.run(
        [PYTHON, "-c", "from mpi4py import MPI; print(MPI.Get_library_version())"],
        capture_output=True,
        text=True,
        timeout=60,
        env=_env(),
    )
    assert probe.returncode == 0, f"mpi4py does not load with this MPI: {probe.stderr.strip()[-500:]}"
    return exe


def test_mpi_two_ranks_every_op(tmp_path: Path, mpirun: str) -> None:
    out = tmp_path / "nb-mpi"
    cmd = [
        mpirun,
        "-np",
        "2",
        "--oversubscribe",
        PYTHON,
        "-m",
        "launchers.cli",
        "net",
        "--backend",
        "mpi",
        "-b",
        "8",
        "-e",
        "128K",
        "-f",
        "16",
        "-n",
        "5",
        "--in-place",
        "--scopes",
        "world",
        "--out",
        str(out),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=_env())
    assert proc.returncode == 0, proc.stderr[-2000:]
    recs = [json.loads(x) for x in (out / "net.jsonl").read_text().splitlines()]
    assert {r["op"] for r in recs} == set(FACTOR_2)
    for r in recs:
        assert (r["backend"], r["ranks"], r["scope"], r["wrong"]) == ("mpi", 2, "world", 0), r
        share = 0.5 if r["op"] == "hypercube" else 1.0  # hypercube: what one rank receives, (n-1)/n
        assert r["algbw_GBps"] == pytest.approx(share * r["bytes"] / r["time_s"] / 1e9, rel=1e-9)
        assert r["busbw_GBps"] == pytest.approx(r["algbw_GBps"] * FACTOR_2[r["op"]], rel=1e-9)
    # MPI has real out-of-place all_reduce, and in-place with MPI_IN_PLACE
    assert {r["in_place"] for r in recs if r["op"] == "all_reduce"} == {False, True}
    assert sorted(r["bytes"] for r in recs if r["op"] == "all_reduce" and not r["in_place"]) == [
        8,
        128,
        2048,
        32768,
    ]
    manifest = json.loads((out / "manifest.jsonl").read_text().splitlines()[0])
    assert manifest["versions"]["mpi"].startswith(("Open MPI", "MPICH")) and manifest["launcher"] == "mpirun"
