"""Which of a node's network ports carry the GPUs' inter-node promise, and whether each runs at
the rate its hardware supports (pure). Hooked into reports/judging/node/inventory.py. The role rule
itself lives on the floor (reports/shared/port_rule.py), where the ranks' NCCL_IB_HCA reads it too.

A port's role comes from the inventory's GPU-NIC affinity (`nvidia-smi topo -m`, the
`host link` records' `nearest_nic` behind a PCIe switch): the RDMA ports of those NICs are the
compute fabric NCCL uses; other RDMA ports are unused (not ACTIVE) or storage (ACTIVE), and
ports without RDMA are management (never judged, as before). Where no GPU has a NIC behind its
PCIe switch (no GPU, no `topo -m`, a VM whose NICs are all through the CPU) every RDMA port is
compute. Only compute ports are judged against the promise; the other RDMA ports are listed in
one note per node (the report's notes), neither failed nor passed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from reports.shared.findings import Finding
from reports.shared.port_rule import Role, gpu_affine_nics, port_role

# the RDMA ports not counted, listed in one note (how the note names them); management
# ports were never judged and are listed in the report's Node inventory table with the rest
NOT_COUNTED: dict[Role, str] = {"unused": "unused", "storage": "storage or another fabric"}


def port_name(p: dict[str, Any]) -> str:
    return f"{p['device']} port {p['port']}" if p.get("port") else str(p["device"])


def ports_not_counted(records: Sequence[dict[str, Any]]) -> list[str]:
    """One note per node listing the RDMA ports that carry no promise (unused, storage): listed
    in the report, not judged, so they neither fail nor pass a node. The latest record of each
    (host, device, port) counts, as in judge_inventory."""
    latest: dict[tuple[Any, ...], dict[str, Any]] = {}
    for r in records:
        latest[(r.get("host"), r.get("component"), r.get("device"), r.get("port"))] = r
    by_host: dict[str, list[dict[str, Any]]] = {}
    for r in latest.values():
        by_host.setdefault(str(r.get("host", "?")), []).append(r)
    notes = []
    for host in sorted(by_host):
        recs = by_host[host]
        affine = gpu_affine_nics(recs)
        roles = [(p, port_role(p, affine)) for p in recs if p.get("component") == "network port"]
        parts = []
        for role, label in NOT_COUNTED.items():
            names = [
                port_name(p)
                + (f" ({p.get('state') or 'state unknown'})" if role == "unused" else "")
                + (f" at {p['rate_Gbps']:g} Gb/s" if role == "storage" and p.get("rate_Gbps") else "")
                for p, r in roles
                if r == role
            ]
            if names:
                parts.append(f"{label}: {', '.join(names)}")
        if parts:
            notes.append(
                f"{host}: network ports not in the GPUs' promise, listed, not judged: {'; '.join(parts)}"
            )
    return notes


def down_trained(host: str, p: dict[str, Any], spec_port_Gbps: float | None = None) -> Finding | None:
    """An active port running below the rate its adapter supports (`max_rate_Gbps`), or below
    the spec's per-port rate where the spec names a port link slower than the chip's maximum (a
    ConnectX-7 sold as NDR200 on a spec of 200G ports runs at its promise: not down-trained)."""
    top, rate = p.get("max_rate_Gbps"), p.get("rate_Gbps")
    if top and spec_port_Gbps:
        top = min(top, spec_port_Gbps)
    if p.get("state") != "ACTIVE" or not top or not rate or rate >= top:
        return None
    chip = f", {p['hca_type']}" if p.get("hca_type") else ""
    return Finding(
        component="network port",
        check="port down-trained",
        status="below_spec",
        measured=rate,
        expected=top,
        unit="Gb/s",
        hosts=(host,),
        message=f"{host} {port_name(p)} down-trained: {rate:g} Gb/s, its adapter supports {top:g} Gb/s"
        f"{chip}; check the cable, the transceiver and the switch port's speed setting.",
        extra={"device": p["device"], "port": p.get("port")},
    )
