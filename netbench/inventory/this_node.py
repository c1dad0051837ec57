"""The inventory of the node a GPU rank runs on, for the NCCL environment it starts with
(netbench/nccl_env.py `fabric_env`): the latest records of this host in DIR/host.jsonl, which
the run's inventory phase wrote before the sweeps (its GPU-NIC affinity included), else the
network ports read from sysfs now (no affinity: every RDMA port counts as compute)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from netbench.inventory.read import network_ports
from reports.shared.records import HOST_FILE, iter_jsonl


def host_records(out: str | None, host: str, sys_root: str | Path = "/sys") -> list[dict[str, Any]]:
    path = Path(out) / HOST_FILE if out else None
    latest: dict[tuple[Any, ...], dict[str, Any]] = {}
    if path is not None and path.is_file():
        for _, r, _ in iter_jsonl(path):
            if r is not None and r.get("kind") == "host" and r.get("host") == host:
                latest[(r.get("component"), r.get("device"), r.get("port"))] = r
    return list(latest.values()) or network_ports(Path(sys_root))
