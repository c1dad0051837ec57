"""Localisation on every rail, for real: 3 namespaced nodes × 2 rails (rail r on its own
bridge and subnet, local rank r bound to it; tests/harness/netns_rails.py). `stoker net
--scopes pairs` under torchrun, then `stoker report` on its records, must name the one slow
(node, rail) link by host and rail, a node whose every rail is slow by host alone, and nothing
on a healthy bed."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reports.table.read import read_records
from tests.conftest import STOKER, bed_missing, needs_root
from tests.harness.netns import net_argv, unavailable_reason
from tests.harness.netns_rails import RailCluster

pytestmark = needs_root

NODES, RAILS = 3, 2
# Every link shaped so that the link, not the 2 shared cores, sets each pair's speed:
# 200 Mbit/s is 0.025 GB/s; a 4 MiB pair all-reduce takes 0.17 s, 0.67 s on a quarter link.
RATE_MBIT = 200
SLOW_MBIT = RATE_MBIT / 4
PORT = 29480


@pytest.fixture
def cluster() -> Iterator[RailCluster]:
    reason = unavailable_reason()
    if reason:
        bed_missing(reason)
    with RailCluster(prefix="nxr", nodes=NODES, rails=RAILS, rate_mbit=RATE_MBIT) as c:
        yield c


def pairs_and_report(c: RailCluster, out: Path) -> list[dict[str, Any]]:
    """`stoker net --scopes pairs` under torchrun (2 ranks a node, each on its rail), then
    `stoker report`; the localisation findings of its verdict.json."""
    args = c.rail_args([*net_argv("pairs"), "--out", str(out)])
    for rc, so, se in c.torchrun(RAILS, PORT, args, timeout=240):
        assert rc == 0, f"rc {rc}\n{so[-3000:]}\n{se[-3000:]}"
    recs = [r for r in read_records(out).net.records() if r.extra.get("pass") == 1]
    # 3 rounds of one pair, each pair on both rails at once: 6 first-pass records
    assert sorted((r.extra["round"], r.extra["rail"]) for r in recs) == [
        (k, j) for k in range(3) for j in range(2)
    ]
    assert all(r.wrong == 0 for r in recs)
    p = subprocess.run([*STOKER, "report", str(out)], capture_output=True, text=True, timeout=120)
    assert p.returncode in (0, 1, 3), p.stderr[-2000:]
    found = json.loads((out / "verdict.json").read_text())["findings"]
    return [f for f in found if f["component"] in ("node", "link")]


def named(found: list[dict[str, Any]]) -> list[tuple[str, tuple[str, ...], Any]]:
    return [(f["component"], tuple(f["hosts"]), f.get("rail")) for f in found]


def test_slow_nic_is_named_by_host_and_rail(cluster: RailCluster, tmp_path: Path) -> None:
    cluster.shape_rail(1, 1, SLOW_MBIT)
    found = pairs_and_report(cluster, tmp_path)
    assert named(found) == [("node", ("nxrn1",), 1)]
    # its best rail-1 pair is capped by its own 50 Mbit/s link: 0.00625 GB/s raw
    assert 0.8 * SLOW_MBIT / 8000 <= found[0]["measured"] <= SLOW_MBIT / 8000
    assert "Rail 1 only" in found[0]["message"]


def test_every_rail_of_a_node_slow_names_the_node_alone(cluster: RailCluster, tmp_path: Path) -> None:
    cluster.shape_node(1, SLOW_MBIT)
    assert named(pairs_and_report(cluster, tmp_path)) == [("node", ("nxrn1",), None)]


def test_healthy_bed_names_nothing(cluster: RailCluster, tmp_path: Path) -> None:
    assert pairs_and_report(cluster, tmp_path) == []
