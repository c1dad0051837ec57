"""Pure parsers of what the inventory reads: nvidia-smi query CSV, `nvidia-smi topo -m`,
`nvidia-smi nvlink -s`, Xid lines of the kernel log. Tested on recorded outputs
(tests/data/inventory/). sysfs scalars reuse hardware_parse's parsers."""

from __future__ import annotations

import re
from typing import Any

from netbench.inventory.hardware_parse import pci_address

# PCIe generation by transfer rate per lane (PCI-SIG): what `current_link_speed` says.
GEN_BY_GTPS = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}

GPU_QUERY = (
    "index",
    "pci.bus_id",
    "pcie.link.gen.current",
    "pcie.link.gen.max",
    "pcie.link.width.current",
    "pcie.link.width.max",
    "ecc.errors.uncorrected.volatile.total",
)
REMAP_QUERY = ("gpu_bus_id", "remapped_rows.pending", "remapped_rows.failure")
FABRIC_QUERY = ("index", "fabric.state")

# topo -m path kinds, nearest first (nvidia-smi topo -m legend). PIX/PXB: through PCIe
# switches only; PHB/NODE/SYS: through a CPU's host bridge or across CPUs.
PATHS = ("PIX", "PXB", "PHB", "NODE", "SYS")
NEAR_PATHS = ("PIX", "PXB")

# Xid codes that mean hardware trouble (NVIDIA "Xid Errors" catalogue): double-bit ECC (48),
# row remap events (63, 64), NVLink (74), fell off the bus (79), high SBE rate (92),
# contained/uncontained ECC (94, 95), GSP (119, 120).
HARDWARE_XIDS = frozenset({48, 63, 64, 74, 79, 92, 94, 95, 119, 120})


def gen_of(gtps: float | None) -> int | None:
    return GEN_BY_GTPS.get(gtps) if gtps is not None else None


def _value(text: str) -> str | None:
    t = text.strip()
    return None if not t or t.startswith("[") or t.upper() in ("N/A", "NOT SUPPORTED") else t


def _int(text: str) -> int | None:
    v = _value(text)
    return int(v) if v is not None and v.isdigit() else None


def csv_rows(text: str, fields: tuple[str, ...]) -> list[dict[str, str | None]]:
    """`--format=csv,noheader,nounits` lines as dicts; '[N/A]', '[Not Supported]' -> None."""
    rows = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == len(fields) and any(parts):
            rows.append({f: _value(p) for f, p in zip(fields, parts)})
    return rows


def parse_gpu_query(text: str) -> list[dict[str, Any]]:
    """One dict per GPU: index, bus_id (sysfs form), PCIe gen/width current and max, and
    uncorrected ECC errors (None where the GPU has no ECC or the driver will not say)."""
    out = []
    for r in csv_rows(text, GPU_QUERY):
        if r["index"] is None or not r["index"].isdigit():
            continue
        out.append(
            {
                "gpu": int(r["index"]),
                "bus_id": pci_address(r["pci.bus_id"] or ""),
                "gen": _int(r["pcie.link.gen.current"] or ""),
                "max_gen": _int(r["pcie.link.gen.max"] or ""),
                "width": _int(r["pcie.link.width.current"] or ""),
                "max_width": _int(r["pcie.link.width.max"] or ""),
                "ecc_uncorrected": _int(r["ecc.errors.uncorrected.volatile.total"] or ""),
            }
        )
    return out


def _yes(v: str | None) -> bool | None:
    if v is None:
        return None
    return v.strip().lower() in ("yes", "1", "true")


def parse_remapped_rows(text: str) -> dict[str, dict[str, bool | None]]:
    """bus id -> {pending, failure}; the driver prints Yes/No or 1/0 depending on version."""
    return {
        pci_address(r["gpu_bus_id"] or ""): {
            "pending": _yes(r["remapped_rows.pending"]),
            "failure": _yes(r["remapped_rows.failure"]),
        }
        for r in csv_rows(text, REMAP_QUERY)
        if r["gpu_bus_id"]
    }


def parse_fabric(text: str) -> dict[int, str]:
    """GPU index -> fabric manager state ('Completed', 'In Progress', 'Not Started'); GPUs
    without NVSwitch say N/A and are left out."""
    return {
        int(r["index"]): r["fabric.state"]
        for r in csv_rows(text, FABRIC_QUERY)
        if r["index"] and r["index"].isdigit() and r["fabric.state"]
    }


def parse_topo(text: str) -> dict[str, Any]:
    """`nvidia-smi topo -m`: for each GPU its nearest NIC, the path kind to it and its NUMA
    affinity. NIC columns are named NIC0.. with a legend 'NIC0: mlx5_0' (older drivers
    name the column mlx5_0 directly)."""
    lines = [ln.rstrip() for ln in text.splitlines()]
    # the header row starts with blank space, the GPU rows with their own name
    header = next((ln for ln in lines if re.match(r"^\s+GPU0\b", ln)), None)
    if header is None:
        return {}
    cols = [c.strip() for c in re.split(r"\t+|\s{2,}", header.strip()) if c.strip()]
    legend = dict(re.findall(r"^\s*(NIC\d+):\s*(\S+)\s*$", text, flags=re.M))
    gpus: dict[str, Any] = {}
    for ln in lines:
        m = re.match(r"^(GPU\d+)\s", ln)
        if not m:
            continue
        cells = [c.strip() for c in re.split(r"\t+|\s{2,}", ln.strip()) if c.strip()][1:]
        row = dict(zip(cols, cells))
        nics = [
            (row[c], legend.get(c, c))
            for c in cols
            if (c.startswith("NIC") or c.startswith("mlx")) and row.get(c) in PATHS
        ]
        best = min(nics, key=lambda p: PATHS.index(p[0]), default=None)
        numa = row.get("NUMA Affinity")
        gpus[m.group(1)] = {
            "nearest_nic": best[1] if best else None,
            "nic_path": best[0] if best else None,
            "numa_node": int(numa) if numa and numa.isdigit() else None,
        }
    return gpus


def parse_nvlink_status(text: str) -> dict[int, dict[str, Any]]:
    """`nvidia-smi nvlink -s`: GPU index -> {links, inactive: [link ids]}."""
    out: dict[int, dict[str, Any]] = {}
    gpu: int | None = None
    for ln in text.splitlines():
        m = re.match(r"^GPU (\d+):", ln)
        if m:
            gpu = int(m.group(1))
            out[gpu] = {"links": 0, "inactive": []}
            continue
        m = re.match(r"^\s*Link (\d+):\s*(.*)$", ln)
        if m and gpu is not None:
            out[gpu]["links"] += 1
            if "inactive" in m.group(2).lower():
                out[gpu]["inactive"].append(int(m.group(1)))
    return out


def parse_xids(text: str) -> list[dict[str, Any]]:
    """Kernel log lines 'NVRM: Xid (PCI:0000:18:00): 79, pid=..., GPU has fallen off the bus.'
    -> [{bus_id, xid, hardware}]; the bus id is the sysfs form without the function."""
    out = []
    for m in re.finditer(r"NVRM: Xid \(PCI:([0-9a-fA-F:.]+)\): (\d+)", text):
        bus = m.group(1).lower()
        code = int(m.group(2))
        out.append({"bus_id": bus, "xid": code, "hardware": code in HARDWARE_XIDS})
    return out
