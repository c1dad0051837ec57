"""`stoker net` across two namespaced nodes joined by a 600 Mbit/s tc-shaped link: the
inter-node all-reduce must run at the link's speed, as iperf3 measures it in the same test.
(At 1 Gbit/s gloo on 2 cores is close to CPU-bound: a clean-clone CI run once measured the
link at -20% while iperf3 saw the full rate. At 600 Mbit/s the link, not the CPU, is the limit.)"""

from __future__ import annotations

import os
import statistics
from collections.abc import Iterator
from pathlib import Path

import pytest

from reports.shared.records import NetRecord
from reports.table.read import read_records
from tests.conftest import bed_missing, needs_root, needs_tool
from tests.harness.netns import NetnsCluster, unavailable_reason

pytestmark = [needs_root, needs_tool("iperf3")]

RATE_MBIT = 600
SIZE = 32 << 20


@pytest.fixture(scope="module")
def cluster() -> Iterator[NetnsCluster]:
    reason = unavailable_reason()
    if reason:
        bed_missing(reason)
    # gloo on 2 cores is CPU-bound at this rate: flush dirty pages (a fresh venv's GBs on a
    # clean clone) first, so kernel writeback does not compete with the ranks
    os.sync()
    with NetnsCluster(prefix="nxn", nodes=2, rate_mbit=RATE_MBIT) as c:
        yield c


@pytest.fixture(scope="module")
def goodput_GBps(cluster: NetnsCluster) -> float:
    """TCP goodput of the shaped link in bytes/s / 1e9 (iperf3 reports bits/s): the median
    of three runs, so one slow stretch on a busy 2-core machine does not set the reference."""
    return statistics.median(cluster.tcp_goodput_bps(0, 1, seconds=2.0) for _ in range(3)) / 8 / 1e9


def run_net(c: NetnsCluster, nproc: int, out: Path, port: int) -> list[NetRecord]:
    # 6 timed iterations (~0.45 s each at this rate), so the median is one of several
    args = [
        "-m",
        "launchers.cli",
        "net",
        "--ops",
        "all_reduce",
        "--min-bytes",
        "32M",
        "--max-bytes",
        "32M",
        "--iters",
        "6",
        "--warmup",
        "1",
        "--backend",
        "gloo",
        "--timeout",
        "120",
        "--scopes",
        "world,intra-node,inter-node",
        "--out",
        str(out),
    ]
    for rc, so, se in c.torchrun(nproc=nproc, port=port, module_args=args, timeout=240):
        assert rc == 0, f"rc {rc}\n{so[-3000:]}\n{se[-3000:]}"
    recs = read_records(out).net.records()
    assert recs and all(r.wrong == 0 and r.bytes == SIZE for r in recs)
    return recs


@pytest.mark.parametrize("nproc", [1, 2])
def test_inter_node_all_reduce_runs_at_link_speed(
    cluster: NetnsCluster, goodput_GBps: float, nproc: int, tmp_path: Path
) -> None:
    # TCP goodput is ~94-96% of the tbf rate (0.94-0.957 Gbit/s measured on 1 Gbit/s; 1 GB/s = 1e9 B/s).
    assert 0.90 * RATE_MBIT / 8000 <= goodput_GBps <= RATE_MBIT / 8000
    recs = run_net(cluster, nproc, tmp_path, port=29410 + nproc)
    by_scope = {s: [r for r in recs if r.scope == s] for s in ("world", "intra-node", "inter-node")}
    both = tuple(cluster.hosts)

    (world,) = by_scope["world"]
    assert (world.ranks, world.nodes, sorted(world.hosts)) == (2 * nproc, 2, sorted(both))

    inter = by_scope["inter-node"]
    assert len(inter) == nproc and all(sorted(r.hosts) == sorted(both) and r.ranks == 2 for r in inter)
    # The rail groups of all local indices run at once and here share the one shaped link (on
    # a real cluster each rail has its own NIC). Together they carry the link's rate: their
    # bytes over the span of the slowest one. A rail that finishes early leaves the link to
    # the other, so the plain sum of busbw would overstate it (measured: +12%).
    # The link is checked on the median iteration (time_p50_s, of the slowest rank): on a shared
    # 2-core machine one iteration slowed by another process drags the mean (a clean-clone CI
    # run measured the mean at -12% of iperf3 once). The reported mean is held to a looser
    # bound below, and can never beat the link.
    bus_bytes = [r.busbw_GBps * r.time_s for r in inter]
    link_p50 = sum(bus_bytes) / max(r.time_p50_s or r.time_s for r in inter)
    link_mean = sum(bus_bytes) / max(r.time_s for r in inter)
    seen = (link_p50, link_mean, goodput_GBps, [(r.busbw_GBps, r.time_s, r.time_p50_s) for r in inter])
    assert abs(link_p50 - goodput_GBps) <= 0.10 * goodput_GBps, seen
    assert 0.75 * goodput_GBps <= link_mean <= 1.10 * goodput_GBps, seen

    intra = by_scope["intra-node"]
    if nproc == 1:
        assert intra == []  # one rank per node: nothing to measure inside a node
    else:
        assert sorted(r.hosts for r in intra) == [(h,) for h in both]
        assert all(r.ranks == nproc and r.nodes == 1 for r in intra)
