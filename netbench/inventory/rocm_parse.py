"""Pure parsers of what a ROCm node's tools say of its GPUs: `amd-smi static --json` (model and
bus id), `amd-smi list` (bus id and UUID), `rocm-smi --showtopo` (which GPU pairs xGMI joins);
`rocm-smi --showproductname --showbus --json` is hardware_parse.parse_rocm_smi. Tested on real
outputs (tests/data/inventory/rocm/, its README says where each comes from). The reading
itself is netbench/inventory/read.py (`stoker inventory`) and hardware.py (the manifest).

amd-smi's JSON changed shape across releases: a list of GPUs (ROCm 6), or the list under
`gpu_data` (ROCm 7). Its `asic.market_name` is the marketing name on most boards ("AMD
Instinct MI300X") but a short one on some ("MI300X-O", the ROCm blog's MI300X node); the
board's `product_name` is kept beside it."""

from __future__ import annotations

import json
import re
from typing import Any

from netbench.inventory.hardware_parse import pci_address

_UNKNOWN = frozenset({"", "n/a", "na", "unknown"})
# rocm-smi --showtopo: the table of link types, one row per GPU ("GPU0   0   XGMI   XGMI ...")
_TOPO_TITLE = re.compile(r"=+\s*Link Type between two GPUs\s*=+")
_TOPO_ROW = re.compile(r"^GPU(\d+)\s+(.*)$")
# amd-smi list: "GPU: 0" then indented "BDF: ..." and "UUID: ..." lines
_LIST_GPU = re.compile(r"^GPU:\s*(\d+)\s*$")
_LIST_FIELD = re.compile(r"^\s+([A-Z_]+):\s*(.*?)\s*$")


def _text(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip().lower() not in _UNKNOWN else None


def _part(gpu: dict[str, Any], key: str) -> dict[str, Any]:
    value = gpu.get(key)
    return value if isinstance(value, dict) else {}


def _gpus(data: Any) -> list[Any]:
    if isinstance(data, dict):
        data = data.get("gpu_data", [])
    return data if isinstance(data, list) else []


def parse_amd_smi_static(text: str) -> list[dict[str, Any]]:
    """`amd-smi static --json` (all of it, or `--asic --bus --board`): one dict per GPU with
    gpu (amd-smi's index), name (the ASIC's market name, else the board's product name),
    product_name, bus_id (sysfs form). Not JSON, or no GPU in it: []."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return []
    out = []
    for g in _gpus(data):
        if not isinstance(g, dict) or not isinstance(g.get("gpu"), int):
            continue
        asic, board, bus = (_part(g, k) for k in ("asic", "board", "bus"))
        product = _text(board.get("product_name"))
        bdf = _text(bus.get("bdf"))
        out.append(
            {
                "gpu": g["gpu"],
                "name": _text(asic.get("market_name")) or product or "",
                "product_name": product,
                "bus_id": pci_address(bdf) if bdf else None,
            }
        )
    return out


def parse_amd_smi_list(text: str) -> dict[int, dict[str, str | None]]:
    """`amd-smi list` (its text form): amd-smi's GPU index -> {bus_id, uuid}."""
    out: dict[int, dict[str, str | None]] = {}
    current: int | None = None
    for line in text.splitlines():
        m = _LIST_GPU.match(line)
        if m:
            current = int(m.group(1))
            out[current] = {"bus_id": None, "uuid": None}
            continue
        f = _LIST_FIELD.match(line)
        if f is None or current is None:
            if line.strip() and not line.startswith((" ", "\t")):
                current = None  # another section (AI_NIC: ...)
            continue
        key, value = f.group(1), _text(f.group(2))
        if key == "BDF" and value:
            out[current]["bus_id"] = pci_address(value)
        elif key == "UUID" and value:
            out[current]["uuid"] = value
    return out


def parse_rocm_topo(text: str) -> dict[int, dict[str, int]]:
    """`rocm-smi --showtopo`: its "Link Type between two GPUs" table -> GPU index ->
    {xgmi_peers, pcie_peers}: how many other GPUs it reaches over xGMI and over PCIe. No table
    (another tool's output, a failed run): {}."""
    out: dict[int, dict[str, int]] = {}
    lines = iter(text.splitlines())
    for line in lines:
        if _TOPO_TITLE.search(line):
            break
    else:
        return out
    for line in lines:
        s = line.strip()
        if s.startswith("="):
            break
        m = _TOPO_ROW.match(s)
        if not m:
            continue  # the header row ("GPU0 GPU1 ...") starts with spaces; blank lines
        i, cells = int(m.group(1)), m.group(2).split()
        if cells and all(c.startswith("GPU") for c in cells):
            continue
        kinds = [c.upper() for j, c in enumerate(cells) if j != i]
        out[i] = {"xgmi_peers": kinds.count("XGMI"), "pcie_peers": kinds.count("PCIE")}
    return out
