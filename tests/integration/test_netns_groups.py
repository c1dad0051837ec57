"""The log-round search for real: `stoker net --scopes groups` on a namespaced 8-node cluster
(one rank per node, every link shaped by tc) must name the node or link made slow, in at most
ceil(log2 8) + 2 = 5 rounds, and nothing on a healthy cluster. The findings come from
`stoker report`'s judge, which replays the search on the records (same code as the run)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from reports.evidence.groups import replay
from reports.shared.findings import Finding
from reports.shared.records import NetRecord
from reports.table.read import NetTable, RecordSet, read_records
from tests.conftest import bed_missing, needs_root
from tests.harness.netns import NetnsCluster, net_argv, unavailable_reason
from tests.unit.recordgen import judge_records

pytestmark = needs_root

NODES = 8
MAX_ROUNDS = math.ceil(math.log2(NODES)) + 2
# Every link shaped, so that the link and not the 2 shared cores sets each group's speed:
# 200 Mbit/s is 0.025 GB/s; a 4 MiB pair all-reduce moves 4 MiB each way, 0.17 s on a
# healthy pair and 0.67 s with the slow one (8 ranks' gloo work is a few ms per op).
RATE_MBIT = 200
SLOW_MBIT = RATE_MBIT / 4
PORT = 29470
NET = net_argv("groups")


@pytest.fixture
def cluster() -> Iterator[NetnsCluster]:
    reason = unavailable_reason()
    if reason:
        bed_missing(reason)
    with NetnsCluster(prefix="nsg", nodes=NODES, rate_mbit=RATE_MBIT) as c:
        yield c


def groups_run(c: NetnsCluster, out: Path) -> list[NetRecord]:
    """One `stoker net --scopes groups` across the cluster (ranks started with torchrun's
    environment, without its agents: half the processes on 2 cores)."""
    for rc, so, se in c.launch(1, PORT, [*NET, "--out", str(out)], timeout=240):
        assert rc == 0, f"rc {rc}\n{so[-3000:]}\n{se[-3000:]}"
    recs = read_records(out).net.records()
    assert recs and all(
        r.scope == "groups" and r.wrong == 0 and isinstance(r.extra.get("round"), int) for r in recs
    )
    return recs


def localisation(recs: list[NetRecord]) -> list[Finding]:
    return [f for f in judge_records(RecordSet(net=recs)).findings if f.component in ("node", "link")]


def named(findings: list[Finding]) -> list[tuple[str, tuple[str, ...]]]:
    return [(f.component, f.hosts) for f in findings]


def rounds_used(recs: list[NetRecord]) -> int:
    return 1 + max(r.extra["round"] for r in recs)


def test_slow_node_is_named_in_log_rounds(cluster: NetnsCluster, tmp_path: Path) -> None:
    cluster.shape_node(5, SLOW_MBIT)
    recs = groups_run(cluster, tmp_path)
    found = localisation(recs)
    assert named(found) == [("node", ("nsgn5",))]
    assert rounds_used(recs) <= MAX_ROUNDS
    # what the judge replayed is what the run printed it decided
    res = replay(NetTable.of(recs))
    assert res is not None and res.culprits == ["nsgn5"] and res.rounds == rounds_used(recs)
    # its pair with a cleared node is capped by its own 50 Mbit/s link: 0.00625 GB/s raw
    assert 0.8 * SLOW_MBIT / 8000 <= found[0].measured <= SLOW_MBIT / 8000
    assert 0.8 * RATE_MBIT / 8000 <= found[0].expected <= RATE_MBIT / 8000


def test_slow_link_is_a_link_not_a_node(cluster: NetnsCluster, tmp_path: Path) -> None:
    # nodes 2 and 3 share a first-round group; both are healthy with anyone else
    cluster.shape_pair(2, 3, SLOW_MBIT)
    recs = groups_run(cluster, tmp_path)
    found = localisation(recs)
    assert named(found) == [("link", ("nsgn2", "nsgn3"))]
    assert rounds_used(recs) <= MAX_ROUNDS
    assert 0.8 * SLOW_MBIT / 8000 <= found[0].measured <= SLOW_MBIT / 8000


def test_healthy_cluster_gives_no_finding_5_runs_of_5(cluster: NetnsCluster, tmp_path: Path) -> None:
    for k in range(5):
        recs = groups_run(cluster, tmp_path / str(k))
        assert localisation(recs) == [], k
        assert rounds_used(recs) <= MAX_ROUNDS, k  # measured: 1 round (every first-round group fast)
