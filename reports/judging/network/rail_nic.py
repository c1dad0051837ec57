"""The NIC behind a rail (pure): a localisation finding naming a host and a `rail` (local rank
j: the GPU j's rank) is pointed at the NIC nearest GPU j on that host, from the node's
inventory (`host link` records: `nearest_nic` from `nvidia-smi topo -m`; `network port`
records: its port, link rate and PCIe link from sysfs), with the error counters that moved on
it (a soak's `counters.jsonl`). A finding without `rail`, or a host without inventory, is
left as it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from reports.shared.findings import Finding

# Counters that count faults on a link (not traffic, not waiting): their rise is evidence.
ERROR_COUNTERS = frozenset(
    {
        "symbol_error",
        "link_error_recovery",
        "link_downed",
        "port_rcv_errors",
        "port_rcv_remote_physical_errors",
        "port_xmit_discards",
        "local_link_integrity_errors",
        "excessive_buffer_overrun_errors",
        "carrier_changes",
        "rx_errors",
        "tx_errors",
        "rx_crc_errors",
    }
)


def _latest(records: Sequence[dict[str, Any]], component: str) -> dict[tuple[Any, ...], dict[str, Any]]:
    out: dict[tuple[Any, ...], dict[str, Any]] = {}
    for r in records:
        if r.get("component") == component:
            out[(r.get("host"), r.get("device"), r.get("port"))] = r
    return out


def rails_of_nic(host: str, device: str, records: Sequence[dict[str, Any]]) -> tuple[int, ...]:
    """The rails (GPU indices) whose nearest NIC is `device` on `host` ("mlx5_3:1" or
    "mlx5_3": the port's device), from the inventory's `host link` records."""
    nic = device.split(":")[0]
    return tuple(
        sorted(
            {
                r["gpu"]
                for r in _latest(records, "host link").values()
                if r.get("host") == host and r.get("nearest_nic") == nic and isinstance(r.get("gpu"), int)
            }
        )
    )


def nic_of(
    host: str, rail: int, records: Sequence[dict[str, Any]], counters: Sequence[dict[str, Any]] = ()
) -> dict[str, Any] | None:
    """{device, port, rate_Gbps, pcie, nic_path, gpu, counters} of the NIC nearest GPU `rail`
    on `host`; None where the inventory does not say."""
    gpu = next(
        (r for r in _latest(records, "host link").values() if r.get("host") == host and r.get("gpu") == rail),
        None,
    )
    nic = gpu.get("nearest_nic") if gpu else None
    if not gpu or not nic:
        return None
    port = next(
        (
            r
            for (h, d, _), r in sorted(_latest(records, "network port").items(), key=str)
            if h == host and d == nic
        ),
        {},
    )
    where = f"{nic}:{port['port']}" if port.get("port") else nic
    moved: dict[str, int] = {}
    for c in counters:
        if c.get("host") == host and c.get("device") == where and c.get("counter") in ERROR_COUNTERS:
            delta = c.get("delta")
            if isinstance(delta, (int, float)) and delta > 0:
                moved[str(c["counter"])] = moved.get(str(c["counter"]), 0) + int(delta)
    pcie = port.get("pcie") or {}
    return {
        "device": nic,
        "port": port.get("port"),
        "rate_Gbps": port.get("rate_Gbps"),
        "state": port.get("state"),
        "pcie": {k: pcie.get(k) for k in ("gen", "max_gen", "width", "max_width")} if pcie else None,
        "gpu": gpu.get("device"),
        "nic_path": gpu.get("nic_path"),
        "counters": moved,
    }


def _says(host: str, n: dict[str, Any]) -> str:
    parts = [f"{host}'s {n['gpu']} is nearest {n['device']}" + (f" port {n['port']}" if n["port"] else "")]
    if n["rate_Gbps"]:
        parts.append(f"{n['rate_Gbps']:g} Gb/s")
    if n["pcie"] and n["pcie"].get("width"):
        p = n["pcie"]
        parts.append(
            f"PCIe Gen{p.get('gen')} x{p.get('width')} (of Gen{p.get('max_gen')} x{p.get('max_width')})"
        )
    if n["counters"]:
        parts.append(
            "errors during the run: " + ", ".join(f"{k} +{v}" for k, v in sorted(n["counters"].items()))
        )
    return ", ".join(parts)


def name_nics(
    findings: Sequence[Finding], records: Sequence[dict[str, Any]], counters: Sequence[dict[str, Any]] = ()
) -> list[Finding]:
    """Each finding with a `rail`, pointed at its hosts' NICs on that rail (extra `nic`)."""
    out = []
    for f in findings:
        rail = f.extra.get("rail")
        if isinstance(rail, int) and f.component in ("node", "link"):
            nics = {h: n for h in f.hosts if (n := nic_of(h, rail, records, counters)) is not None}
            if nics:
                f = replace(
                    f,
                    extra={**f.extra, "nic": [{"host": h, **n} for h, n in nics.items()]},
                    message=f"{f.message.rstrip('.')}; {'; '.join(_says(h, n) for h, n in nics.items())}.",
                )
        out.append(f)
    return out
