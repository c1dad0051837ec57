"""Localisation on a real namespaced 4-node cluster: `stoker net --scopes pairs` runs across
the namespaces and `localise` must name the node or link that tc made slow, and nothing else."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from reports.evidence.rails import pair_evidence
from reports.judging.network import localise as judging
from reports.shared.findings import Finding
from reports.shared.records import NetRecord
from reports.table.read import NetTable, read_records
from tests.conftest import bed_missing, needs_root
from tests.harness.netns import NetnsCluster, net_argv, unavailable_reason

pytestmark = needs_root

RATE_MBIT = 400  # every node's link: 0.048 GB/s of TCP goodput
SLOW_MBIT = RATE_MBIT / 4
# 4 MiB per pair: 0.09 s per all-reduce on a healthy pair, 0.35 s with the slow one.
NET = net_argv("pairs")


@pytest.fixture
def cluster() -> Iterator[NetnsCluster]:
    reason = unavailable_reason()
    if reason:
        bed_missing(reason)
    with NetnsCluster(prefix="nxl", nodes=4, rate_mbit=RATE_MBIT) as c:
        yield c


def pairs_run(c: NetnsCluster, out: Path, torchrun: bool = True) -> list[NetRecord]:
    args = [*NET, "--out", str(out)]
    results = c.torchrun(1, 29450, args, timeout=180) if torchrun else c.launch(1, 29450, args, timeout=180)
    for rc, so, se in results:
        assert rc == 0, f"rc {rc}\n{so[-3000:]}\n{se[-3000:]}"
    recs = read_records(out).net.records()
    first = [r for r in recs if r.scope == "pair" and r.extra.get("pass") == 1]
    assert len(first) == 6 and all(r.wrong == 0 for r in recs)  # 3 rounds × 2 pairs
    return recs


def localise(recs: list[NetRecord], io: list) -> list[Finding]:  # type: ignore[type-arg]
    """The judgement's localisation of these records, through their evidence as the report builds it."""
    frame = NetTable.of(recs).frame
    return judging.localise(pair_evidence(frame), frame, io)


def named(findings: list[Finding]) -> list[tuple[str, tuple[str, ...]]]:
    return [(f.component, f.hosts) for f in findings]


def test_slow_node_is_named_and_no_other(cluster: NetnsCluster, tmp_path: Path) -> None:
    cluster.shape_node(2, SLOW_MBIT)
    found = localise(pairs_run(cluster, tmp_path), [])
    assert named(found) == [("node", ("nxln2",))]
    # Its best pair is capped by its own 100 Mbit/s link: 0.0125 GB/s raw, ~0.012 of goodput.
    assert 0.85 * SLOW_MBIT / 8000 <= found[0].measured <= SLOW_MBIT / 8000
    assert found[0].extra["confirmed_with"]  # the second pass re-paired it with good nodes


def test_healthy_cluster_gives_no_finding_5_runs_of_5(cluster: NetnsCluster, tmp_path: Path) -> None:
    # Repeats start the ranks with torchrun's environment but without its agents (half the
    # processes importing torch on 2 cores); the first run uses torchrun itself.
    for k in range(5):
        recs = pairs_run(cluster, tmp_path / str(k), torchrun=k == 0)
        assert localise(recs, []) == [], k


def test_slow_pair_is_a_link_not_two_nodes(cluster: NetnsCluster, tmp_path: Path) -> None:
    cluster.shape_pair(0, 3, SLOW_MBIT)
    found = localise(pairs_run(cluster, tmp_path), [])
    assert named(found) == [("link", ("nxln0", "nxln3"))]
    assert 0.85 * SLOW_MBIT / 8000 <= found[0].measured <= SLOW_MBIT / 8000
    # the healthy pairs' median (the link's reference) came to 0.80 of the rate on 2 cores beside
    # another bed in CI (2026-11-29): at least 0.75 of it, never over
    assert 0.75 * RATE_MBIT / 8000 <= found[0].expected <= RATE_MBIT / 8000
