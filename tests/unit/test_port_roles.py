"""Ports by role and the hardware's promise, judged at the verdict.

The nodes are tests/unit/test_inventory.py's healthy DGX H100-class node (tests/data/inventory/,
hand-written in the documented sysfs and the real nvidia-smi formats, each file's header says
so), read by the real inventory reader, with sysfs files changed here. `hca_type` is written as
the mlx5 driver writes it ("MT" and the PCI device id in decimal, `hca_type_show` in
drivers/infiniband/hw/mlx5/main.c: 15b3:1021, ConnectX-7, is MT4129); the rates are in the
sysfs-class-infiniband `rate` format ("200 Gb/sec (4X HDR)"). Hand-written, not captured.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from netbench.inventory.hardware import detect_hardware
from netbench.inventory.hardware_parse import hca_max_rate, nic_total
from reports.judging.node.inventory import judge_inventory
from reports.shared.findings import FAILING
from reports.shared.port_rule import gpu_affine_nics, port_role
from reports.shared.spec import parse_spec
from reports.table.read import RecordSet
from tests.unit.recordgen import flat, judge_records
from tests.unit.test_inventory import DEGRADED, inventory_of, materialise

NDR8 = parse_spec(
    {"name": "h100", "accelerator": "h100-sxm", "network": {"inter_node": {"link": "ib-ndr", "count": 8}}},
    "spec.yaml",
)
CX7 = {f"class/infiniband/mlx5_{i}/hca_type": "MT4129\n" for i in range(8)}
AT_200 = {f"class/infiniband/mlx5_{i}/ports/1/rate": "200 Gb/sec (4X HDR)\n" for i in range(8)}


def extra_port(dev: str, state: str, phys: str, rate: str) -> dict[str, str]:
    """An RDMA port with no GPU near it (absent from topo -m's NIC columns)."""
    base = f"class/infiniband/{dev}/ports/1/"
    return {
        f"class/infiniband/{dev}/hca_type": "MT4129\n",
        base + "state": state,
        base + "phys_state": phys,
        base + "rate": rate,
        base + "link_layer": "InfiniBand\n",
    }


def node(tmp_path: Path, host: str, sys: dict[str, str]) -> list[dict[str, Any]]:
    return [{**r, "host": host} for r in inventory_of(tmp_path / host, {"sys": sys})]


def test_a_fleet_at_200g_on_400g_hcas_fails_naming_down_training_on_each_node(tmp_path: Path) -> None:
    hosts = ("node1", "node2")
    recs = [r for h in hosts for r in node(tmp_path, h, {**CX7, **AT_200})]
    port0 = next(r for r in recs if r["device"] == "mlx5_0")
    assert (port0["rate_Gbps"], port0["max_rate_Gbps"], port0["hca_type"]) == (200.0, 400.0, "MT4129")
    j = judge_records(RecordSet(host=recs))
    assert j.verdict == "fail"
    down = [f for f in j.findings if f.check == "port down-trained"]
    assert {(f.hosts, f.extra["device"]) for f in down} == {
        ((h,), f"mlx5_{i}") for h in hosts for i in range(8)
    }
    assert all(f.status == "below_spec" and (f.measured, f.expected) == (200.0, 400.0) for f in down)
    assert "node2 mlx5_3 port 1 down-trained: 200 Gb/s, its adapter supports 400 Gb/s, MT4129" in {
        f.message.split(";")[0] for f in down
    }
    # all eight agree at 200: the sibling check alone would have passed this fleet
    assert not [f for f in j.findings if f.check == "port rate vs siblings"]


def test_one_port_below_its_adapter_is_one_finding_not_two(tmp_path: Path) -> None:
    sys = {**CX7, **DEGRADED["port-half-rate"]["sys"]}
    found = [f for f in judge_inventory(node(tmp_path, "node7", sys)) if f.status in FAILING]
    assert [(f.check, f.extra["device"], f.measured, f.expected) for f in found] == [
        ("port down-trained", "mlx5_5", 200.0, 400.0)
    ]


def test_a_healthy_node_with_two_unused_down_ports_and_a_storage_nic_passes_listing_them(
    tmp_path: Path,
) -> None:
    sys = {
        **CX7,
        **extra_port("mlx5_8", "1: DOWN\n", "3: Disabled\n", "10 Gb/sec (4X SDR)\n"),
        **extra_port("mlx5_9", "1: DOWN\n", "2: Polling\n", "10 Gb/sec (4X SDR)\n"),
        **extra_port("mlx5_10", "4: ACTIVE\n", "5: LinkUp\n", "200 Gb/sec (4X HDR)\n"),
    }
    recs = node(tmp_path, "node7", sys)
    assert {
        r["device"]: port_role(r, gpu_affine_nics(recs)) for r in recs if r["component"] == "network port"
    } == {
        **{f"mlx5_{i}": "compute" for i in range(8)},
        "mlx5_8": "unused",
        "mlx5_9": "unused",
        "mlx5_10": "storage",
        "eno1": "management",
    }
    j = judge_records(RecordSet(host=recs))
    assert not [f for f in j.findings if f.status in FAILING and f.component == "network port"]
    assert j.verdict != "fail"
    # with a spec of 8 x NDR and the inter-node plateau at 48 of its 50 GB/s per GPU
    both = [r for h in ("node7", "node8") for r in node(tmp_path / "spec", h, sys)]
    net = flat("inter-node", "all_reduce", 48.0, ("node7", "node8"))
    jn = judge_records(RecordSet(net=net, host=both), NDR8)
    # no failing finding: the verdict is not `fail` (`incomplete` here only because these records
    # hold no intra-node sweep and no manifest showing the GPUs)
    assert not [f for f in jn.findings if f.status in FAILING] and jn.verdict != "fail"
    assert (
        "node7: network ports not in the GPUs' promise, listed, not judged: unused: mlx5_8 port 1 (DOWN), "
        "mlx5_9 port 1 (DOWN); storage or another fabric: mlx5_10 port 1 at 200 Gb/s"
    ) in jn.notes


def test_a_down_port_of_a_gpu_rail_is_still_a_fault(tmp_path: Path) -> None:
    recs = node(tmp_path, "node7", {**CX7, **DEGRADED["ib-port-down"]["sys"]})
    assert "mlx5_3" in (gpu_affine_nics(recs) or set())
    j = judge_records(RecordSet(host=recs))
    assert j.verdict == "fail"
    assert [(f.check, f.extra["device"]) for f in j.findings if f.status in FAILING] == [
        ("port state", "mlx5_3")
    ]


def test_without_gpu_affinity_every_rdma_port_counts() -> None:
    # hand-written records in the inventory's format: a node without GPUs (no host link records)
    ports = [
        {"component": "network port", "device": "mlx5_0", "port": "1", "state": "ACTIVE", "rate_Gbps": 400.0},
        {"component": "network port", "device": "mlx5_1", "port": "1", "state": "DOWN", "rate_Gbps": 10.0},
        {"component": "network port", "device": "eno1", "port": None, "state": "UP", "rate_Gbps": 25.0},
    ]
    assert gpu_affine_nics(ports) is None
    assert [port_role(p, None) for p in ports] == ["compute", "compute", "management"]
    found = judge_inventory([{"host": "cpu1", **p} for p in ports])
    assert [(f.check, f.extra["device"]) for f in found] == [("port state", "mlx5_1")]


def test_the_detected_promise_is_the_adapters_not_the_negotiated_rate(tmp_path: Path) -> None:
    root, _ = materialise(tmp_path, {"sys": {**CX7, **AT_200}})
    hw = detect_hardware(root, run=lambda args: None)
    assert hw["nic_total_GBps"] == 400.0 and hw["nic_desc"] == "8 x 400 Gb/s RDMA ports (detected)"
    # an adapter not in the table promises what it runs at, as before
    assert hca_max_rate("MT9999") is None
    assert nic_total([{"state": "ACTIVE", "rate_Gbps": 200.0, "max_rate_Gbps": None}], []) == (
        25.0,
        "1 x 200 Gb/s RDMA ports (detected)",
    )


def test_a_slower_variant_of_the_chip_on_a_spec_of_its_own_rate_is_not_down_trained(tmp_path: Path) -> None:
    # ConnectX-7 is also sold as NDR200: eight MT4129 ports at 200 Gb/s on a spec of 8 x HDR
    # (200 Gb/s ports) run at their promise; on a spec of 8 x NDR (400 Gb/s) they are down-trained
    hdr8 = parse_spec({"name": "a", "network": {"inter_node": {"link": "ib-hdr", "count": 8}}}, "spec.yaml")
    recs = node(tmp_path, "node1", {**CX7, **AT_200})
    assert not [f for f in judge_inventory(recs, hdr8) if f.check == "port down-trained"]
    assert len([f for f in judge_inventory(recs, NDR8) if f.check == "port down-trained"]) == 8
