"""Hardware detection (netbench/inventory/hardware*.py) on the outputs in tests/data/detect/ (one
recorded, the rest hand-written in the real formats: tests/data/SOURCES.md),
and the report's summary of it (reports/evidence/hosts.py)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pytest
import yaml

from netbench.inventory import hardware
from netbench.inventory import hardware_parse as hp
from reports.evidence.hosts import summarise
from reports.shared.catalog import match_gpu_name
from tests.conftest import DATA

D = DATA / "detect"


def accelerator_of(reported: str) -> str | None:
    acc = match_gpu_name(reported)
    return acc.name if acc else None


def sys_tree(tmp_path: Path, name: str) -> Path:
    """Materialise a hand-written /sys tree (files and symlinks) under tmp_path."""
    spec = yaml.safe_load((D / name).read_text())
    root = tmp_path / "sys"
    for rel, content in spec["files"].items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(content)
    for rel, target in spec.get("links", {}).items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(root / target, p)
    return root


def test_nvidia_smi_dgx_h100() -> None:
    gpus = hp.parse_nvidia_smi((D / "nvidia-smi-dgx-h100.csv").read_text())
    assert len(gpus) == 8
    assert gpus[0] == {"name": "NVIDIA H100 80GB HBM3", "memory_MiB": 81559, "bus_id": "0000:18:00.0"}
    assert gpus[1]["bus_id"] == "0000:2a:00.0"  # nvidia-smi's upper case and 8-digit domain -> sysfs form
    assert accelerator_of(gpus[0]["name"]) == "h100-sxm"


def test_nvidia_smi_recorded_on_a_real_h100() -> None:
    # recorded on this project's lent GPU machine (one H100 in a VM, driver 580.159.04)
    gpus = hp.parse_nvidia_smi((D / "nvidia-smi-h100-vm-recorded.csv").read_text())
    assert gpus == [{"name": "NVIDIA H100 80GB HBM3", "memory_MiB": 81559, "bus_id": "0000:00:06.0"}]
    assert accelerator_of(gpus[0]["name"]) == "h100-sxm"


@pytest.mark.parametrize(
    ("file", "count", "accelerator"),
    [
        ("nvidia-smi-a100-sxm.csv", 2, "a100-sxm"),
        ("nvidia-smi-h100-pcie.csv", 1, "h100-pcie"),
    ],
)
def test_nvidia_smi_other_models(file: str, count: int, accelerator: str) -> None:
    gpus = hp.parse_nvidia_smi((D / file).read_text())
    assert len(gpus) == count
    assert accelerator_of(gpus[0]["name"]) == accelerator


@pytest.mark.parametrize(
    ("file", "count", "accelerator", "bus"),
    [
        ("rocm-smi-mi300x.json", 2, "mi300x", "0000:05:00.0"),
        (
            "rocm-smi-mi250x-old.json",
            1,
            "mi250x",
            "0000:c1:00.0",
        ),  # older ROCm: "Card series", a "system" key
    ],
)
def test_rocm_smi(file: str, count: int, accelerator: str, bus: str) -> None:
    gpus = hp.parse_rocm_smi((D / file).read_text())
    assert len(gpus) == count
    assert gpus[0]["bus_id"] == bus
    assert accelerator_of(gpus[0]["name"]) == accelerator


def test_parsers_on_odd_values() -> None:
    assert hp.parse_ib_rate("400 Gb/sec (4X NDR)\n") == 400.0
    assert hp.parse_ib_rate("56 Gb/sec (4X FDR)") == 56.0
    assert hp.parse_ib_rate("garbage") is None
    assert hp.parse_ib_state("4: ACTIVE\n") == "ACTIVE"
    assert hp.parse_net_speed("-1\n") is None
    assert hp.parse_net_speed("") is None
    assert hp.parse_net_speed("25000\n") == 25000
    assert hp.parse_pcie_speed("16.0 GT/s PCIe\n") == 16.0
    assert hp.parse_pcie_speed("8 GT/s") == 8.0
    assert hp.parse_pcie_speed("Unknown") is None
    assert hp.parse_rocm_smi("not json") == []
    assert hp.parse_nvidia_smi("No devices were found\n") == []


def fake_runner(outputs: dict[str, str]):
    def run(args: Sequence[str]) -> str | None:
        return outputs.get(args[0])

    return run


def test_detect_dgx_h100(tmp_path: Path) -> None:
    root = sys_tree(tmp_path, "sys-dgx-h100.yaml")
    hw = hardware.detect_hardware(
        root, fake_runner({"nvidia-smi": (D / "nvidia-smi-dgx-h100.csv").read_text()})
    )
    assert hw["gpu_model"] == "NVIDIA H100 80GB HBM3"
    assert hw["gpu_count"] == 8
    assert hw["gpus"][0]["pcie"] == {"speed_GTps": 32.0, "width": 16}
    assert hw["gpus"][1]["pcie"] == {"speed_GTps": 16.0, "width": 8}  # a degraded slot shows up
    assert [p["device"] for p in hw["ib_ports"]] == ["mlx5_0", "mlx5_1", "mlx5_2"]
    # two active NDR ports: 2 x 400 Gb/s / 8 = 100 GB/s; the DOWN port and the management NIC do not count
    assert hw["nic_total_GBps"] == 100.0
    assert hw["nic_desc"] == "2 x 400 Gb/s RDMA ports (detected)"
    assert hw["ib_ports"][0]["pcie"] == {"speed_GTps": 32.0, "width": 16}
    assert [n["iface"] for n in hw["net"]] == [
        "eno1"
    ]  # docker0 and the IPoIB netdev without device link are virtual here


def test_detect_ethernet_only(tmp_path: Path) -> None:
    root = sys_tree(tmp_path, "sys-roce-eth.yaml")
    hw = hardware.detect_hardware(root, fake_runner({}))
    assert "gpu_model" not in hw and "ib_ports" not in hw
    assert {n["iface"] for n in hw["net"]} == {"ens41np0", "ens42np0", "eno1"}  # veth has no device: left out
    # 2 x 400 GbE = 800 Gb/s = 100 GB/s; the 1 GbE management port is not fabric
    assert hw["nic_total_GBps"] == 100.0
    by_name = {n["iface"]: n for n in hw["net"]}
    assert by_name["ens42np0"]["pcie"] == {}  # "Unknown" speed and width 0 are not reported
    assert by_name["eno1"]["pcie"] == {"speed_GTps": 5.0, "width": 1}


def test_detect_rocm_fallback(tmp_path: Path) -> None:
    hw = hardware.detect_hardware(
        tmp_path / "nothing", fake_runner({"rocm-smi": (D / "rocm-smi-mi300x.json").read_text()})
    )
    assert hw["gpu_count"] == 2 and "MI300X" in hw["gpu_model"]


def test_detect_on_this_host_never_raises() -> None:
    hw = hardware.detect_hardware()
    assert isinstance(hw, dict) and "error" not in hw


def test_absent_tool_gives_none() -> None:
    assert hardware.run_tool(["stoker-no-such-tool-h4"]) is None


def test_summarise_takes_the_most_common_and_notes_disagreement() -> None:

    good = {"gpu_model": "NVIDIA H100 80GB HBM3", "gpu_count": 8, "nic_total_GBps": 400.0}
    bad = {**good, "gpu_count": 7}
    s = summarise([good, good, bad])
    assert s["gpu_count"] == 8 and s["hosts"] == 3
    assert s["disagreements"] == ["detected gpu_count differs between hosts: 8 on 2 host(s), 7 on 1 host(s)"]
    assert summarise([]) == {}
