"""The groups search on every rail, for real: 8 namespaced nodes × 2 rails (rail r on its own
bridge and subnet, local rank r bound to it; tests/harness/netns_rails.py). `stoker net
--scopes groups` must name the one slow (node, rail) link by host and rail, in at most
ceil(log2 8) + 2 = 5 rounds, and nothing on a healthy bed, 5 runs of 5. The findings come
from the judge's replay of the recorded rounds (reports.judging.network.groups)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reports.shared.findings import Finding
from reports.shared.records import NetRecord
from reports.table.read import NetTable, RecordSet, read_records
from tests.conftest import bed_missing, needs_root
from tests.harness.netns import net_argv, unavailable_reason
from tests.harness.netns_rails import RailCluster
from tests.unit.recordgen import judge_records

pytestmark = needs_root

NODES, RAILS = 8, 2
MAX_ROUNDS = math.ceil(math.log2(NODES)) + 2
# as in test_netns_rails: every link at 200 Mbit/s (0.025 GB/s), so that the link and not the
# 2 shared cores sets each group's speed; the slow NIC at a quarter
RATE_MBIT = 200
SLOW_MBIT = RATE_MBIT / 4
PORT = 29490


@pytest.fixture
def cluster() -> Iterator[RailCluster]:
    reason = unavailable_reason()
    if reason:
        bed_missing(reason)
    with RailCluster(prefix="nrg", nodes=NODES, rails=RAILS, rate_mbit=RATE_MBIT) as c:
        yield c


def groups_run(c: RailCluster, out: Path) -> list[NetRecord]:
    """One `stoker net --scopes groups`, 2 ranks a node each on its rail (torchrun's
    environment without its agents: 16 ranks on 2 cores)."""
    args = c.rail_args([*net_argv("groups"), "--out", str(out)])
    for rc, so, se in c.launch(RAILS, PORT, args, timeout=240):
        assert rc == 0, f"rc {rc}\n{so[-3000:]}\n{se[-3000:]}"
    recs = read_records(out).net.records()
    # every round measures each group on both rails: records come in (round, rail) pairs
    assert recs and all(r.scope == "groups" and r.wrong == 0 for r in recs)
    assert {r.extra["rail"] for r in recs} == {0, 1}
    return recs


def localisation(recs: list[NetRecord]) -> list[Finding]:
    return [
        f for f in judge_records(RecordSet(net=NetTable.of(recs))).findings if f.component in ("node", "link")
    ]


def named(found: list[Finding]) -> list[tuple[str, tuple[str, ...], Any]]:
    return [(f.component, f.hosts, f.extra.get("rail")) for f in found]


def rounds_used(recs: list[NetRecord]) -> int:
    return 1 + max(r.extra["round"] for r in recs)


def test_groups_search_names_the_slow_nic_by_host_and_rail(cluster: RailCluster, tmp_path: Path) -> None:
    cluster.shape_rail(5, 1, SLOW_MBIT)
    recs = groups_run(cluster, tmp_path)
    found = localisation(recs)
    assert named(found) == [("node", ("nrgn5",), 1)]
    assert rounds_used(recs) <= MAX_ROUNDS
    # its rail-1 pair with a cleared node is capped by its own 50 Mbit/s link: 0.00625 GB/s raw
    m = found[0].measured
    assert m is not None and 0.8 * SLOW_MBIT / 8000 <= m <= SLOW_MBIT / 8000


def test_healthy_rail_bed_names_nothing_5_runs_of_5(cluster: RailCluster, tmp_path: Path) -> None:
    for k in range(5):
        recs = groups_run(cluster, tmp_path / str(k))
        assert localisation(recs) == [], k
        assert rounds_used(recs) <= MAX_ROUNDS, k
