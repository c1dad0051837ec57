"""A (host, rail) localisation finding names the NIC nearest that rail's GPU: a node's inventory
read from the real formats (tests/data/inventory: `nvidia-smi topo -m` bytes, sysfs) with
mlx5_5 at half rate (the `port-half-rate` case), and a soak counter record hand-written in
counters.jsonl's documented format (docs/contract.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from reports.judging.network.rail_nic import name_nics, nic_of
from reports.shared.findings import Finding
from tests.unit.test_inventory import D, inventory_of


def finding(rail: int | None, hosts: tuple[str, ...] = ("node7",)) -> Finding:
    extra = {} if rail is None else {"rail": rail}
    return Finding(
        component="node", check="pair busbw", status="below_spec", measured=25.0, expected=50.0,
        unit="GB/s", hosts=hosts, message="Rail 5 only: node7 is slow with every partner.", extra=extra,
    )  # fmt: skip


def records(tmp_path: Path) -> list[dict[str, Any]]:
    case = yaml.safe_load((D / "degraded.yaml").read_text())["port-half-rate"]
    return inventory_of(tmp_path, case)


def test_rail_5_finding_names_mlx5_5_its_rate_pcie_and_moved_counters(tmp_path: Path) -> None:
    counters = [
        {"kind": "counter", "host": "node7", "device": "mlx5_5:1", "counter": "symbol_error", "delta": 12},
        {"kind": "counter", "host": "node7", "device": "mlx5_5:1", "counter": "link_downed", "delta": 1},
        {"kind": "counter", "host": "node7", "device": "mlx5_5:1", "counter": "port_xmit_data", "delta": 9e9},
        {"kind": "counter", "host": "node7", "device": "mlx5_4:1", "counter": "symbol_error", "delta": 5},
    ]
    (f,) = name_nics([finding(5)], records(tmp_path), counters)
    # topo -m: GPU5's PXB column is NIC5, legend NIC5: mlx5_5; sysfs: port 1 at 200 Gb/s (the
    # case), PCIe Gen5 (32 GT/s) x16 of Gen5 x16; counters: the error ones of mlx5_5:1 only
    (nic,) = f.extra["nic"]
    assert (nic["host"], nic["device"], nic["port"], nic["rate_Gbps"], nic["gpu"], nic["nic_path"]) == (
        "node7", "mlx5_5", "1", 200.0, "GPU5", "PXB",
    )  # fmt: skip
    assert nic["pcie"] == {"gen": 5, "max_gen": 5, "width": 16, "max_width": 16}
    # the port's sysfs state (healthy-sys.yaml: `4: ACTIVE`): a slow rail, not a down one
    assert nic["state"] == "ACTIVE"
    assert nic["counters"] == {"symbol_error": 12, "link_downed": 1}
    assert f.message.endswith(
        "node7's GPU5 is nearest mlx5_5 port 1, 200 Gb/s, PCIe Gen5 x16 (of Gen5 x16), "
        "errors during the run: link_downed +1, symbol_error +12."
    )


def test_findings_without_rail_or_inventory_are_left_alone(tmp_path: Path) -> None:
    recs = records(tmp_path)
    assert name_nics([finding(None)], recs) == [finding(None)]
    assert name_nics([finding(5, ("node9",))], recs) == [finding(5, ("node9",))]
    assert nic_of("node7", 8, recs) is None  # no GPU8 on this node
