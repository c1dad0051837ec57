"""launchers/torchrun.sh on a namespaced cluster of 3 nodes (REAL-TEST-BEDS §2) where node 2
dies mid-sweep: every process in its namespace is killed once the inter-node phase has written
its first record. The phase ends for the others within its limit (the watchdog), every record
written so far is kept, node 0 finds node 2 lost (no end of the phase, a still heartbeat), sets
it aside named with the others' last error, and the phase runs again on the two nodes left (new
ranks), then the phases after it. The verdict is fail (exit 1), naming node 2.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from reports.table.read import read_records
from tests.conftest import bed_missing, needs_root
from tests.harness import netns
from tests.integration.test_torchrun_setaside import NODES, spec, start_node

pytestmark = [needs_root, pytest.mark.slow, pytest.mark.alone]

PORT = 17961  # the launchers area's port range (phase i uses PORT + i, a run again + 10)
NET_TIMEOUT = 60  # a collective with a dead peer ends within this (the watchdog)
STALE = 10  # node 0 calls a node lost after its heartbeat is still this long
# a sweep long enough to be cut: 4 sizes, 5 iterations, world then inter-node
ARGS = [
    *("--profile", "quick", "--ops", "all_reduce", "--min-bytes", "1M", "--max-bytes", "8M"),
    *("--iters", "5", "--warmup", "1", "--net-timeout", str(NET_TIMEOUT)),
    *("--workloads", "checkpoint", "--ckpt-bytes", "8M", "--io-runtime", "2", "--compute-budget", "2"),
    *("--save-repeats", "0"),  # fio alone, as test_torchrun_setaside's
]


def scopes_written(out: Path) -> list[str]:
    path = out / "net.jsonl"
    if not path.is_file():
        return []
    return [json.loads(x).get("scope", "") for x in path.read_text().splitlines() if x.strip().endswith("}")]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[int], list[str], float]:
    reason = netns.unavailable_reason()
    if reason:
        bed_missing(reason)
    tmp = tmp_path_factory.mktemp("dead")
    for d in ("local", "shared"):
        (tmp / d).mkdir()
    out = tmp / "results"
    args = [*ARGS, "--spec", str(spec(tmp))]
    with netns.NetnsCluster(prefix="dn3", nodes=NODES) as c:
        procs = [start_node(c, i, tmp, PORT, args, NODE_STALE=str(STALE)) for i in range(NODES)]
        # the inter-node phase sweeps `world` first: its first record is the moment to die
        deadline = time.monotonic() + 600
        while "world" not in scopes_written(out) and time.monotonic() < deadline:
            if any(p.poll() is not None for p in procs):
                break
            time.sleep(0.2)
        c.kill_node(2)
        killed = time.monotonic()
        logs = [p.communicate(timeout=1200)[0] for p in procs]
    return out, [p.returncode for p in procs], logs, killed


def test_the_dead_node_is_set_aside_with_the_phase_it_died_in(
    run: tuple[Path, list[int], list[str], float],
) -> None:
    out, codes, logs, _ = run
    everything = "\n".join(x[-4000:] for x in logs)
    # node 0's verdict; node 1 ran an aborted phase (3); node 2 was killed
    assert codes[:2] == [1, 3], everything
    (line,) = [json.loads(x) for x in (out / "setaside.jsonl").read_text().splitlines()]
    assert (line["host"], line["stage"], line["phase"]) == ("dn3n2", "phase", "inter-node"), line
    assert line["reason"].startswith(
        f"stopped answering during phase inter-node: no end of the phase and no heartbeat from its launcher for {STALE} s"
    ), line
    assert "2 of 3 nodes go on after phase inter-node: dn3n0,dn3n1" in logs[0], everything


def test_the_phase_ran_again_on_the_nodes_left_and_every_record_is_kept(
    run: tuple[Path, list[int], list[str], float],
) -> None:
    out, _, logs, _ = run
    ran = [json.loads(x) for x in (out / "phases.jsonl").read_text().splitlines()]
    assert [
        p["phase"] for p in ran
    ] == "inventory compute intra-node inter-node inter-node pairs storage".split()
    assert [p["rc"] == 0 for p in ran] == [True, True, True, False, True, True, True], ran
    # the cut phase ended within its limit: the watchdog's timeout, the launcher's grace
    assert ran[3]["elapsed_s"] <= NET_TIMEOUT + 120, ran[3]
    recs = read_records(out).net.records()
    # what node 2 measured before it died is kept, and the sweeps after it are between the two left
    assert any("dn3n2" in r.hosts for r in recs if r.scope == "world")
    inter = [r for r in recs if r.scope == "inter-node"]
    assert inter and all(set(r.hosts) == {"dn3n0", "dn3n1"} for r in inter), [r.hosts for r in inter]
    pairs = [r for r in recs if r.scope == "pair"]
    assert pairs and all(set(r.hosts) <= {"dn3n0", "dn3n1"} for r in pairs)
    assert not list(out.glob(".stoker-*-*")), sorted(
        p.name for p in out.iterdir()
    )  # node 0 cleaned its marks


def test_the_verdict_fails_naming_the_dead_node(run: tuple[Path, list[int], list[str], float]) -> None:
    out, _, _, _ = run
    verdict = json.loads((out / "verdict.json").read_text())
    assert verdict["verdict"] == "fail"
    lost = [f for f in verdict["findings"] if f.get("set_aside")]
    assert [(f["check"], f["hosts"], f["phase"]) for f in lost] == [("node-lost", ["dn3n2"], "inter-node")]
    assert "stopped answering during phase inter-node" in lost[0]["message"]


@pytest.fixture(scope="module")
def two(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[int], list[str]]:
    """Two nodes (MIN_NODES 2, the default): node 1 dies in the inter-node phase."""
    reason = netns.unavailable_reason()
    if reason:
        bed_missing(reason)
    tmp = tmp_path_factory.mktemp("dead2")
    for d in ("local", "shared"):
        (tmp / d).mkdir()
    out = tmp / "results"
    args = [*ARGS, "--spec", str(spec(tmp))]
    with netns.NetnsCluster(prefix="dn2", nodes=2) as c:
        procs = [start_node(c, i, tmp, PORT + 40, args, NNODES="2", NODE_STALE=str(STALE)) for i in range(2)]
        deadline = time.monotonic() + 600
        while "world" not in scopes_written(out) and time.monotonic() < deadline:
            if any(p.poll() is not None for p in procs):
                break
            time.sleep(0.2)
        c.kill_node(1)
        logs = [p.communicate(timeout=1200)[0] for p in procs]
    return out, [p.returncode for p in procs], logs


def test_fewer_than_min_nodes_left_stops_the_multi_node_phases_exit_3(
    two: tuple[Path, list[int], list[str]],
) -> None:
    out, codes, logs = two
    assert codes[0] == 3, logs[0][-4000:]
    assert "fewer than MIN_NODES=2 nodes are left after phase inter-node" in logs[0], logs[0][-4000:]
    (line,) = [json.loads(x) for x in (out / "setaside.jsonl").read_text().splitlines()]
    assert (line["host"], line["stage"], line["phase"]) == ("dn2n1", "phase", "inter-node"), line
    ran = [
        (p["phase"], p["rc"] == 0) for p in map(json.loads, (out / "phases.jsonl").read_text().splitlines())
    ]
    # the phases after it are skipped: no line, no records of theirs
    assert ran == [("inventory", True), ("compute", True), ("intra-node", True), ("inter-node", False)], ran
    verdict = json.loads((out / "verdict.json").read_text())  # the report is still written
    assert [f["hosts"] for f in verdict["findings"] if f.get("set_aside")] == [["dn2n1"]]
