"""launchers/torchrun.sh on a namespaced cluster of 3 nodes (REAL-TEST-BEDS §2) whose results
dirs are each node's own (`SHARED_OUT=0`: three different paths, as three pods' emptyDirs),
with node 2's python not a python, as when its install is broken. No file system carries the
preflight: each node's output reaches node 0 through its preflight relay over the nodes' own
network (launchers/local/preflight_relay.py, spoken from bash). Node 0 sets node 2 aside with
its loader line as the reason, the two healthy nodes go on in a world of two, the report
judges them, names node 2 and where its output is, and the verdict is fail (exit 1). And a
node of another run is refused by the relay in one line, which stops the run before any sweep.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from reports.table.read import read_records
from tests.conftest import REPO, STOKER, bed_missing, needs_root
from tests.harness import netns
from tests.integration.test_torchrun_setaside import BROKEN, SMALL  # node 2's loader line, the small run

# alone: 3 nodes x 2 gloo ranks and three preflights at once on 2 cores; another bed's load
# beside it stretches the start barrier and the preflights towards their limits
pytestmark = [needs_root, pytest.mark.slow, pytest.mark.alone]

NODES, RANKS = 3, 2
PORT = 17991  # the launchers area's port range (phase i uses PORT + i, the relay PORT - 1)
RUN = "pl3-local-run"
# the shared-OUT bed's spec: every network figure advertised at 100 GB/s with a threshold of 1e-4,
# so the swept figures are `ok` (the one pair, judged against its own rule, fails too; the unit
# tests show a set-aside line alone makes the verdict fail)
SPEC = (
    "name: pl3\ngpus_per_node: 2\nnetwork: {intra_node: {GBps: 100}, inter_node: {GBps: 100}}\n"
    "thresholds: {network: 0.0001, storage: 0.0001}\n"
)

HANDSHAKE = (".stoker-seen-", ".stoker-pf-", ".stoker-go", ".stoker-relay-up")
Run = tuple[list[Path], list[tuple[int, str, str]]]


def node_env(c: netns.NetnsCluster, i: int, tmp: Path, **given: str) -> dict[str, str]:
    """Node i's torchrun.sh settings: its own results dir (tmp/node<i>/results) and local dir."""
    base = {
        "NNODES": str(NODES),
        "NODE_RANK": str(i),
        "MASTER_ADDR": c.addr(0),
        "MASTER_PORT": str(PORT),
        "NPROC_PER_NODE": str(RANKS),
        "OUT": str(tmp / f"node{i}" / "results"),
        "SHARED_OUT": "0",
        "STOKER_RUN_ID": RUN,
        "LOCAL_IO": str(tmp / f"node{i}" / "local"),
        "BACKEND": "gloo",
        "STOKER_PY": STOKER[0],
    }
    return c.env(i, {**base, **given})


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    reason = netns.unavailable_reason()
    if reason:
        bed_missing(reason)
    tmp = tmp_path_factory.mktemp("pl3")
    spec = tmp / "spec.yaml"
    spec.write_text(SPEC, encoding="utf-8")
    broken = tmp / "broken-python"
    broken.write_text(f"#!/bin/sh\necho '{BROKEN}' >&2\nexit 127\n")
    broken.chmod(0o755)
    outs = [tmp / f"node{i}" / "results" for i in range(NODES)]  # each node's own results dir
    with netns.NetnsCluster(prefix="pl3", nodes=NODES) as c:
        jobs = []
        for i in range(NODES):
            env = node_env(c, i, tmp, SYNC_TIMEOUT="60", STOKER_PY=str(broken) if i == 2 else STOKER[0])
            argv = ["bash", str(REPO / "launchers" / "torchrun.sh"), *SMALL, "--spec", str(spec)]
            jobs.append((i, argv, env))
        res = c.run_all(jobs, timeout=600)
    return outs, res


def logs_of(res: list[tuple[int, str, str]]) -> str:
    return "\n".join(f"--- node {i} rc={rc}\n{o[-2500:]}\n{e[-1500:]}" for i, (rc, o, e) in enumerate(res))


def test_the_broken_node_is_set_aside_through_the_relay(run: Run) -> None:
    outs, res = run
    logs = logs_of(res)
    assert [rc for rc, _, _ in res] == [1, 0, 0], logs  # node 0's verdict; the others' own runs ended
    assert "pl3n2 set aside: " + BROKEN in res[0][2], logs
    assert "the nodes' preflight output, as received through the relay: " in res[0][1], logs
    assert "2 of 3 nodes go on: pl3n0,pl3n1" in res[1][1], logs
    assert "pl3n2 was set aside by its preflight" in res[2][1], logs
    assert [json.loads(x) for x in (outs[0] / "setaside.jsonl").read_text().splitlines()] == [
        {"host": "pl3n2", "reason": BROKEN}
    ]
    # node 0 holds every node's preflight output, as each sent it
    pre = outs[0] / "preflight"
    assert sorted(p.name for p in pre.iterdir()) == ["pl3n0.log", "pl3n1.log", "pl3n2.log"]
    for h in ("pl3n0", "pl3n1"):
        assert (pre / f"{h}.log").read_text().rstrip().endswith(f"stoker preflight: {h} passed")
    assert (pre / "pl3n2.log").read_text().rstrip().endswith(BROKEN)
    # node 1 keeps its own copy; node 2, whose stoker cannot claim its dir, wrote nothing there
    assert (outs[1] / "preflight" / "pl3n1.log").read_text() == (pre / "pl3n1.log").read_text()
    assert not (outs[2] / "preflight").exists()
    # no handshake file is left behind on any node
    for out in outs:
        assert not [p.name for p in out.glob(".stoker-*") if p.name.startswith(HANDSHAKE)], out


