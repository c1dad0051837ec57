"""The typed spec keeps what the user wrote: the inter-node link's `count` as written, and the pass
thresholds resolved once at load (the documented 0.80 where the file says nothing), which every
judge reads. Expected values are worked out by hand from the catalog's per-port figures."""

from __future__ import annotations

from pathlib import Path

import pytest

from launchers.commands.preflight import promised
from reports.judging.advertised import compare_storage
from reports.shared.findings import DEFAULT_THRESHOLDS, Thresholds
from reports.shared.spec import Spec, parse_spec, thresholds_of
from reports.shared.storage_rule import to_confirm
from tests.unit.recordgen import io


@pytest.mark.parametrize(
    ("inter_node", "count", "GBps"),
    [
        ({"link": "ib-ndr", "count": 3}, 3, 150.0),  # 3 ports x 50 GB/s
        ({"link": "efa-v2", "count": 32}, 32, 400.0),  # 32 interfaces x 12.5 GB/s
        ({"link": "ib-hdr"}, 1, 25.0),  # no count: one
        ("ib-ndr", 1, 50.0),  # a bare link name: one
        ({"GBps": 400}, None, 400.0),  # a rate: no link, no count
        ({"Gbps": 800}, None, 100.0),  # 800 Gb/s / 8
    ],
)
def test_the_inter_node_count_is_kept_as_written(inter_node: object, count: int | None, GBps: float) -> None:
    s = parse_spec({"network": {"inter_node": inter_node}}, "spec.yaml")
    assert s.inter_node_count == count
    assert s.inter_node_GBps == GBps


def test_preflight_promises_the_count_written(tmp_path: Path) -> None:
    """preflight reads the kept count: 3 ports of ib-ndr, 8 GPUs (the spec's), per port."""
    p = tmp_path / "spec.yaml"
    p.write_text("gpus_per_node: 8\nnetwork: {inter_node: {link: ib-ndr, count: 3}}\n")
    assert promised(str(p), 8) == (8, 3, "port")


def test_thresholds_default_to_the_documented_share() -> None:
    s = parse_spec({"name": "s"}, "spec.yaml")
    assert s.thresholds == Thresholds(network=0.80, storage=0.80)
    assert thresholds_of(None) == Thresholds(network=0.80, storage=0.80)
    assert Spec().thresholds == DEFAULT_THRESHOLDS == Thresholds(network=0.80, storage=0.80)


def test_a_threshold_given_keeps_the_other_default() -> None:
    s = parse_spec({"thresholds": {"storage": 0.5}}, "spec.yaml")
    assert s.thresholds == Thresholds(network=0.80, storage=0.5)
    assert thresholds_of(s) is s.thresholds  # resolved at load: read, never filled in again


def _storage_spec(threshold: float | None) -> Spec:
    data: dict[str, object] = {"storage": [{"path": "/data", "kind": "shared", "read_GBps": 10}]}
    if threshold is not None:
        data["thresholds"] = {"storage": threshold}
    return parse_spec(data, "spec.yaml")


@pytest.mark.parametrize(
    ("threshold", "status", "again"),
    [
        (0.5, "ok", False),  # 6 GB/s >= 0.5 x 10 GB/s = 5
        (None, "below_spec", True),  # 6 GB/s < 0.80 x 10 GB/s = 8 (the default)
    ],
)
def test_the_judge_and_the_confirmation_rule_read_the_one_threshold(
    threshold: float | None, status: str, again: bool
) -> None:
    spec = _storage_spec(threshold)
    rec = io("dataloader_read", "read", "/data", 6.0)
    (f,), _ = compare_storage([rec], spec)
    assert f.status == status
    assert f.extra["threshold"] == (threshold if threshold is not None else 0.80)  # verdict.json's
    assert f.extra["promise"] == {"GBps": 10.0, "basis": "advertised"}
    assert to_confirm(rec, spec) is again  # stoker io --spec measures again what the report fails
