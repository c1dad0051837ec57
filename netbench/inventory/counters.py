"""Error and health counters of one node, read between soak passes (docs/contract.md
"Counters"): InfiniBand/RoCE port counters, Ethernet statistics, GPU ECC, temperature, power,
throttle reasons and Xid lines. A snapshot is `{device: {counter: value}}`; the soak writes
the change of each counter over each pass as a `kind: "counter"` record.

Pure parsers and `deltas`, plus thin readers (`read_snapshot`) at the edge. Read the way the
inventory reads (netbench/inventory/read.py): sysfs under `sys_root`, tools through `run`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from netbench.inventory.hardware import Runner, run_tool
from netbench.inventory.hardware import read_text as _read
from netbench.inventory.kernel_log import read_kernel_log
from netbench.inventory.parse import csv_rows, parse_xids

Snapshot = dict[str, dict[str, float]]  # device -> counter -> value

# Counters whose rise is an error by itself (a component whose error counter rises is
# `unstable`); the others (congestion, traffic, gauges) only explain a dip beside them.
# IB: the PortCounters of the IB spec 16.1.3.5, as the kernel names them
# (Documentation/ABI/stable/sysfs-class-infiniband).
IB_ERRORS = (
    "symbol_error",
    "link_error_recovery",
    "link_downed",
    "port_rcv_errors",
    "port_xmit_discards",
    "local_link_integrity_errors",
    "excessive_buffer_overrun_errors",
    "port_rcv_remote_physical_errors",
    "port_rcv_switch_relay_errors",
    "port_xmit_constraint_errors",
    "port_rcv_constraint_errors",
    "VL15_dropped",
)
IB_INFO = ("port_xmit_wait",)  # time the port had data but no credits: congestion, not a fault
# /sys/class/net/<if>/carrier_changes and statistics/* (Documentation/ABI/testing/sysfs-class-net,
# sysfs-class-net-statistics). rx_dropped also counts frames of protocols nobody listens to.
NET_ERRORS = (
    "carrier_changes",
    "rx_errors",
    "tx_errors",
    "tx_dropped",
    "rx_crc_errors",
    "rx_frame_errors",
    "rx_missed_errors",
    "rx_over_errors",
    "tx_carrier_errors",
)
NET_INFO = ("rx_dropped",)
# nvidia-smi --query-gpu fields (nvidia-smi --help-query-gpu); csv,noheader,nounits.
GPU_QUERY = (
    "index",
    "temperature.gpu",
    "power.draw",
    "clocks_throttle_reasons.active",
    "ecc.errors.corrected.volatile.total",
    "ecc.errors.uncorrected.volatile.total",
)
GPU_ERRORS = ("ecc_uncorrected", "xid_hardware")
GPU_GAUGES = ("temperature_C", "power_W", "throttle_hw")  # values, not counts: no delta
# NVML clocks throttle reasons that slow a GPU down for a hardware cause (nvmlClocksThrottleReasons):
# HW slowdown 0x8, SW thermal 0x20, HW thermal 0x40, HW power brake 0x80.
THROTTLE_HW_MASK = 0x8 | 0x20 | 0x40 | 0x80

Severity = Literal["error", "info", "gauge"]


def severity(counter: str) -> Severity:
    if counter in GPU_GAUGES:
        return "gauge"
    if counter in IB_ERRORS or counter in NET_ERRORS or counter in GPU_ERRORS:
        return "error"
    return "info"


# -- pure parsers -------------------------------------------------------------------
def parse_counter(text: str | None) -> int | None:
    """One sysfs counter file: a decimal number and a newline ('412\\n'); None when absent
    or not a number (some drivers answer 'N/A' for a counter they do not keep)."""
    t = (text or "").strip()
    return int(t) if t.isdigit() else None


def parse_gpu_counters(text: str) -> Snapshot:
    """`nvidia-smi --query-gpu=<GPU_QUERY> --format=csv,noheader,nounits` lines, e.g.
    '0, 34, 71.28, 0x0000000000000001, 0, 0' -> {"gpu0": {...}}; '[N/A]' fields are left out."""
    out: Snapshot = {}
    for row in csv_rows(text, GPU_QUERY):
        index = row["index"]
        if index is None or not index.isdigit():
            continue
        vals: dict[str, float] = {}
        for field, name in (("temperature.gpu", "temperature_C"), ("power.draw", "power_W")):
            v = _float(row[field])
            if v is not None:
                vals[name] = v
        mask = row["clocks_throttle_reasons.active"]
        if mask is not None and mask.lower().startswith("0x"):
            vals["throttle_hw"] = 1.0 if int(mask, 16) & THROTTLE_HW_MASK else 0.0
        for field, name in (
            ("ecc.errors.corrected.volatile.total", "ecc_corrected"),
            ("ecc.errors.uncorrected.volatile.total", "ecc_uncorrected"),
        ):
            v = _float(row[field])
            if v is not None:
                vals[name] = v
        out[f"gpu{index}"] = vals
    return out


def _float(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


def xid_counts(kernel_log: str) -> Snapshot:
    """Xid lines of the kernel log counted per GPU bus id (all, and those meaning hardware
    trouble): the count only grows while the log is kept, so its delta is the new lines."""
    out: Snapshot = {}
    for x in parse_xids(kernel_log):
        d = out.setdefault(f"gpu@{x['bus_id']}", {"xid": 0.0, "xid_hardware": 0.0})
        d["xid"] += 1
        d["xid_hardware"] += 1 if x["hardware"] else 0
    return out


@dataclass(frozen=True, kw_only=True, slots=True)
class Delta:
    device: str
    counter: str
    value: float  # now
    delta: float  # change since the previous snapshot (a gauge: its value)
    severity: Severity


def deltas(
    before: Mapping[str, Mapping[str, float]], after: Mapping[str, Mapping[str, float]]
) -> list[Delta]:
    """What moved between two snapshots: counters that rose (a counter that went down was
    reset or wrapped: its new value is what it counted since), and every gauge that is not
    zero (temperature and power are values; a throttle flag of 0 says nothing). A device or
    counter only in `after` (a port that appeared) starts from its first reading."""
    out: list[Delta] = []
    for device in sorted(after):
        for counter, now in sorted(after[device].items()):
            sev = severity(counter)
            if sev == "gauge":
                if now:
                    out.append(Delta(device=device, counter=counter, value=now, delta=now, severity=sev))
                continue
            prev = before.get(device, {}).get(counter)
            if prev is None:
                continue
            d = now - prev if now >= prev else now
            if d > 0:
                out.append(Delta(device=device, counter=counter, value=now, delta=d, severity=sev))
    return out


# -- thin readers (IO) --------------------------------------------------------------
def _counter_dir(d: Path, names: tuple[str, ...]) -> dict[str, float]:
    vals: dict[str, float] = {}
    for name in names:
        v = parse_counter(_read(d / name))
        if v is not None:
            vals[name] = float(v)
    return vals


def ib_counters(sys_root: Path) -> Snapshot:
    """Every port of /sys/class/infiniband/<dev>/ports/<n>/counters/*, keyed 'mlx5_0:1';
    the extended counters of hw_counters/ where the driver has them (same names)."""
    out: Snapshot = {}
    base = sys_root / "class" / "infiniband"
    for dev in sorted(base.iterdir()) if base.is_dir() else []:
        for port in sorted((dev / "ports").iterdir()) if (dev / "ports").is_dir() else []:
            vals = _counter_dir(port / "counters", IB_ERRORS + IB_INFO)
            vals.update(_counter_dir(port / "hw_counters", IB_ERRORS + IB_INFO))
            if vals:
                out[f"{dev.name}:{port.name}"] = vals
    return out


def net_counters(sys_root: Path) -> Snapshot:
    """Every interface but loopback: carrier_changes and statistics/*, keyed by its name."""
    out: Snapshot = {}
    base = sys_root / "class" / "net"
    for iface in sorted(base.iterdir()) if base.is_dir() else []:
        if iface.name == "lo":
            continue
        vals = _counter_dir(iface, ("carrier_changes",))
        vals.update(
            _counter_dir(
                iface / "statistics", tuple(n for n in NET_ERRORS + NET_INFO if n != "carrier_changes")
            )
        )
        if vals:
            out[iface.name] = vals
    return out


def read_snapshot(
    sys_root: str | Path = "/sys",
    run: Runner | None = None,
    kernel_log: Callable[[], str | None] | None = None,
) -> Snapshot:
    """This node's counters now. A missing tool or file is left out, never a zero."""
    root = Path(sys_root)
    run = run or run_tool
    snap = {**ib_counters(root), **net_counters(root)}
    text = run(["nvidia-smi", f"--query-gpu={','.join(GPU_QUERY)}", "--format=csv,noheader,nounits"])
    if text:
        snap.update(parse_gpu_counters(text))
        log = kernel_log() if kernel_log else read_kernel_log(run)
        snap.update(xid_counts(log or ""))
    return snap