def test_the_two_healthy_nodes_are_measured_and_judged(run: Run) -> None:
    outs, res = run
    ran = [json.loads(x) for x in (outs[0] / "phases.jsonl").read_text().splitlines()]
    assert [(p["phase"], p["rc"]) for p in ran] == [
        (name, 0) for name in "inventory compute intra-node inter-node pairs storage".split()
    ], logs_of(res)
    recs = read_records(outs[0])
    assert {h for r in recs.net.records() for h in r.hosts} == {"pl3n0", "pl3n1"}
    inter = [r for r in recs.net.records() if r.scope == "inter-node"]
    assert inter and all(set(r.hosts) == {"pl3n0", "pl3n1"} for r in inter)
    assert {h for r in recs.io for h in r.per_host_bw_GBps} == {"pl3n0", "pl3n1"}
    assert {r.run_id for r in [*recs.net.records(), *recs.io]} == {RUN}
    verdict = json.loads((outs[0] / "verdict.json").read_text())
    not_ok = [(f["component"], f["check"], f["hosts"]) for f in verdict["findings"] if f["status"] != "ok"]
    print(f"\nverdict {verdict['verdict']}, exits {[rc for rc, _, _ in res]}, not ok: {not_ok}")
    assert verdict["verdict"] == "fail"
    aside = [f for f in verdict["findings"] if f["check"] == "preflight"]
    assert [(f["component"], f["hosts"], f["status"]) for f in aside] == [("node", ["pl3n2"], "below_spec")]
    assert BROKEN in aside[0]["message"]
    # the report says where the node's output is: node 0's dir holds it, through the relay
    assert aside[0]["message"].endswith("Its preflight output: preflight/pl3n2.log.")
    assert aside[0]["preflight_log"] == "preflight/pl3n2.log"
    judged: dict[str, set[str]] = {}
    for f in verdict["findings"]:
        if f["check"] != "preflight" and f["expected"] is not None:
            judged.setdefault(f["component"], set()).add(f["status"])
    for component in ("intra-node network", "inter-node network"):
        assert "ok" in judged.get(component, set()), (component, verdict["findings"])
    assert not (outs[1] / "net.jsonl").exists()  # rank 0 wrote every record, on node 0


def test_a_node_of_another_run_is_refused_in_one_line_and_the_run_stops(tmp_path: Path) -> None:
    """Node 1 says another STOKER_RUN_ID: node 0's relay refuses it with the reason (its one
    line, exit 2); node 0's start barrier then names rank 1 (exit 2), and node 2, which was
    heard, stops after its preflight (exit 3) instead of sweeping on its own."""
    reason = netns.unavailable_reason()
    if reason:
        bed_missing(reason)
    outs = [tmp_path / f"node{i}" / "results" for i in range(NODES)]
    with netns.NetnsCluster(prefix="pl3", nodes=NODES) as c:
        procs = []
        for i in range(NODES):
            env = node_env(c, i, tmp_path, SYNC_TIMEOUT="15", STOKER_RUN_ID="another-run" if i == 1 else RUN)
            argv = ["bash", str(REPO / "launchers" / "torchrun.sh"), *SMALL]
            procs.append(c.popen(i, argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        said = [p.communicate(timeout=300) for p in procs]
    codes = [p.returncode for p in procs]
    logs = "\n".join(
        f"--- node {i} rc={rc}\n{o[-1500:]}\n{e[-1500:]}" for i, (rc, (o, e)) in enumerate(zip(codes, said))
    )
    assert codes == [2, 2, 3], logs
    assert said[1][1].strip() == (
        "stoker: node 0's preflight relay refused node 1: run id 'another-run' is not this run's "
        f"({RUN}): set the same STOKER_RUN_ID on every node"
    ), logs
    assert "node(s) 1 did not reach node 0's preflight relay" in said[0][1], logs
    assert "stoker: preflight relay refused a node: run id 'another-run'" in said[0][1], logs
    assert "did node 0 stop?" in said[2][1] or "node 0 stopped the run" in said[2][1], logs
    assert not any((o / "net.jsonl").exists() or (o / "phases.jsonl").exists() for o in outs), logs
