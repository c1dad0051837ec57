"""A soak on a real namespaced 4-node cluster: `stoker net --soak` runs passes of
the world sweep and the pair tests across the namespaces while this test shapes one node's
link down to 1/4 for ~25 s in the middle and takes another node's link down and up once (a
real carrier_changes increment on its eth0). The report must name both, with the passes
they happened in and the counter that moved, and a healthy soak must name nothing.

Cost: ~75 s of soak + ~35 s healthy soak, plus start-up (the CI budget for this file is ~2.5 min)."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reports.evidence.soak import soak_pass
from reports.table.read import read_records
from tests.conftest import bed_missing, needs_root
from tests.harness.netns import NetnsCluster, unavailable_reason
from tests.unit.recordgen import judge_records

pytestmark = needs_root

RATE_MBIT = 400
SLOW_MBIT = RATE_MBIT / 4
SHAPE_AT_S, SHAPE_FOR_S = 20.0, 25.0  # node 2 at 1/4 from here, for this long
FLAP_AT_S = 55.0  # node 1's eth0 down for 1 s, then up
SOAK_S = 75.0


def net_args(out: Path, seconds: float) -> list[str]:
    # 2M messages: a pass at 1/4 of the link takes ~4 s, so the 25 s of shaping holds 4 or more
    # whole passes (a node's pass score is its best pair: a pass the shaping only half covers
    # does not count, and a dip needs 2 passes; with 4M a pass took ~9 s under shaping)
    return [
        "-m", "launchers.cli", "net", "--scopes", "world,pairs", "--ops", "all_reduce",
        "--min-bytes", "2M", "--max-bytes", "2M", "--pair-bytes", "2M", "--iters", "3", "--warmup", "1",
        "--backend", "gloo", "--timeout", "60", "--soak", str(seconds), "--out", str(out),
    ]  # fmt: skip


@pytest.fixture
def cluster() -> Iterator[NetnsCluster]:
    reason = unavailable_reason()
    if reason:
        bed_missing(reason)
    with NetnsCluster(prefix="nxk", nodes=4, rate_mbit=RATE_MBIT) as c:
        yield c


def _faults(c: NetnsCluster, t0: float, log: dict[str, float]) -> None:
    time.sleep(max(0.0, t0 + SHAPE_AT_S - time.monotonic()))
    log["shape_on"] = time.time()
    c.shape_node(2, SLOW_MBIT)
    time.sleep(SHAPE_FOR_S)
    c.shape_node(2, RATE_MBIT)
    log["shape_off"] = time.time()
    time.sleep(max(0.0, t0 + FLAP_AT_S - time.monotonic()))
    log["flap"] = time.time()
    ns = c.namespaces[1]
    subprocess.run(["ip", "-n", ns, "link", "set", c.ifname, "down"], check=True)
    time.sleep(1.0)
    subprocess.run(["ip", "-n", ns, "link", "set", c.ifname, "up"], check=True)


def _soak(c: NetnsCluster, out: Path, seconds: float) -> list[tuple[int, str, str]]:
    results = c.launch(1, 29470, net_args(out, seconds), timeout=seconds + 120)
    for rc, so, se in results:
        assert rc == 0, f"rc {rc}\n{so[-3000:]}\n{se[-3000:]}"
    return results


def _passes_between(out: Path, t_from: float, t_to: float) -> set[int]:
    """Soak passes with a record stamped in [t_from, t_to] (wall clock, whole seconds)."""
    lo, hi = (
        time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t_from)),
        time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t_to + 1)),
    )
    return {
        k for r in read_records(out).net.records() if (k := soak_pass(r)) is not None and lo <= r.ts <= hi
    }


def test_slow_window_and_link_flap_are_named_with_their_passes(cluster: NetnsCluster, tmp_path: Path) -> None:
    log: dict[str, float] = {}
    t0 = time.monotonic()
    faults = threading.Thread(target=_faults, args=(cluster, t0, log), daemon=True)
    faults.start()
    results = _soak(cluster, tmp_path, SOAK_S)
    faults.join(timeout=5)
    progress = [ln for ln in results[0][1].splitlines() if ln.startswith("soak pass ")]
    rs = read_records(tmp_path)
    passes = sorted({k for r in rs.net.records() if (k := soak_pass(r)) is not None})
    assert len(progress) == len(passes) >= 10, progress
    found = [f for f in judge_records(rs).findings if f.status == "unstable"]
    report = [(f.component, f.hosts, f.extra.get("window"), f.message) for f in found]
    (tmp_path / "findings.json").write_text(json.dumps(report, indent=1))

    # the slow window: node 2, in passes inside the shaping (+- one pass at each edge)
    slow = [f for f in found if f.component == "node" and f.hosts == ("nxkn2",)]
    assert len(slow) == 1, report
    shaped = _passes_between(tmp_path, log["shape_on"], log["shape_off"])
    first, last = slow[0].extra["window"]["passes"]
    # the dip spans at least 2 passes, all within the shaped ones (+-1: a pass half in, half out)
    assert min(shaped) - 1 <= first and last <= max(shaped) + 1 and last - first >= 1, (shaped, report)
    assert 0.15 <= slow[0].measured / slow[0].expected <= 0.4, report  # 1/4 of the link, by tc

    # the flap: node 1's eth0, carrier_changes +2 (down and up), in the pass it happened in
    flap = [f for f in found if "nxkn1" in f.hosts and f.component in ("network port", "node")]
    assert len(flap) == 1, report
    moved = [c for c in flap[0].extra["counters"] if c["counter"] == "carrier_changes"]
    assert [(c["host"], c["device"], c["delta"]) for c in moved] == [("nxkn1", "eth0", 2.0)], report
    at = _passes_between(tmp_path, log["flap"], log["flap"] + 1.0)
    assert moved[0]["soak_pass"] in at | {max(at) + 1}, (at, report)
    assert all(f in slow + flap for f in found), report  # nothing else named


def test_healthy_soak_names_nothing(cluster: NetnsCluster, tmp_path: Path) -> None:
    _soak(cluster, tmp_path, 35.0)
    rs = read_records(tmp_path)
    assert len({soak_pass(r) for r in rs.net.records()}) >= 5
    unstable: list[Any] = [f.message for f in judge_records(rs).findings if f.status == "unstable"]
    assert unstable == []
    assert [c for c in rs.counters if c["severity"] == "error"] == []  # a quiet veth
