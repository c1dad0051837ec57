"""The acceptance job on the two-node Slurm bed with one node broken (REAL-TEST-BEDS §1): the
preflight sets n2 aside with its reason, the job goes on with n1 alone, the report judges
n1's sweeps and storage, and the verdict is fail (exit 1), not incomplete."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from reports.table.read import read_records
from tests.conftest import PYTHON, needs_root, needs_tool
from tests.harness.slurm import SlurmCluster
from tests.integration.test_slurm_acceptance import FIO_ALONE, finish, spec, submit

pytestmark = [
    needs_root,
    needs_tool("slurmctld"),
    needs_tool("nsenter"),
    needs_tool("sbatch"),
    pytest.mark.slow,
]

# what n2's python says instead of running: hand-written, in the shape of the loader's error
BROKEN = "python3: error while loading shared libraries: libpython3.so: cannot open shared object file"


@contextlib.contextmanager
def broken_python(cluster: SlurmCluster, node: int, tmp_path: Path) -> Iterator[None]:
    """The interpreter stoker runs on, replaced on `node` only: a file mounted over it in
    that node's own mount namespace (its slurmd's), so every step there fails to start."""
    with fake_python(cluster, node, tmp_path, f"#!/bin/sh\necho '{BROKEN}' >&2\nexit 127\n"):
        yield


@contextlib.contextmanager
def fake_python(cluster: SlurmCluster, node: int, tmp_path: Path, script: str) -> Iterator[None]:
    """The interpreter stoker runs on, replaced on `node` only by `script`: a file mounted over
    it in that node's own mount namespace (its slurmd's)."""
    fake = tmp_path / "fake-python"
    fake.write_text(script)
    fake.chmod(0o755)
    real = os.path.realpath(PYTHON)
    pid = str(cluster.daemon_pid(node))
    enter = ["nsenter", "-t", pid, "-m"]
    subprocess.run([*enter, "mount", "--bind", str(fake), real], check=True, timeout=30)
    try:
        yield
    finally:
        subprocess.run([*enter, "umount", real], check=False, timeout=30)


def submit_one_left(cluster: SlurmCluster, out: Path, cwd: Path) -> str:
    """The set-aside beds' job: a spec the bed meets (any figure that moved data is ok, so a
    fail is the set-aside's), going on with one node left, the storage phase with fio alone."""
    return submit(cluster, out, cwd, "--spec", str(spec(cwd, 100.0, 0.0001)), "--min-nodes", "1", *FIO_ALONE)


def test_a_broken_node_is_set_aside_and_the_rest_judged(tmp_path: Path) -> None:
    with SlurmCluster(prefix="sa", nodes=2, mpi_default="pmix") as cluster:
        for d in ("local", "shared"):
            (tmp_path / d).mkdir()
        out = tmp_path / "results"
        with broken_python(cluster, 1, tmp_path):
            job = submit_one_left(cluster, out, tmp_path)
            state, code, log = finish(cluster, job, tmp_path)
    assert (state, code) == ("FAILED", 1), log[-3000:]
    assert "n2 set aside: " + BROKEN in log
    assert [json.loads(x) for x in (out / "setaside.jsonl").read_text().splitlines()] == [
        {"host": "n2", "reason": BROKEN}
    ]
    phases = [json.loads(x) for x in (out / "phases.jsonl").read_text().splitlines()]
    assert [(p["phase"], p["rc"]) for p in phases] == [
        ("inventory", 0),
        ("compute", 0),
        ("intra-node", 0),
        ("storage", 0),
    ], log[-3000:]
    recs = read_records(out)
    assert {h for r in recs.net.records() for h in r.hosts} == {"n1"}
    assert {h for r in recs.io for h in r.per_host_bw_GBps} == {"n1"}
    verdict = json.loads((out / "verdict.json").read_text())
    assert verdict["verdict"] == "fail"
    aside = [f for f in verdict["findings"] if f["check"] == "preflight"]
    assert [(f["component"], f["hosts"], f["status"]) for f in aside] == [("node", ["n2"], "below_spec")]
    assert BROKEN in aside[0]["message"]
    judged: dict[str, set[str]] = {}  # n1's figures, judged against the spec
    for f in verdict["findings"]:
        if f["check"] != "preflight" and f["expected"] is not None:
            judged.setdefault(f["component"], set()).add(f["status"])
    for component in ("intra-node network", "local storage", "shared storage"):
        assert "ok" in judged.get(component, set()), (component, verdict["findings"])
    assert "n2" in (out / "report.md").read_text() and BROKEN in (out / "report.md").read_text()
