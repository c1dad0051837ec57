"""Pure parsers of what the inventory reads: nvidia-smi query CSV, `nvidia-smi topo -m`,
`nvidia-smi nvlink -s`, Xid and NVSwitch SXid lines of the kernel log. Tested on outputs in
the real formats (tests/data/inventory/, each file's header says where its bytes come from).
sysfs scalars reuse hardware_parse's parsers.

Real nvidia-smi output is not always clean CSV/text: `topo -m` underlines its header with ANSI
escapes even into a pipe, a GPU that fell off the bus turns into an "Unable to determine the
device handle" line among the healthy GPUs' rows, and `nvlink -s` prints a sentence instead of
`Link` lines when every link is down or the GPU is in MIG mode. Each is read, not dropped."""

from __future__ import annotations

import re
from typing import Any

from netbench.inventory.hardware_parse import pci_address

# PCIe generation by transfer rate per lane (PCI-SIG): what `current_link_speed` says.
GEN_BY_GTPS = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}

GPU_QUERY = (
    "index",
    "uuid",
    "pci.bus_id",
    "pcie.link.gen.gpucurrent",
    "pcie.link.gen.max",
    "pcie.link.width.current",
    "pcie.link.width.max",
    "ecc.errors.uncorrected.volatile.total",
)
# Drivers before `pcie.link.gen.gpucurrent` existed refuse the whole query for an unknown field;
# `pcie.link.gen.current` is the same value there (deprecated in its favour since R550).
LEGACY_GPU_QUERY = tuple("pcie.link.gen.current" if f == "pcie.link.gen.gpucurrent" else f for f in GPU_QUERY)
REMAP_QUERY = ("gpu_bus_id", "remapped_rows.pending", "remapped_rows.failure")
# fabric.status: the error of a registration whose fabric.state says Completed
FABRIC_QUERY = ("index", "fabric.state", "fabric.status")
LEGACY_FABRIC_QUERY = ("index", "fabric.state")

# topo -m path kinds, nearest first (nvidia-smi topo -m legend). PIX/PXB: through PCIe
# switches only; PHB/NODE/SYS: through a CPU's host bridge or across CPUs.
PATHS = ("PIX", "PXB", "PHB", "NODE", "SYS")
NEAR_PATHS = ("PIX", "PXB")

# Xid codes that mean hardware trouble (NVIDIA "Xid Errors" catalogue,
# docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html): double-bit ECC (48),
# internal micro-controller breakpoint/halt (61, 62), row remap events (63, 64), NVLink (74),
# fell off the bus (79), high SBE rate (92), contained/uncontained ECC (94, 95), GSP (119, 120),
# unrecovered ECC (140), GPU recovery action changed: reset or reboot required (154).
HARDWARE_XIDS = frozenset({48, 61, 62, 63, 64, 74, 79, 92, 94, 95, 119, 120, 140, 154})
# CSI escape sequences (ESC [ ... letter): `nvidia-smi topo -m` underlines its header with
# ESC[4m ... ESC[0m whether or not stdout is a terminal
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# "Unable to determine the device handle for GPU0000:9A:00.0: Unknown Error" (recent drivers
# print no space after "GPU", older ones do); the reason may also be "GPU is lost. Reboot ..."
_LOST = re.compile(
    r"Unable to determine the device handle for GPU\s?([0-9A-Fa-f]+:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]):\s*(.*)"
)
_NVLINK_ALL_DOWN = re.compile(r"all links are inactive", re.I)
_NVLINK_MIG = re.compile(r"not supported for Devices in MIG mode", re.I)


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


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


def parse_gpu_query(text: str, fields: tuple[str, ...] = GPU_QUERY) -> list[dict[str, Any]]:
    """One dict per GPU: index, uuid, bus_id (sysfs form), PCIe gen/width current and max, and
    uncorrected ECC errors (None where the GPU has no ECC or the driver will not say). Lines
    that are not rows (a lost GPU's error line) are left to parse_lost_gpus."""
    out = []
    gen = "pcie.link.gen.gpucurrent" if "pcie.link.gen.gpucurrent" in fields else "pcie.link.gen.current"
    for r in csv_rows(text, fields):
        if r["index"] is None or not r["index"].isdigit():
            continue
        out.append(
            {
                "gpu": int(r["index"]),
                "uuid": r.get("uuid"),
                "bus_id": pci_address(r["pci.bus_id"] or ""),
                "gen": _int(r[gen] or ""),
                "max_gen": _int(r["pcie.link.gen.max"] or ""),
                "width": _int(r["pcie.link.width.current"] or ""),
                "max_width": _int(r["pcie.link.width.max"] or ""),
                "ecc_uncorrected": _int(r["ecc.errors.uncorrected.volatile.total"] or ""),
            }
        )
    return out


