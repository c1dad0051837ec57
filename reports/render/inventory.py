"""The node inventory as tables (pure): each GPU's host link (state read and copy figures)
and each network port, from the `kind: "host"` records. markdown.py and html.py render them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd


def _link(d: dict[str, Any]) -> str:
    if d.get("gen") is None and d.get("width") is None:
        return "-"  # not a PCIe device (virtio), or sysfs does not say
    cur = f"Gen{d.get('gen') or '?'} x{d.get('width') or '?'}"
    return f"{cur} (max Gen{d.get('max_gen') or '?'} x{d.get('max_width') or '?'})"


def _f(x: Any) -> str:
    return "-" if x is None else f"{x:.1f}"


def host_link_table(records: Sequence[dict[str, Any]]) -> pd.DataFrame:
    rows = [
        {
            "host": r.get("host", "?"),
            "GPU": r.get("device"),
            "bus id": r.get("bus_id") or "-",
            "PCIe link": _link(r) + ("" if r.get("read_under_load") else ", idle"),
            "nearest NIC": f"{r.get('nearest_nic') or '-'} ({r.get('nic_path') or '?'})",
            "pinned H2D GB/s": _f(r.get("h2d_pinned_GBps")),
            "pinned D2H GB/s": _f(r.get("d2h_pinned_GBps")),
            "pageable H2D GB/s": _f(r.get("h2d_pageable_GBps")),
        }
        for r in records
        if r.get("component") == "host link"
    ]
    return pd.DataFrame(rows)


def port_table(records: Sequence[dict[str, Any]]) -> pd.DataFrame:
    rows = [
        {
            "host": r.get("host", "?"),
            "port": f"{r.get('device')}" + (f" port {r['port']}" if r.get("port") else ""),
            "link layer": r.get("link_layer") or "-",
            "state": r.get("state") or "-",
            "rate Gb/s": "-" if r.get("rate_Gbps") is None else f"{r['rate_Gbps']:g}",
            "PCIe link": _link(r.get("pcie") or {}),
            "NUMA": (r.get("pcie") or {}).get("numa_node")
            if (r.get("pcie") or {}).get("numa_node") is not None
            else "-",
        }
        for r in records
        if r.get("component") == "network port"
    ]
    return pd.DataFrame(rows)
