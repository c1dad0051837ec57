"""Hardware detection for the run manifest (the IO edge): GPU model and count, NIC link
rates, PCIe link speed and width, where the host shows them. The measuring side runs it
(netbench/runner.py writes the result into each host's manifest line as `hardware`); the
report only reads those records (reports.evidence.hosts.summarise) and never runs a tool.

`detect_hardware()` never raises: a missing tool or file leaves its key out. Tools run as
a list of arguments with a short timeout. Parsing is pure, in hardware_parse.py.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from netbench.inventory import hardware_parse as hp
from netbench.inventory.rocm_parse import parse_amd_smi_static

TIMEOUT_S = 5.0

Runner = Callable[[Sequence[str]], "str | None"]


def run_tool(args: Sequence[str]) -> str | None:
    """stdout of a tool, or None when it is absent, fails or hangs."""
    try:
        out = subprocess.run(list(args), capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolOutput:
    """What a tool printed and how it exited: nvidia-smi exits non-zero when one GPU is lost
    but still prints every other GPU, so the inventory keeps the output of a failed run."""

    stdout: str
    stderr: str
    returncode: int

    def text(self) -> str:
        """stdout, and stderr after it when the run failed (its error lines name lost GPUs)."""
        return self.stdout if self.returncode == 0 else "\n".join(t for t in (self.stdout, self.stderr) if t)


def run_keep(args: Sequence[str]) -> ToolOutput | None:
    """A tool's output whatever its exit status; None when it is absent or hangs."""
    try:
        out = subprocess.run(list(args), capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return ToolOutput(stdout=out.stdout or "", stderr=out.stderr or "", returncode=out.returncode)


def read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def pcie_link(sys_root: Path, address: str | None) -> dict[str, Any]:
    if not address:
        return {}
    dev = sys_root / "bus" / "pci" / "devices" / address
    return hp.pcie_link(read_text(dev / "current_link_speed"), read_text(dev / "current_link_width"))


def _device_address(dev_link: Path) -> str | None:
    """The PCI address a /sys/class/.../device symlink points at; None for virtual devices."""
    try:
        return dev_link.resolve(strict=True).name if dev_link.exists() else None
    except OSError:
        return None


def ib_ports(sys_root: Path) -> list[dict[str, Any]]:
    out = []
    for port in sorted((sys_root / "class" / "infiniband").glob("*/ports/*")):
        rate = hp.parse_ib_rate(read_text(port / "rate") or "")
        if rate is None:
            continue
        hca = port.parent.parent
        out.append(
            {
                "device": hca.name,
                "port": port.name,
                "rate_Gbps": rate,
                "max_rate_Gbps": hp.hca_max_rate(read_text(hca / "hca_type")),
                "state": hp.parse_ib_state(read_text(port / "state") or ""),
                "link_layer": (read_text(port / "link_layer") or "").strip(),
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
        speed = hp.parse_net_speed(read_text(iface / "speed") or "")
        out.append({"iface": iface.name, "speed_Mbps": speed, "pcie": pcie_link(sys_root, address)})
    return out


def detect_hardware(sys_root: str | Path = "/sys", run: Runner = run_tool) -> dict[str, Any]:
    """What this host shows of its GPUs, NICs and PCIe links; never raises."""
    root = Path(sys_root)
    hw: dict[str, Any] = {}
    try:
        text = run(["nvidia-smi", "--query-gpu=name,memory.total,pci.bus_id", "--format=csv,noheader"])
        gpus = hp.parse_nvidia_smi(text) if text else []
        if not gpus:  # ROCm: amd-smi (6.x and later), else the older rocm-smi
            text = run(["amd-smi", "static", "--asic", "--bus", "--board", "--json"])
            gpus = [
                {"name": g["name"], "memory_MiB": None, "bus_id": g["bus_id"]}
                for g in (parse_amd_smi_static(text) if text else [])
            ]
        if not gpus:
            text = run(["rocm-smi", "--showproductname", "--showbus", "--json"])
            gpus = hp.parse_rocm_smi(text) if text else []
        if gpus:
            for g in gpus:
                g["pcie"] = pcie_link(root, g["bus_id"])
            hw.update(gpu_model=gpus[0]["name"], gpu_count=len(gpus), gpus=gpus)
        ib, net = ib_ports(root), net_ifaces(root)
        if ib:
            hw["ib_ports"] = ib
        if net:
            hw["net"] = net
        total = hp.nic_total(ib, net)
        if total:
            hw["nic_total_GBps"], hw["nic_desc"] = total
    except Exception as exc:  # detection must never stop a measurement
        hw["error"] = f"{type(exc).__name__}: {exc}"
    return hw
