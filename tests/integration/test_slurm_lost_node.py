"""The acceptance job on a three-node Slurm bed (REAL-TEST-BEDS §1) where n2 is lost mid-sweep,
once the inter-node phase has written a three-node record: its ranks SIGKILLed (srun reports
n2's tasks `Killed`), or the whole node (every process in n2's slurmd's mount namespace: slurmd,
the step's slurmstepd, the ranks; slurmctld finds it down after SlurmdTimeout, 10 s here, and
srun reports `Node failure on n2`). Either way the job sets n2 aside (OUT/setaside.jsonl, stage
`phase`, named with srun's line), runs the inter-node phase once more on n1 and n3 with new
ranks, and the phases after it run on those two. Every record written before the loss is kept;
the verdict is fail (exit 1), naming n2. Three nodes so that the run again is a real
two-node phase (with two, one node would be left and the inter-node phases skipped);
--min-nodes 2, so that the two left may go on."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from pathlib import Path

import pytest

from reports.table.read import read_records
from tests.harness.slurm import SlurmCluster
from tests.integration.test_slurm_acceptance import NET_TIMEOUT_S, finish, ranks_on, spec, submit
from tests.integration.test_slurm_setaside import pytestmark as slurm_bed_marks

pytestmark = slurm_bed_marks  # root, the Slurm daemons: as the set-aside test's


def three_node_records(out: Path) -> bool:
    net = out / "net.jsonl"
    lines = net.read_text().splitlines() if net.exists() else []
    return any(json.loads(x).get("nodes") == 3 for x in lines if x.strip().endswith("}"))


# how n2 dies -> srun's line that names it
DEATHS = {
    "ranks": "srun: error: n2: tasks 2-3: Killed",
    "node": "srun: error: Node failure on n2",
}


# the suite runs the whole node's death, which goes through the most of the job (the step's Node
# failure, --no-kill, the run again beside the step still completing); "ranks" (n2's ranks
# SIGKILLed, srun's `Killed`) passed the same test in 103 s on 2026-11-29: add it to the list to
# run it (tests/unit/test_lost_step.py reads both of srun's lines from the bed's real bytes)
@pytest.mark.parametrize("death", ["node"])
def test_a_node_killed_mid_sweep_is_set_aside_and_the_phase_runs_again_on_the_rest(
    death: str, tmp_path: Path
) -> None:
    with SlurmCluster(prefix="sk", nodes=3, mpi_default="pmix", extra_conf=["SlurmdTimeout=10"]) as cluster:
        for d in ("local", "shared"):
            (tmp_path / d).mkdir()
        out = tmp_path / "results"
        # larger sizes stretch the inter-node sweep, so that it can be caught mid-way
        job = submit(
            cluster,
            out,
            tmp_path,
            *("--spec", str(spec(tmp_path, 100.0, 0.0001)), "--min-nodes", "2", "--save-repeats", "0"),
            *("--max-bytes", "16M", "--iters", "5", "--net-timeout", str(NET_TIMEOUT_S)),
            nodes=3,
        )
        deadline = time.monotonic() + 300
        killed: list[int] = []
        while not killed and time.monotonic() < deadline:
            if three_node_records(out):  # the inter-node sweep is under way: n2 dies now
                ranks = ranks_on(cluster, 1, job, b"world,inter-node")  # this bed's n2
                killed = sorted(cluster.node_pids(1)) if death == "node" and ranks else ranks
                for pid in killed:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
            time.sleep(0.2)
        assert killed, "never caught the inter-node phase running"
        state, code, log = finish(cluster, job, tmp_path, timeout_s=900)
    assert (state, code) == ("FAILED", 1), log[-4000:]
    # n2 set aside during inter-node, named with srun's word and its own last line
    (line,) = [json.loads(x) for x in (out / "setaside.jsonl").read_text().splitlines()]
    assert (line["host"], line["stage"], line["phase"]) == ("n2", "phase", "inter-node"), line
    assert DEATHS[death] in line["reason"], line
    assert "2 nodes go on after phase inter-node: n1,n3; it runs again on them" in log, log[-4000:]
    # the phase aborted, then ran again on the two left (its own log); the phases after it ran
    phases = [json.loads(x) for x in (out / "phases.jsonl").read_text().splitlines()]
    ran = [(p["phase"], p["rc"] == 0, p.get("log")) for p in phases]
    assert ran == [
        ("inventory", True, "phase-inventory.log"),
        ("compute", True, "phase-compute.log"),
        ("intra-node", True, "phase-intra-node.log"),
        ("inter-node", False, "phase-inter-node.log"),
        ("inter-node", True, "phase-inter-node-again.log"),
        ("pairs", True, "phase-pairs.log"),
        ("storage", True, "phase-storage.log"),
    ], log[-4000:]
    # every record written before the loss is kept; the run again and the phases after it left n2 out
    recs = read_records(out).net.records()
    assert any(r.nodes == 3 and "n2" in r.hosts for r in recs if r.scope == "world")
    again = [r for r in recs if r.scope == "inter-node" and r.nodes == 2]
    assert again and all(set(r.hosts) == {"n1", "n3"} for r in again), [r.hosts for r in again]
    pairs = [r for r in recs if r.scope == "pair"]
    assert pairs and all(set(r.hosts) <= {"n1", "n3"} for r in pairs)
    verdict = json.loads((out / "verdict.json").read_text())
    assert verdict["verdict"] == "fail"
    lost = [f for f in verdict["findings"] if f.get("set_aside")]
    assert [(f["check"], f["hosts"], f["phase"]) for f in lost] == [("node-lost", ["n2"], "inter-node")]
    assert (
        "Lost mid-phase, left out of the phases after it: n2 (phase inter-node)."
        in (out / "report.md").read_text().splitlines()[:6]
    )
