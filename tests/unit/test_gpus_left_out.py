"""A sweep inside a node that left GPUs out is a finding: ranks per node under the spec's GPU
count (or the inventory's) is `not_met` coverage naming the hosts and how many GPUs each left
out, and the verdict is not a pass (records and spec written by hand)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from reports.shared.records import NetRecord
from reports.shared.spec import parse_spec
from reports.table.read import RecordSet
from tests.unit.recordgen import judge_records, net

SPEC = parse_spec(
    {
        "name": "t",
        "gpus_per_node": 8,
        "network": {"intra_node": {"GBps": 100}},
        "thresholds": {"network": 0.8},
    },
    "spec.yaml",
)


def _sweep(ranks: int, host: str = "gpu01") -> list[NetRecord]:
    """An intra-node all_reduce on GPUs at 95 GB/s busbw (meets 100 x 0.8)."""
    return [
        replace(net("intra-node", "all_reduce", 1 << k, 95.0, (host,), ranks=ranks), device="cuda:0")
        for k in range(20, 30)
    ]


@pytest.mark.parametrize("ranks", [7, 4])
def test_a_sweep_with_fewer_ranks_than_gpus_is_not_met_and_not_a_pass(ranks: int) -> None:
    j = judge_records(RecordSet(net=[*_sweep(8, "gpu02"), *_sweep(ranks)]), SPEC)
    (line,) = [ln for ln in j.coverage["coverage"] if ln["what"].startswith("intra-node network")]
    assert line["status"] == "not_met", line
    assert f"gpu01: {ranks} ranks on 8 GPUs, {8 - ranks} left out" in line["why"]
    (f,) = [f for f in j.findings if f.check == "GPUs swept"]
    assert f.status == "below_spec" and f.hosts == ("gpu01",) and f.component == "intra-node network"
    assert j.verdict == "fail"


def test_a_sweep_on_every_gpu_is_measured() -> None:
    j = judge_records(RecordSet(net=_sweep(8)), SPEC)
    (line,) = [ln for ln in j.coverage["coverage"] if ln["what"].startswith("intra-node network")]
    assert line["status"] == "measured"
    assert not [f for f in j.findings if f.check == "GPUs swept"]
