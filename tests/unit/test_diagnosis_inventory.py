"""NCCL's own lines judged against the node's inventory (reports/judging/network/diagnosis.py
`misconfigured_findings` with the host records), both ways: sockets on a node whose inventory
shows active RDMA ports fail, sockets on a node without any do not; no GPU Direct RDMA where the
inventory says it is possible (nvidia_peermem or dma-buf, a NIC behind the GPUs' PCIe switch)
fails, and not where it is impossible or was used. The NCCL lines are hand-written in NCCL's
INFO format (host:pid:tid [dev] NCCL INFO ..., as in tests/data/field's recorded logs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reports.ingest.nccl_debug import DebugFacts
from reports.judging.network.diagnosis import misconfigured_findings
from reports.pipeline import collect

SOCKET_2N = [
    "n1:4100:4100 [0] NCCL INFO NET/Socket : Using [0]eno1:10.0.0.1<0>",
    "n1:4100:4100 [0] NCCL INFO Using network Socket",
    "n1:4100:4180 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/Socket/0",
]
IB_NO_GDR = [
    "n1:4100:4100 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_3:1/IB ; OOB eno1:10.0.0.1<0>",
    "n1:4100:4100 [0] NCCL INFO Using network IB",
    "n1:4100:4180 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0",
]
IB_GDR = [*IB_NO_GDR[:2], "n1:4100:4180 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA"]


def manifest(lines: list[str]) -> dict[str, Any]:
    d = DebugFacts()
    for n, line in enumerate(lines, 1):
        d.add(n, line)
    return {"source": "nccl-debug/n1.4100.log", "nccl_debug": d.to_dict()}


def inventory(
    *, rdma: bool = True, gdr: str | None = "nvidia_peermem", near: bool = True
) -> list[dict[str, Any]]:
    recs: list[dict[str, Any]] = [
        {"kind": "host", "host": "n1", "component": "node", "device": "n1", "gdr": gdr},
        {
            "kind": "host",
            "host": "n1",
            "component": "network port",
            "device": "eno1",
            "port": None,
            "state": "UP",
        },
        {
            "kind": "host",
            "host": "n1",
            "component": "host link",
            "device": "GPU0",
            "nearest_nic": "mlx5_0",
            "nic_path": "PXB" if near else "SYS",
        },
    ]
    if rdma:
        recs += [
            {
                "kind": "host",
                "host": "n1",
                "component": "network port",
                "device": d,
                "port": "1",
                "state": "ACTIVE",
            }
            for d in ("mlx5_0", "mlx5_3")
        ]
    return recs


def causes(lines: list[str], recs: list[dict[str, Any]], nodes: int = 2) -> list[tuple[str, str]]:
    return [
        (f.status, f.extra["cause"]) for f in misconfigured_findings([manifest(lines)], None, nodes, recs)
    ]


def test_sockets_on_a_node_with_active_rdma_ports_fail_naming_them() -> None:
    (f,) = misconfigured_findings([manifest(SOCKET_2N)], None, 2, inventory())
    assert (f.status, f.extra["cause"], f.component) == (
        "misconfigured",
        "socket_fallback",
        "inter-node network",
    )
    assert "n1, whose inventory shows active RDMA ports (mlx5_0 port 1" in f.message
    assert f.extra["cause_line"].endswith("Using network Socket")


def test_sockets_where_the_node_has_no_rdma_port_or_no_inventory_are_fine() -> None:
    assert causes(SOCKET_2N, inventory(rdma=False)) == []
    assert causes(SOCKET_2N, []) == []
    # one node, no channel over the network: the sockets carried nothing
    assert causes(SOCKET_2N[:2], inventory(), nodes=1) == []


def test_no_gdr_where_the_inventory_says_it_is_possible_fails() -> None:
    (f,) = misconfigured_findings([manifest(IB_NO_GDR)], None, 2, inventory())
    assert (f.extra["cause"], f.status) == ("gdr_off", "misconfigured")
    assert "did not use GPU Direct RDMA on n1" in f.message and "nvidia_peermem" in f.message
    assert causes(IB_NO_GDR, inventory(gdr="dma-buf")) == [("misconfigured", "gdr_off")]


@pytest.mark.parametrize(
    "lines,recs",
    [
        (IB_GDR, inventory()),  # used: fine
        (IB_NO_GDR, inventory(gdr="none")),  # impossible here: the rate says what it costs
        (IB_NO_GDR, inventory(gdr=None)),  # no NVIDIA driver read: nothing to say
        (IB_NO_GDR, inventory(near=False)),  # NIC across the CPU: NCCL's default GDR level skips it
    ],
    ids=["gdr-used", "gdr-impossible", "no-driver", "nic-far"],
)
def test_no_gdr_finding_where_gdr_was_used_or_cannot_be(lines: list[str], recs: list[dict[str, Any]]) -> None:
    assert causes(lines, recs) == []


def test_the_report_judges_its_own_nccl_files_against_its_inventory(tmp_path: Path) -> None:
    d = tmp_path / "res"
    (d / "nccl-debug").mkdir(parents=True)
    (d / "nccl-debug" / "n1.4100.log").write_text("\n".join(SOCKET_2N) + "\n")
    (d / "host.jsonl").write_text(
        "".join(
            json.dumps({"schema": 1, "run_id": "r", "ts": "2026-01-01T00:00:00Z", **r}) + "\n"
            for r in inventory()
        )
    )
    v = collect(d, None).verdict
    mis = [f for f in v["findings"] if f["status"] == "misconfigured"]
    assert [f["cause"] for f in mis] == ["socket_fallback"] and v["verdict"] == "fail"
