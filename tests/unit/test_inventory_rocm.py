"""A ROCm node's inventory: amd-smi / rocm-smi outputs (real ones, tests/data/inventory/rocm/README.md)
read into `gpu` records that say what the GPUs are (model, bus id, UUID, xGMI peers), and the
report taking the model from them when no manifest names one, so the catalog's MI300X applies."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from netbench.inventory import hardware
from netbench.inventory.read import read_inventory
from netbench.inventory.rocm_parse import parse_amd_smi_list, parse_amd_smi_static, parse_rocm_topo
from reports.evidence.hosts import from_inventory
from reports.judging.node.inventory import judge_inventory
from reports.shared.catalog import match_gpu_name
from reports.shared.spec import fill_from_hardware
from tests.conftest import DATA

R = DATA / "inventory" / "rocm"
MI300X_BUSES = [
    "0000:1b:00.0",
    "0000:3d:00.0",
    "0000:4e:00.0",
    "0000:5f:00.0",
    "0000:9d:00.0",
    "0000:bd:00.0",
    "0000:cd:00.0",
    "0000:dd:00.0",
]


def text(name: str) -> str:
    return (R / name).read_text(encoding="utf-8")


def test_amd_smi_static_names_every_mi300x() -> None:
    gpus = parse_amd_smi_static(text("amd-smi-static-mi300x.json"))
    assert [g["gpu"] for g in gpus] == list(range(8))
    assert {g["name"] for g in gpus} == {"AMD Instinct MI300X"}
    assert {g["product_name"] for g in gpus} == {"AMD Instinct MI300X OAM"}
    assert [g["bus_id"] for g in gpus] == MI300X_BUSES
    acc = match_gpu_name(gpus[0]["name"])
    assert acc is not None and acc.name == "mi300x"


def test_amd_smi_static_older_list_shape_and_junk() -> None:
    # ROCm 6's amd-smi prints the GPUs as a bare list; a market name of N/A falls to the board's
    old = '[{"gpu": 0, "asic": {"market_name": "N/A"}, "board": {"product_name": "AMD Instinct MI300X OAM"}}]'
    assert parse_amd_smi_static(old) == [
        {
            "gpu": 0,
            "name": "AMD Instinct MI300X OAM",
            "product_name": "AMD Instinct MI300X OAM",
            "bus_id": None,
        }
    ]
    assert parse_amd_smi_static("amd-smi: command failed") == []
    assert parse_amd_smi_static('{"gpu_data": "x"}') == []


def test_amd_smi_list_bus_ids_and_uuids() -> None:
    listed = parse_amd_smi_list(text("amd-smi-list-mi300x.txt"))
    assert listed == {
        0: {"bus_id": "0000:05:00.0", "uuid": "afff74a1-0000-1000-8054-e92b0a5d57c8"},
        1: {"bus_id": "0000:26:00.0", "uuid": "0aff74a1-0000-1000-805b-ce698de95724"},
        2: {"bus_id": "0000:46:00.0", "uuid": "97ff74a1-0000-1000-8065-fa81273af9ce"},
    }
    # a NIC section after the GPUs (amd-smi list on a node with AMD AI NICs) is not a GPU's
    assert parse_amd_smi_list("GPU: 0\n    BDF: 0000:23:00.0\n\nAI_NIC: 0\n    BDF: 0000:e2:00.0\n") == {
        0: {"bus_id": "0000:23:00.0", "uuid": None}
    }


def test_rocm_smi_showtopo_counts_xgmi_peers() -> None:
    topo = parse_rocm_topo(text("rocm-smi-showtopo-mi308x.txt"))
    assert topo == {i: {"xgmi_peers": 7, "pcie_peers": 0} for i in range(8)}
    assert parse_rocm_topo("no table here") == {}


def fake(outputs: dict[tuple[str, ...], str]):
    def run(args: Sequence[str]) -> str | None:
        return outputs.get(tuple(args[:2]))

    return run


AMD = {
    ("amd-smi", "static"): text("amd-smi-static-mi300x.json"),
    ("amd-smi", "list"): text("amd-smi-list-mi300x.txt"),
    ("rocm-smi", "--showtopo"): text("rocm-smi-showtopo-mi308x.txt"),
}


def test_inventory_of_a_rocm_node_records_its_gpus(tmp_path: Path) -> None:
    inv = read_inventory(sys_root=tmp_path, run=fake(AMD))
    gpus = [r for r in inv.records if r["component"] == "gpu"]
    assert len(gpus) == 8
    assert gpus[0] == {
        "component": "gpu",
        "device": "GPU0",
        "gpu": 0,
        "vendor": "amd",
        "model": "AMD Instinct MI300X",
        "product_name": "AMD Instinct MI300X OAM",
        "bus_id": "0000:1b:00.0",
        "uuid": "afff74a1-0000-1000-8054-e92b0a5d57c8",
        "xgmi_peers": 7,
        "pcie_peers": 0,
        "read_with": "amd-smi",
    }
    assert any(s.startswith("GPUs: 8 AMD GPU(s) read with amd-smi") for s in inv.skipped)
    # what an AMD GPU record says raises no finding (no Xid, no kernel log asked of it)
    assert judge_inventory([{"host": "mi1", **r} for r in inv.records]) == []


def test_inventory_falls_back_to_rocm_smi(tmp_path: Path) -> None:
    run = fake({("rocm-smi", "--showproductname"): text("rocm-smi-productname-mi250x.json")})
    (gpu,) = [r for r in read_inventory(sys_root=tmp_path, run=run).records if r["component"] == "gpu"]
    assert gpu["model"] == "AMD INSTINCT MI200 (MCM) OAM LC MBA HPE C2" and gpu["read_with"] == "rocm-smi"
    assert gpu["xgmi_peers"] is None and gpu["uuid"] is None  # not readable: not known, never 0
    assert match_gpu_name(gpu["model"]) is None  # that name does not say MI250X: not guessed


def test_the_report_takes_the_model_from_the_inventory(tmp_path: Path) -> None:
    inv = read_inventory(sys_root=tmp_path, run=fake(AMD))
    records = [{"host": h, **r} for h in ("mi1", "mi2") for r in inv.records]
    hw = from_inventory(records)
    assert hw == [{"gpu_model": "AMD Instinct MI300X", "gpu_count": 8}] * 2
    spec = fill_from_hardware(None, hw[0])
    assert spec is not None and spec.accelerator is not None and spec.accelerator.name == "mi300x"
    assert spec.intra_node_link is not None and spec.intra_node_link.name == "xgmi-mi300x"


def test_hardware_detection_reads_amd_smi_first(tmp_path: Path) -> None:
    hw = hardware.detect_hardware(tmp_path / "nothing", fake(AMD))
    assert hw["gpu_model"] == "AMD Instinct MI300X" and hw["gpu_count"] == 8


def test_stoker_report_of_an_inventory_alone_names_the_mi300x(tmp_path: Path) -> None:
    """`stoker inventory` on an MI300X node, then `stoker report`: the catalog's MI300X applies."""
    import json
    import subprocess

    from tests.conftest import STOKER

    inv = read_inventory(sys_root=tmp_path / "sys", run=fake(AMD))
    head = {"schema": 1, "kind": "host", "run_id": "r1", "ts": "2026-01-01T00:00:00Z", "host": "mi1"}
    out = tmp_path / "run"
    out.mkdir()
    (out / "host.jsonl").write_text("".join(json.dumps({**head, **r}) + "\n" for r in inv.records))
    p = subprocess.run([*STOKER, "report", str(out)], capture_output=True, text=True, timeout=120)
    assert p.returncode in (0, 1, 3), p.stderr
    assert (
        "accelerator=mi300x (from 'AMD Instinct MI300X'), gpus_per_node=8" in (out / "report.md").read_text()
    )
