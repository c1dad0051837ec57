"""launchers/torchrun.sh on a namespaced cluster of 3 nodes (REAL-TEST-BEDS §2) where node 2
starts late: only after node 0 closed the start barrier (SYNC_TIMEOUT). Node 0 sets it aside as
never started (it knows it only by its node rank), the two nodes that started go on in a world of
two, the report judges them, and the verdict is fail (exit 1), naming node rank 2. The late node
finds the barrier closed and ends (exit 0) saying so.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from reports.table.read import read_records
from tests.conftest import bed_missing, needs_root
from tests.harness import netns
from tests.integration.test_torchrun_setaside import NODES, SMALL, spec, start_node

pytestmark = [needs_root, pytest.mark.slow]

PORT = 17991  # the launchers area's port range (phase i uses PORT + i)
SYNC = 15  # the start barrier's limit


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[int], list[str]]:
    reason = netns.unavailable_reason()
    if reason:
        bed_missing(reason)
    tmp = tmp_path_factory.mktemp("late")
    for d in ("local", "shared"):
        (tmp / d).mkdir()
    out = tmp / "results"
    args = [*SMALL, "--spec", str(spec(tmp))]
    with netns.NetnsCluster(prefix="lt3", nodes=NODES) as c:

        def start(i: int) -> subprocess.Popen[str]:
            return start_node(c, i, tmp, PORT, args, SYNC_TIMEOUT=str(SYNC))

        procs = [start(0), start(1)]
        # node 2 starts once node 0 has closed the start barrier without it
        deadline = time.monotonic() + SYNC + 120
        while not (out / ".stoker-started").is_file() and time.monotonic() < deadline:
            time.sleep(0.5)
        procs.append(start(2))
        logs = [p.communicate(timeout=900)[0] for p in procs]
    return out, [p.returncode for p in procs], logs


def test_the_late_node_is_set_aside_as_never_started(run: tuple[Path, list[int], list[str]]) -> None:
    out, codes, logs = run
    everything = "\n".join(x[-3000:] for x in logs)
    assert codes == [1, 0, 0], everything  # node 0's verdict; node 1's run ended; node 2 ended at once
    assert "node(s) 2 did not reach the start barrier within SYNC_TIMEOUT=15 s" in logs[0], everything
    assert "reached the start barrier after node 0 closed it" in logs[2], everything
    assert [json.loads(x) for x in (out / "setaside.jsonl").read_text().splitlines()] == [
        {
            "host": "node-rank-2",
            "reason": f"never started: it did not reach the start barrier within {SYNC} s",
            "stage": "start",
        }
    ]
    assert not (out / "preflight" / "lt3n2.log").exists()  # it ran no preflight


def test_the_two_nodes_that_started_are_measured_and_the_verdict_names_the_late_one(
    run: tuple[Path, list[int], list[str]],
) -> None:
    out, _, logs = run
    ran = [json.loads(x) for x in (out / "phases.jsonl").read_text().splitlines()]
    assert [(p["phase"], p["rc"]) for p in ran] == [
        (name, 0) for name in "inventory compute intra-node inter-node pairs storage".split()
    ], logs[0][-3000:]
    recs = read_records(out)
    inter = [r for r in recs.net.records() if r.scope == "inter-node"]
    assert inter and all(set(r.hosts) == {"lt3n0", "lt3n1"} for r in inter)
    verdict = json.loads((out / "verdict.json").read_text())
    assert verdict["verdict"] == "fail"
    aside = [f for f in verdict["findings"] if f.get("set_aside")]
    assert [(f["check"], f["hosts"], f["stage"]) for f in aside] == [("start", ["node-rank-2"], "start")]
    assert "never started" in aside[0]["message"]
