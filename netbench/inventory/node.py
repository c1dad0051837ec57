"""The node itself in the inventory: one `component: "node"` record on every node, GPUs or
none (CPU model and logical CPUs, memory, NUMA nodes, kernel, the locked-memory limit RDMA
needs, whether GPU Direct RDMA is possible: netbench/inventory/node_facts.py), read from /proc
and /sys under `proc_root` and `sys_root`. A node with only virtual NICs and no GPU (a namespace, a CPU pod) otherwise records
nothing, and its inventory cannot be told from one that never ran; and a node with less memory
or another kernel than its peers is worth seeing beside its figures. Unreadable facts are None."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from netbench.inventory.hardware import read_text
from netbench.inventory.node_facts import PEERMEM_MODULES, gdr_support, parse_memlock


def parse_node(
    cpuinfo: str | None,
    meminfo: str | None,
    osrelease: str | None,
    numa_nodes: int | None,
    limits: str | None = None,
    modules: tuple[str, ...] = (),
    nvidia_version: str | None = None,
) -> dict[str, Any]:
    """The record's fields from the files' texts (pure)."""
    models = re.findall(r"^model name\s*:\s*(.+?)\s*$", cpuinfo or "", flags=re.M)
    cpus = len(re.findall(r"^processor\s*:", cpuinfo or "", flags=re.M))
    mem = re.search(r"^MemTotal:\s*(\d+)\s*kB", meminfo or "", flags=re.M)
    return {
        "component": "node",
        "cpu_model": models[0] if models else None,
        "cpus": cpus or None,
        "mem_GiB": round(int(mem.group(1)) / (1 << 20), 2) if mem else None,
        "numa_nodes": numa_nodes,
        "kernel": (osrelease or "").strip() or None,
        "memlock": parse_memlock(limits),  # bytes or "unlimited" (this process's soft limit)
        "gdr": gdr_support(modules, osrelease, nvidia_version),
    }


def read_node(proc_root: str | Path = "/proc", sys_root: str | Path = "/sys") -> dict[str, Any]:
    proc, nodes = Path(proc_root), Path(sys_root) / "devices/system/node"
    numa = len([d for d in nodes.glob("node[0-9]*") if d.is_dir()]) if nodes.is_dir() else None
    return parse_node(
        read_text(proc / "cpuinfo"),
        read_text(proc / "meminfo"),
        read_text(proc / "sys/kernel/osrelease"),
        numa or None,
        read_text(proc / "self" / "limits"),
        tuple(m for m in PEERMEM_MODULES if (Path(sys_root) / "module" / m).is_dir()),
        read_text(proc / "driver" / "nvidia" / "version"),
    )