def parse_lost_gpus(text: str) -> list[dict[str, str]]:
    """GPUs nvidia-smi could not open: [{bus_id (sysfs form), reason}] from its
    "Unable to determine the device handle for GPU<bus>: <reason>" lines."""
    seen: dict[str, str] = {}
    for m in _LOST.finditer(text):
        seen.setdefault(pci_address(m.group(1)), m.group(2).strip() or "Unknown Error")
    return [{"bus_id": b, "reason": r} for b, r in seen.items()]


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


def parse_fabric(text: str, fields: tuple[str, ...] = FABRIC_QUERY) -> dict[int, dict[str, str | None]]:
    """GPU index -> {state, status}: the fabric manager registration state ('Completed', 'In
    Progress', 'Not Started') and its status ('Success', else the error; valid only once the
    state is Completed). GPUs without NVSwitch say N/A and are left out."""
    return {
        int(r["index"]): {"state": r["fabric.state"], "status": r.get("fabric.status")}
        for r in csv_rows(text, fields)
        if r["index"] and r["index"].isdigit() and r["fabric.state"]
    }


def parse_topo(text: str) -> dict[str, Any]:
    """`nvidia-smi topo -m`: for each GPU its nearest NIC, the path kind to it and its NUMA
    affinity. NIC columns are named NIC0.. with a legend 'NIC0: mlx5_0' (older drivers
    name the column mlx5_0 directly)."""
    text = strip_ansi(text)
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
    """`nvidia-smi nvlink -s`: GPU index -> {links, inactive: [link ids], state}. state is
    "listed" (Link lines), "all inactive" (NVML: "Unable to retrieve Nvlink information as
    all links are inActive": the GPU has links and none is up), "mig" (NVLink is not queried
    in MIG mode: unknown, not down) or "none" (no Link lines: no NVLink on this GPU)."""
    out: dict[int, dict[str, Any]] = {}
    gpu: int | None = None
    for ln in text.splitlines():
        m = re.match(r"^GPU (\d+):", ln)
        if m:
            gpu = int(m.group(1))
            out[gpu] = {"links": 0, "inactive": [], "state": "none"}
            continue
        if gpu is not None and _NVLINK_ALL_DOWN.search(ln):
            out[gpu]["state"] = "all inactive"
            continue
        if gpu is not None and _NVLINK_MIG.search(ln):
            out[gpu]["state"] = "mig"
            continue
        m = re.match(r"^\s*Link (\d+):\s*(.*)$", ln)
        if m and gpu is not None:
            out[gpu]["state"] = "listed"
            out[gpu]["links"] += 1
            if "inactive" in m.group(2).lower():
                out[gpu]["inactive"].append(int(m.group(1)))
    return out


def parse_xids(text: str) -> list[dict[str, Any]]:
    """Kernel log lines 'NVRM: Xid (PCI:0000:18:00): 79, pid=..., GPU has fallen off the bus.'
    -> [{bus_id, xid, hardware}]; the bus id is the sysfs form without the function. Recent
    drivers may report a GPU that fell off the bus without an Xid line ("NVRM: The NVIDIA GPU
    0000:b3:00.0 / (PCI ID: ...) installed in this system has / fallen off the bus"): read as
    Xid 79 for that GPU."""
    out = []
    for m in re.finditer(r"NVRM: Xid \(PCI:([0-9a-fA-F:.]+)\): (\d+)", text):
        bus = m.group(1).lower()
        code = int(m.group(2))
        out.append({"bus_id": bus, "xid": code, "hardware": code in HARDWARE_XIDS})
    for m in re.finditer(
        r"NVRM: The NVIDIA GPU ([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})\.[0-7]\b(?:(?!NVRM: The NVIDIA GPU).){0,400}?"
        r"fallen off the bus",
        text,
        flags=re.S,
    ):
        out.append({"bus_id": m.group(1).lower(), "xid": 79, "hardware": True})
    return out


def parse_sxids(text: str) -> list[dict[str, Any]]:
    """NVSwitch errors in the kernel log: 'nvidia-nvswitch1: SXid (PCI:0000:02:00.0): 22013,
    Non-fatal, Link 00 ...' -> one entry per (switch, SXid) with fatal = any of its lines says
    'Fatal' (the 'Severity' and 'Data' lines that follow carry no verdict)."""
    got: dict[tuple[str, str, int], bool] = {}
    for m in re.finditer(r"(nvidia-nvswitch\d+): SXid \(PCI:([0-9a-fA-F:.]+)\): (\d+),\s*([^\n]*)", text):
        key = (m.group(1), pci_address(m.group(2)), int(m.group(3)))
        got[key] = got.get(key, False) or bool(re.match(r"Fatal\b", m.group(4)))
    return [{"switch": s, "bus_id": b, "sxid": c, "fatal": f} for (s, b, c), f in got.items()]
