"""Confirm before fail for the network on a real namespaced 2-node cluster (tc-shaped links):
the inter-node all_reduce's first sweep runs on links shaped to SLOW_MBIT, under the spec's
threshold set 2% above that raw rate (the measured figure is 5-9% under it). Lifted to FAST_MBIT
as soon as the first record is written (the test watches the records file), the confirming sweep
passes and the finding is a `transient` (not failed); kept slow, it fails with both measurements
shown. Every figure is checked against the tc rates, not against itself."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from reports.shared.findings import FAILING
from tests.conftest import STOKER, bed_missing, needs_root
from tests.harness.netns import NetnsCluster, net_argv, unavailable_reason

pytestmark = needs_root

SLOW_MBIT = 200  # 0.025 GB/s raw: a 2-rank all_reduce's busbw is its algbw, at most the link
FAST_MBIT = 250  # 0.03125 GB/s raw: over the threshold, under 1.05 x advertised (suspect above)
SLOW_GBPS, FAST_GBPS = SLOW_MBIT / 8000, FAST_MBIT / 8000
THRESHOLD = 1.02 * SLOW_GBPS  # the slow link's best is ~5-9% under it (0.93-0.96 of the raw rate)
# one GPU (rank) per node; 80% of the advertised per-NIC figure is THRESHOLD
ADVERTISED = THRESHOLD / 0.8
SPEC = f"name: bed\ngpus_per_node: 1\nnetwork:\n  inter_node: {{GBps: {ADVERTISED:.6f}}}\nthresholds: {{network: 0.8}}\n"
NET = [*net_argv("inter-node"), "--ops", "all_reduce,all_gather"]  # all_gather: time to lift the rate


@pytest.fixture
def cluster() -> Iterator[NetnsCluster]:
    reason = unavailable_reason()
    if reason:
        bed_missing(reason)
    with NetnsCluster(prefix="cfx", nodes=2, rate_mbit=SLOW_MBIT) as c:
        yield c


def _lift_after_first_record(c: NetnsCluster, records: Path, done: threading.Event) -> None:
    """When the first all_reduce record is on disk, both nodes' links go to FAST_MBIT."""
    while not done.is_set():
        if records.exists() and '"all_reduce"' in records.read_text():
            for i in range(c.n):
                c.shape_node(i, FAST_MBIT)
            return
        time.sleep(0.01)


def _run(c: NetnsCluster, tmp: Path, name: str, lift: bool) -> dict:
    out, spec = tmp / name, tmp / "spec.yaml"
    spec.write_text(SPEC)
    done = threading.Event()
    watcher = threading.Thread(target=_lift_after_first_record, args=(c, out / "net.jsonl", done))
    if lift:
        watcher.start()
    try:
        argv = [*NET, "--out", str(out), "--spec", str(spec)]
        for rc, so, se in c.torchrun(1, 29480, argv, timeout=240):
            assert rc == 0, f"rc {rc}\n{so[-3000:]}\n{se[-3000:]}"
    finally:
        done.set()
        if lift:
            watcher.join()
    recs = [json.loads(x) for x in (out / "net.jsonl").read_text().splitlines()]
    reduce = [r for r in recs if r["op"] == "all_reduce" and r["scope"] == "inter-node"]
    assert [r.get("confirmation", False) for r in reduce] == [False, True], reduce
    subprocess.run(
        [*STOKER, "report", str(out), "--spec", str(spec)], capture_output=True, text=True, timeout=120
    )
    v = json.loads((out / "verdict.json").read_text())
    (f,) = [f for f in v["findings"] if f["component"] == "inter-node network"]
    first, again = f["first_GBps"], f["confirm_GBps"]
    print(f"{name}: first {first:.4g} GB/s, again {again:.4g}, threshold {THRESHOLD:.4g}: {f['status']}")
    assert (first, again) == (
        pytest.approx(reduce[0]["busbw_GBps"], abs=1e-3),
        pytest.approx(reduce[1]["busbw_GBps"], abs=1e-3),
    )
    # the slow first sweep: under the threshold, and near the shaped rate (tc, not itself)
    assert 0.75 * SLOW_GBPS < first < THRESHOLD
    return f


def test_a_figure_under_its_threshold_that_recovers_is_a_transient(
    cluster: NetnsCluster, tmp_path: Path
) -> None:
    f = _run(cluster, tmp_path, "recovers", lift=True)
    assert f["status"] == "transient" and f["status"] not in FAILING
    assert THRESHOLD < f["confirm_GBps"] <= 1.02 * FAST_GBPS
    assert "at first, under the threshold" in f["message"]


def test_a_figure_that_stays_under_fails_with_both_measurements(
    cluster: NetnsCluster, tmp_path: Path
) -> None:
    f = _run(cluster, tmp_path, "stays", lift=False)
    assert f["status"] == "below_spec"
    assert 0.75 * SLOW_GBPS < f["confirm_GBps"] < THRESHOLD
    assert "still under" in f["message"] and f"{f['confirm_GBps']:.3g} GB/s" in f["message"]
