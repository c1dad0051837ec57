"""The cluster spec loader: figures, catalog names, and errors naming file and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from reports.shared.errors import UsageError
from reports.shared.findings import Thresholds
from reports.shared.spec import fill_from_hardware, load_spec
from tests.conftest import REPO


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "spec.yaml"
    p.write_text(text)
    return p


def test_contract_example() -> None:
    s = load_spec(REPO / "examples" / "spec-h100.yaml")
    assert s.name == "example-h100-cluster"
    assert s.accelerator is not None and s.accelerator.name == "h100-sxm"
    assert (
        s.intra_node_GBps == 450.0 and s.intra_node_link is not None and s.intra_node_link.name == "nvlink4"
    )
    assert s.inter_node_GBps == 8 * 50.0  # per node: 8 NDR ports
    assert s.inter_node_per_gpu_GBps == 400.0 / 8  # per GPU: 50 GB/s
    assert [(e.path, e.kind, e.read_GBps, e.write_GBps) for e in s.storage] == [
        ("/data", "shared", 40.0, 20.0),
        ("/scratch", "local", 12.0, 6.0),
    ]
    assert s.price_per_gpu_hour == 2.49
    assert s.thresholds == Thresholds(network=0.80, storage=0.80)
    assert s.defaulted == ()


def test_catalog_storage_classes() -> None:
    s = load_spec(REPO / "examples" / "spec-catalog-storage.yaml")
    fsx, local = s.storage
    assert (fsx.read_GBps, fsx.write_GBps) == (0.25 * 96, 0.25 * 96)  # 24 GB/s
    assert (local.read_GBps, local.write_GBps) == (4 * 7.0, 4 * 5.0)
    # H200's defaults fill what the file leaves out: NVLink4 and 8 GPUs per node
    assert s.intra_node_GBps == 450.0 and s.gpus_per_node == 8
    assert s.inter_node_per_gpu_GBps == 8 * 50.0 / 8


def test_rates_in_GBps_and_Gbps(tmp_path: Path) -> None:
    s = load_spec(
        write(
            tmp_path,
            "network: {intra_node: {GBps: 300}, inter_node: {Gbps: 3200}}\ngpus_per_node: 8\n"
            "thresholds: {network: 0.9}\n",
        )
    )
    assert s.intra_node_GBps == 300.0 and s.intra_node_link is None
    assert s.inter_node_GBps == 400.0 and s.inter_node_per_gpu_GBps == 50.0
    assert s.thresholds == Thresholds(network=0.9, storage=0.80)


def test_empty_file_is_an_empty_spec(tmp_path: Path) -> None:
    s = load_spec(write(tmp_path, ""))
    assert s.accelerator is None and s.intra_node_GBps is None and s.inter_node_per_gpu_GBps is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "network: {inter_node: {link: ib-ndr, count: eight}}",
            r"spec.yaml: network.inter_node.count: expected a positive integer, got 'eight'",
        ),
        (
            "network: {inter_node: {link: ib-nrd, count: 8}}",
            r"spec.yaml: network.inter_node.link: unknown link 'ib-nrd': did you mean ib-ndr",
        ),
        ("accelerator: H10O", r"spec.yaml: accelerator: unknown accelerator 'H10O': did you mean h100-sxm"),
        ("gpus_per_node: 0", r"spec.yaml: gpus_per_node: expected a positive integer, got 0"),
        (
            "thresholds: {network: 80}",
            r"spec.yaml: thresholds.network: expected a positive number no larger than 1, got 80",
        ),
        ("storage: {path: /data}", r"spec.yaml: storage: expected a list"),
        (
            "storage: [{path: /data, kind: nfs}]",
            r"spec.yaml: storage\[0\].kind: expected one of shared, local, got 'nfs'",
        ),
        (
            "storage: [{path: /data, read_GBps: fast}]",
            r"spec.yaml: storage\[0\].read_GBps: expected a positive number, got 'fast'",
        ),
        (
            "storage: [{path: /f, class: lustre-250}]",
            r"spec.yaml: storage\[0\].capacity_TiB: expected the capacity in TiB",
        ),
        ("netwrok: {}", r"spec.yaml: netwrok: unknown field \(did you mean network\?\)"),
        ("price_per_gpu_hour: .nan", r"spec.yaml: price_per_gpu_hour: expected a number >= 0, got nan"),
        (
            "network: {intra_node: {GBps: inf}}",
            r"spec.yaml: network.intra_node.GBps: expected a positive number, got inf",
        ),
        (
            "network: {intra_node: {GBps: -3}}",
            r"spec.yaml: network.intra_node.GBps: expected a positive number, got -3",
        ),
        ("- just\n- a list", r"spec.yaml: top level: expected a mapping"),
        ("name: [unclosed", r"spec.yaml: not valid YAML at line \d"),
    ],
)
def test_errors_name_file_field_and_expectation(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        load_spec(write(tmp_path, text))


def test_missing_file() -> None:
    with pytest.raises(UsageError, match=r"cannot read spec /nonexistent/h4.yaml"):
        load_spec("/nonexistent/h4.yaml")


def test_detection_fills_what_the_spec_leaves_out(tmp_path: Path) -> None:
    hw = {
        "gpu_model": "NVIDIA H100 80GB HBM3",
        "gpu_count": 4,
        "nic_total_GBps": 200.0,
        "nic_desc": "4 x 400 Gb/s",
    }
    s = fill_from_hardware(None, hw)
    assert s is not None and s.accelerator is not None and s.accelerator.name == "h100-sxm"
    assert s.gpus_per_node == 4  # detected count wins over the accelerator's usual 8
    assert s.intra_node_GBps == 450.0
    assert s.inter_node_per_gpu_GBps == 200.0 / 4
    given = load_spec(
        write(tmp_path, "accelerator: a100\ngpus_per_node: 8\nnetwork: {inter_node: {GBps: 100}}\n")
    )
    s2 = fill_from_hardware(given, hw)
    assert (
        s2 is not None and s2.accelerator is not None and s2.accelerator.name == "a100-sxm"
    )  # the spec wins
    assert s2.gpus_per_node == 8 and s2.inter_node_GBps == 100.0
    assert fill_from_hardware(None, {"gpu_model": "Tesla K80"}) is None  # nothing usable: no guess
