"""Pure parsers of what hardware detection reads (the manifest's `hardware`): nvidia-smi and
rocm-smi GPU lists, sysfs scalars of IB ports, net interfaces and PCIe links, and the node's
fabric total. Tested on recorded outputs (tests/data/detect/). The reading itself (running
the tools, walking sysfs) is netbench/inventory/hardware.py."""

from __future__ import annotations

import collections
import json
import re
from typing import Any

# Below this an Ethernet port is a management link, not the training fabric.
FABRIC_MIN_MBPS = 100_000
# The fastest port rate (Gb/s) each RDMA adapter chip supports, by the sysfs `hca_type` mlx5
# writes ("MT" and the PCI device id in decimal: MT4129 is 15b3:1021, ConnectX-7): what the port
# promises, whatever it negotiated. ConnectX-5 EDR/100GbE, -6 HDR, -7 NDR, -8 XDR (NVIDIA's
# adapter product briefs). A chip sold as a slower variant (ConnectX-7 NDR200) reads as its
# chip's maximum: a spec naming the link (`inter_node: {link: ...}`) is the promise then.
HCA_MAX_GBPS = {"MT4119": 100.0, "MT4121": 100.0, "MT4123": 200.0, "MT4129": 400.0, "MT4131": 800.0}


def pci_address(text: str) -> str:
    """'00000000:18:00.0' (nvidia-smi) -> '0000:18:00.0' (sysfs)."""
    t = text.strip().lower()
    m = re.fullmatch(r"([0-9a-f]+):([0-9a-f]{2}):([0-9a-f]{2})\.([0-7])", t)
    return f"{int(m.group(1), 16):04x}:{m.group(2)}:{m.group(3)}.{m.group(4)}" if m else t


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


def parse_ib_rate(text: str) -> float | None:
    """/sys/class/infiniband/*/ports/*/rate: '400 Gb/sec (4X NDR)' -> 400.0 (Gb/s)."""
    m = re.match(r"\s*(\d+(?:\.\d+)?)\s*Gb/sec", text)
    return float(m.group(1)) if m else None


def hca_max_rate(hca_type: str | None) -> float | None:
    """/sys/class/infiniband/*/hca_type: 'MT4129' -> 400.0, the chip's fastest port (Gb/s); an
    adapter not in HCA_MAX_GBPS -> None (not known, never guessed)."""
    return HCA_MAX_GBPS.get((hca_type or "").strip().upper())


def promised_rate(port: dict[str, Any]) -> float:
    """A port's promise in Gb/s: its supported maximum where known, else the rate it runs at."""
    return max(port.get("max_rate_Gbps") or 0.0, port.get("rate_Gbps") or 0.0)


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


def pcie_link(speed: str | None, width: str | None) -> dict[str, Any]:
    """{speed_GTps, width} from a device's current_link_speed/current_link_width text; what
    is unknown (absent, 'Unknown', width 0) is left out."""
    out: dict[str, Any] = {}
    if speed is not None and (gtps := parse_pcie_speed(speed)) is not None:
        out["speed_GTps"] = gtps
    if width is not None and width.strip().isdigit() and int(width) > 0:
        out["width"] = int(width)
    return out


def nic_total(ib: list[dict[str, Any]], net: list[dict[str, Any]]) -> tuple[float, str] | None:
    """The node's fabric bandwidth in GB/s: active IB/RoCE ports if any (RoCE ports show up
    here and under /sys/class/net: counted once), else Ethernet ports of >= 100 Gb/s. An RDMA
    port counts at its supported maximum (`max_rate_Gbps`), not what it negotiated: a 400G
    port trained at 200G still promises 400G."""
    active = [p for p in ib if p["state"] == "ACTIVE"]
    if active:
        rates = collections.Counter(promised_rate(p) for p in active)
        desc = " + ".join(f"{n} x {r:g} Gb/s" for r, n in sorted(rates.items()))
        return sum(promised_rate(p) for p in active) / 8, f"{desc} RDMA ports (detected)"
    fabric = [i["speed_Mbps"] for i in net if i["speed_Mbps"] and i["speed_Mbps"] >= FABRIC_MIN_MBPS]
    if fabric:
        rates = collections.Counter(fabric)
        desc = " + ".join(f"{n} x {r / 1000:g} Gb/s" for r, n in sorted(rates.items()))
        return sum(fabric) / 8000, f"{desc} Ethernet ports (detected)"
    return None
