"""The acceptance job on the two-node Slurm bed with one node that never gets going (REAL-TEST-BEDS
§1): n2's python hangs without a word, as a node stuck starting (an image still pulling, a hung
mount). Under one allocation the nodes start together, so the job's start barrier is the
preflight step and its limit (2 minutes): n2 says nothing by then, is set aside as never started,
the job goes on with n1, and the verdict is fail (exit 1)."""

from __future__ import annotations

import json
from pathlib import Path

from reports.shared.setaside import NO_ANSWER
from tests.harness.slurm import SlurmCluster
from tests.integration.test_slurm_acceptance import finish
from tests.integration.test_slurm_setaside import fake_python, submit_one_left
from tests.integration.test_slurm_setaside import pytestmark as slurm_bed_marks

pytestmark = slurm_bed_marks  # root, the Slurm daemons, nsenter: as the set-aside test's


def test_a_node_that_never_starts_is_set_aside_and_the_rest_judged(tmp_path: Path) -> None:
    with SlurmCluster(prefix="sl", nodes=2, mpi_default="pmix") as cluster:
        for d in ("local", "shared"):
            (tmp_path / d).mkdir()
        out = tmp_path / "results"
        with fake_python(cluster, 1, tmp_path, "#!/bin/sh\nexec sleep 900\n"):
            job = submit_one_left(cluster, out, tmp_path)
            state, code, log = finish(cluster, job, tmp_path, timeout_s=900)
    assert (state, code) == ("FAILED", 1), log[-3000:]
    (line,) = [json.loads(x) for x in (out / "setaside.jsonl").read_text().splitlines()]
    assert line["host"] == "n2", line
    # killed at the step's limit, n2 said nothing of its own: set aside as never started
    assert (out / "preflight" / "n2.log").read_text() == ""
    assert line["reason"] == NO_ANSWER, line
    phases = [json.loads(x) for x in (out / "phases.jsonl").read_text().splitlines()]
    ran = [(n, 0) for n in "inventory compute intra-node storage".split()]  # n1 alone: no inter-node phase
    assert [(p["phase"], p["rc"]) for p in phases] == ran, log[-3000:]
    verdict = json.loads((out / "verdict.json").read_text())
    assert verdict["verdict"] == "fail"
    assert [f["hosts"] for f in verdict["findings"] if f.get("set_aside")] == [["n2"]]
