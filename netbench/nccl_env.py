"""NCCL's own account of a GPU run, kept (pure): the environment that makes every rank's NCCL
write its INFO lines — the network it chose and why, GPU Direct RDMA, each channel's transport —
into the results dir, one file per rank (NCCL expands %h to the host and %p to the pid). The
report reads them (reports/ingest/nccl_debug_files.py) and names the cause of a slow figure from
them (docs/diagnosis.md). A user who set NCCL_DEBUG or NCCL_DEBUG_FILE chose where NCCL speaks:
that choice stands.

And the network NCCL is to use, from the node's inventory (`fabric_env`): the compute ports
(reports/shared/port_rule.py: the RDMA ports of the NICs next to the GPUs, every RDMA port where the
node shows no affinity) named exactly in NCCL_IB_HCA (`=mlx5_0:1,mlx5_3:1`: the `=` makes
NCCL match whole names, so mlx5_1 does not also take mlx5_10), the RoCE GID index NCCL's own
rule finds in those ports' GID tables where they all agree (netbench/inventory/node_facts.py),
and, on a node without an active RDMA port, NCCL_SOCKET_IFNAME naming the fastest hardware
Ethernet interfaces that are up (`=eth1`), so the sockets carry the data over the data network,
not the first interface NCCL finds. Any of these the user set (in the environment the ranks
start with, even set empty) stands: that is how to override, or to hand the choice back to
NCCL (`NCCL_IB_HCA=`)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from reports.shared.port_rule import port_role
from reports.shared.records import NCCL_DEBUG_DIR

# INIT: the network chosen, the channels' transports, nRanks/nNodes; NET: GDR per NIC, the
# plugin; ENV: the NCCL_* settings it was given. GRAPH (the topology search) is left out: long.
SUBSYS = "INIT,NET,ENV"


def debug_env(environ: Mapping[str, str], out: str | None) -> dict[str, str]:
    """What to add to a rank's environment before NCCL starts (nothing without a results dir,
    or where the user set NCCL_DEBUG / NCCL_DEBUG_FILE)."""
    if not out or environ.get("NCCL_DEBUG") or environ.get("NCCL_DEBUG_FILE"):
        return {}
    return {
        "NCCL_DEBUG": "INFO",
        "NCCL_DEBUG_SUBSYS": SUBSYS,
        "NCCL_DEBUG_FILE": os.path.join(out, NCCL_DEBUG_DIR, "%h.%p.log"),
    }


def compute_ports(ports: Sequence[Mapping[str, Any]], affine: set[str] | None) -> list[Mapping[str, Any]]:
    """The node's ACTIVE RDMA ports that carry the GPUs' traffic, in device and port order."""
    return sorted(
        (p for p in ports if p.get("state") == "ACTIVE" and port_role(dict(p), affine) == "compute"),
        key=lambda p: (str(p.get("device")), str(p.get("port"))),
    )


def socket_ifaces(ports: Sequence[Mapping[str, Any]]) -> list[str]:
    """The hardware Ethernet interfaces that are up at the node's fastest Ethernet rate."""
    up = [p for p in ports if not p.get("port") and p.get("state") == "UP" and p.get("rate_Gbps")]
    top = max((p["rate_Gbps"] for p in up), default=None)
    return sorted(str(p["device"]) for p in up if p["rate_Gbps"] == top)


def fabric_env(
    ports: Sequence[Mapping[str, Any]], affine: set[str] | None, environ: Mapping[str, str]
) -> dict[str, str]:
    """What to add to a GPU rank's environment from its node's `network port` records and the
    NICs next to its GPUs (`affine`, None: no affinity known); a variable already in `environ`
    is the user's and is left out."""
    rdma = compute_ports(ports, affine)
    out: dict[str, str] = {}
    if rdma:
        out["NCCL_IB_HCA"] = "=" + ",".join(f"{p['device']}:{p['port']}" for p in rdma)
        gids = {p.get("roce_gid_index") for p in rdma if p.get("link_layer") == "Ethernet"}
        if len(gids) == 1 and (gid := gids.pop()) is not None:
            out["NCCL_IB_GID_INDEX"] = str(gid)
    elif ifaces := socket_ifaces(ports):
        out["NCCL_SOCKET_IFNAME"] = "=" + ",".join(ifaces)
    return {k: v for k, v in out.items() if k not in environ}
