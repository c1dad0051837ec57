"""Hardware detection for the run manifest: GPU model and count, NIC link rates, PCIe
link speed and width, where the host shows them.

`detect_hardware()` never raises: a missing tool or file leaves its key out. Tools run
as a list of arguments with a short timeout. The parsers are pure and tested on recorded
outputs (tests/data/detect/). The per-host results of a run are folded into one by reports.evidence.hosts.
"""

from __future__ import annotations

import collections
import json
import re
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

TIMEOUT_S = 5.0
# Below this an Ethernet port is a management link, not the training fabric.
FABRIC_MIN_MBPS = 100_000

Runner = Callable[[Sequence[str]], "str | None"]


def run_tool(args: Sequence[str]) -> str | None:
    """stdout of a tool, or None when it is absent, fails or hangs."""
    try:
        out = subprocess.run(list(args), capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


def parse_nvidia_smi(text: str) -> list[dict[str, Any]]:
    """`nvidia-smi --query-gpu=name,memory.total,pci.bus_id --format=csv,noheader` lines:
    'NVIDIA H100 80GB HBM3, 81559 MiB, 00000000:18:00.0'."""
    gpus = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 3 or not parts[0]:
            continue
        mem = re.match(r"(\d+)\s*MiB", parts[1])
        gpus.append(
            {
                "name": parts[0],
                "memory_MiB": int(mem.group(1)) if mem else None,
                "bus_id": pci_address(parts[2]),
            }
        )
    return gpus


def parse_rocm_smi(text: str) -> list[dict[str, Any]]:
    """`rocm-smi --showproductname --showbus --json`: {"card0": {"Card Series": ..., "PCI Bus": ...}}.
    Key spelling changed across ROCm versions, so keys are matched case-insensitively."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return []
    gpus = []
    for card, info in sorted(data.items()):
        if not card.lower().startswith("card") or not isinstance(info, dict):
            continue
        low = {str(k).lower(): str(v) for k, v in info.items()}
        name = next(
            (
                low[k]
                for k in ("card series", "device name", "card model", "card sku")
                if low.get(k) and not re.fullmatch(r"0x[0-9a-f]+|n/a", low[k], re.I)
            ),
            "",
        )
        bus = low.get("pci bus")
        gpus.append({"name": name, "memory_MiB": None, "bus_id": pci_address(bus) if bus else None})
    return gpus


def pci_address(text: str) -> str:
    """'00000000:18:00.0' (nvidia-smi) -> '0000:18:00.0' (sysfs)."""
    t = text.strip().lower()
    m = re.fullmatch(r"([0-9a-f]+):([0-9a-f]{2}):([0-9a-f]{2})\.([0-7])", t)
    return f"{int(m.group(1), 16):04x}:{m.group(2)}:{m.group(3)}.{m.group(4)}" if m else t


def parse_ib_rate(text: str) -> float | None:
    """/sys/class/infiniband/*/ports/*/rate: '400 Gb/sec (4X NDR)' -> 400.0 (Gb/s)."""
    m = re.match(r"\s*(\d+(?:\.\d+)?)\s*Gb/sec", text)
    return float(m.group(1)) if m else None


def parse_ib_state(text: str) -> str:
    """/sys/class/infiniband/*/ports/*/state: '4: ACTIVE' -> 'ACTIVE'."""
    return text.split(":", 1)[-1].strip().upper()


def parse_net_speed(text: str) -> int | None:
    """/sys/class/net/*/speed in Mb/s; -1 or garbage (link down, virtual) -> None."""
    try:
        v = int(text.strip())
    except ValueError:
        return None
    return v if v > 0 else None


def parse_pcie_speed(text: str) -> float | None:
    """current_link_speed: '32.0 GT/s PCIe' or '8 GT/s' -> GT/s; 'Unknown' -> None."""
    m = re.match(r"\s*(\d+(?:\.\d+)?)\s*GT/s", text)
    return float(m.group(1)) if m else None


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def pcie_link(sys_root: Path, address: str | None) -> dict[str, Any]:
    if not address:
        return {}
    dev = sys_root / "bus" / "pci" / "devices" / address
    speed, width = _read(dev / "current_link_speed"), _read(dev / "current_link_width")
    out: dict[str, Any] = {}
    if speed is not None and parse_pcie_speed(speed) is not None:
        out["speed_GTps"] = parse_pcie_speed(speed)
    if width is not None and width.strip().isdigit() and int(width) > 0:
        out["width"] = int(width)
    return out


def _device_address(dev_link: Path) -> str | None:
    """The PCI address a /sys/class/.../device symlink points at; None for virtual devices."""
    try:
        return dev_link.resolve(strict=True).name if dev_link.exists() else None
    except OSError:
        return None


def ib_ports(sys_root: Path) -> list[dict[str, Any]]:
    out = []
    for port in sorted((sys_root / "class" / "infiniband").glob("*/ports/*")):
        rate = parse_ib_rate(_read(port / "rate") or "")
        if rate is None:
            continue
        hca = port.parent.parent
        out.append(
            {
                "device": hca.name,
                "port": port.name,
                "rate_Gbps": rate,
                "state": parse_ib_state(_read(port / "state") or ""),
                "link_layer": (_read(port / "link_layer") or "").strip(),
                "pcie": pcie_link(sys_root, _device_address(hca / "device")),
            }
        )
    return out


def net_ifaces(sys_root: Path) -> list[dict[str, Any]]:
    out = []
    for iface in sorted((sys_root / "class" / "net").glob("*")):
        address = _device_address(iface / "device")
        if address is None:  # lo, veth, bridges: no hardware behind them
            continue
        speed = parse_net_speed(_read(iface / "speed") or "")
        out.append({"iface": iface.name, "speed_Mbps": speed, "pcie": pcie_link(sys_root, address)})
    return out


def nic_total(ib: list[dict[str, Any]], net: list[dict[str, Any]]) -> tuple[float, str] | None:
    """The node's fabric bandwidth in GB/s: active IB/RoCE ports if any (RoCE ports show up
    here and under /sys/class/net: counted once), else Ethernet ports of >= 100 Gb/s."""
    active = [p for p in ib if p["state"] == "ACTIVE"]
    if active:
        rates = collections.Counter(p["rate_Gbps"] for p in active)
        desc = " + ".join(f"{n} x {r:g} Gb/s" for r, n in sorted(rates.items()))
        return sum(p["rate_Gbps"] for p in active) / 8, f"{desc} RDMA ports (detected)"
    fabric = [i["speed_Mbps"] for i in net if i["speed_Mbps"] and i["speed_Mbps"] >= FABRIC_MIN_MBPS]
    if fabric:
        rates = collections.Counter(fabric)
        desc = " + ".join(f"{n} x {r / 1000:g} Gb/s" for r, n in sorted(rates.items()))
        return sum(fabric) / 8000, f"{desc} Ethernet ports (detected)"
    return None


def detect_hardware(sys_root: str | Path = "/sys", run: Runner = run_tool) -> dict[str, Any]:
    """What this host shows of its GPUs, NICs and PCIe links; never raises."""
    root = Path(sys_root)
    hw: dict[str, Any] = {}
    try:
        text = run(["nvidia-smi", "--query-gpu=name,memory.total,pci.bus_id", "--format=csv,noheader"])
        gpus = parse_nvidia_smi(text) if text else []
        if not gpus:
            text = run(["rocm-smi", "--showproductname", "--showbus", "--json"])
            gpus = parse_rocm_smi(text) if text else []
        if gpus:
            for g in gpus:
                g["pcie"] = pcie_link(root, g["bus_id"])
            hw.update(gpu_model=gpus[0]["name"], gpu_count=len(gpus), gpus=gpus)
        ib, net = ib_ports(root), net_ifaces(root)
        if ib:
            hw["ib_ports"] = ib
        if net:
            hw["net"] = net
        total = nic_total(ib, net)
        if total:
            hw["nic_total_GBps"], hw["nic_desc"] = total
    except Exception as exc:  # detection must never stop a measurement
        hw["error"] = f"{type(exc).__name__}: {exc}"
    return hw
