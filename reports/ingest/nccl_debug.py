"""NCCL's own account of a run (pure): the `NCCL_DEBUG=INFO` / `WARN` lines of a log, and
nccl-tests' correctness lines, read into facts a finding can quote.

NCCL prints, per rank, `host:pid:tid [dev] NCCL INFO ...`: which network it chose
(`Using network IB` / `Socket` / `AWS Libfabric`), why (`NET/Plugin: Could not find ...`,
`NET/IB : No device found`), whether GPU Direct RDMA is used (`/GDRDMA` on a channel,
`GPU Direct RDMA Disabled for HCA`), the path of every channel (`via P2P/IPC`, `via SHM`,
`via NET/IB/0/GDRDMA`), the communicator's shape (`nRanks 16 nNodes 2 localRanks 8`, or
`nranks 16` before 2.19), NVLS support, the settings it was given (`NCCL_P2P_DISABLE set by
environment to 1`) and its errors (`NCCL WARN ...`). These are what an expert reads first;
`reports.judging.network.diagnosis` turns them into causes. Each fact keeps the first line that
showed it (its number and text) so the finding can quote it.

The facts travel in the import manifest (`nccl_debug`, docs/contract.md) as plain JSON.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

# `host:pid:tid [dev] NCCL INFO ...`: the host is what precedes the first ':' of the prefix
_PREFIX = re.compile(r"(?:^|\s)([A-Za-z0-9][A-Za-z0-9_.\-]*):(\d+):(\d+) \[(\d+)\] NCCL (INFO|WARN)\b")
_USING_NET = re.compile(r"NCCL INFO Using network (.+?)\s*$")
_SHAPE_NEW = re.compile(r"\bnRanks (\d+) nNodes (\d+) localRanks (\d+)")
_SHAPE_OLD = re.compile(r"\bnranks (\d+)\b")
_VIA = re.compile(r"\bvia ((?:P2P|SHM|NET|COLLNET|NVLS)[^\s,]*(?: pointer)?)")
_GDR_HCA = re.compile(r"GPU Direct RDMA (Enabled|Disabled) for (?:HCA|GPU)")
_ENV = re.compile(r"\b(NCCL_[A-Z0-9_]+) set by environment to (\S+)")
_NET_DEVS = re.compile(r"NET/(IB|Socket|OFI|AWS Libfabric)\s*:\s*Using (\[\d+\].*)$")
_IB_DEV = re.compile(r"\[\d+\]([^\s:/]+)(?::\d+)?/(IB|RoCE)\b")
_NVLS = re.compile(r"NVLS multicast support is (not )?available")
_OOB = re.compile(r"Out of bounds values\s*:\s*(\d+)\s+(OK|FAILED)")
_PLUGIN_MISSING = re.compile(
    r"NET/Plugin\s*:?\s*(?:Could not find|No plugin found|Plugin load \S* returned|Failed to find)|"
    r"NET/Plugin\s*:\s*Plugin load returned"
)
_NO_IB = re.compile(r"NET/IB\s*:\s*No device found")
_ALGO_SETTING = (
    "NCCL_ALGO",
    "NCCL_PROTO",
    "NCCL_P2P_DISABLE",
    "NCCL_P2P_LEVEL",
    "NCCL_SHM_DISABLE",
    "NCCL_IB_DISABLE",
    "NCCL_NET_GDR_LEVEL",
    "NCCL_NVLS_ENABLE",
    "NCCL_IB_HCA",
    "NCCL_SOCKET_IFNAME",
    "NCCL_NET",
    "NCCL_COLLNET_ENABLE",
    "NCCL_CROSS_NIC",
    "NCCL_NET_GDR_READ",
    "NCCL_IB_GID_INDEX",
    "NCCL_MIN_NCHANNELS",
    "NCCL_MAX_NCHANNELS",
)
# nccl-tests' failure lines (src/common.h: "%s: Test NCCL failure %s:%d '%s'", "Test CUDA
# failure", and " .. %s pid %d: Test failure %s:%d")
TEST_FAILURE = re.compile(r"\bTest (?:NCCL |CUDA |HIP |RCCL )?failure\b")
_KEPT = 20  # lines kept of one kind (WARNs): enough to quote, bounded on a 250 MB log


def _line_of(n: int, text: str, where: str = "") -> dict[str, Any]:
    return {"line": n, "text": text[:300], **({"file": where} if where else {})}


def transport_of(via: str) -> str:
    """'P2P/IPC/read' -> 'P2P/IPC'; 'NET/IB/0/GDRDMA' -> 'NET/IB/GDRDMA'; 'SHM/direct/direct' ->
    'SHM'; 'NET/Socket/1' -> 'NET/Socket'; 'P2P/direct pointer' -> 'P2P/direct'. The kind of
    path, without the channel's device index or read/write mode."""
    parts = [p for p in via.split("/") if p and not p.isdigit() and not re.fullmatch(r"\d+\(\d+\)", p)]
    if not parts:
        return via
    head = parts[0]
    if head == "SHM":
        return "SHM"
    if head == "P2P":
        return "P2P/" + (parts[1].split()[0] if len(parts) > 1 else "?")
    if head == "NET" and len(parts) > 1:
        return "NET/" + parts[1] + ("/GDRDMA" if "GDRDMA" in parts[2:] else "")
    return head


@dataclass(kw_only=True, slots=True)
class DebugFacts:
    """What one log's NCCL lines said; filled line by line (`add`), merged across parts."""

    hosts: set[str] = field(default_factory=set)
    nranks: int | None = None
    nnodes: int | None = None
    local_ranks: int | None = None
    network: dict[str, Any] | None = None  # the first `Using network X` line
    net_devices: dict[str, Any] | None = None  # the first `NET/IB : Using [0]mlx5_0:1/IB ...`
    plugin_missing: dict[str, Any] | None = None
    no_ib_device: dict[str, Any] | None = None
    transports: Counter[str] = field(default_factory=Counter)
    first_via: dict[str, dict[str, Any]] = field(default_factory=dict)  # transport -> first line
    gdr: dict[str, dict[str, Any]] = field(default_factory=dict)  # Enabled / Disabled -> first line
    nvls: dict[str, Any] | None = None  # first NVLS support line, with "available": bool
    env: dict[str, dict[str, Any]] = field(default_factory=dict)  # NCCL_X -> value and line
    warns: list[dict[str, Any]] = field(default_factory=list)
    warn_count: int = 0
    oob: list[dict[str, Any]] = field(default_factory=list)  # `Out of bounds values : N FAILED`
    failures: list[dict[str, Any]] = field(default_factory=list)  # nccl-tests' `Test ... failure`
    info_lines: int = 0

    def add_failure(self, n: int, body: str, where: str = "") -> None:
        """nccl-tests' own failure line (`Test NCCL failure common.cu:1057 'internal error'`,
        `Test CUDA failure ...`, ` .. host pid N: Test failure common.cu:893`): the run failed."""
        if len(self.failures) < _KEPT:
            self.failures.append(_line_of(n, body, where))

    def add(self, n: int, body: str, where: str = "") -> None:
        """One line that holds `NCCL INFO`/`NCCL WARN` or nccl-tests' out-of-bounds summary;
        `where`: the file it is in, when the facts gather several (stoker's per-rank files)."""
        if "Out of bounds values" in body:
            if (m := _OOB.search(body)) and m.group(2) == "FAILED" and len(self.oob) < _KEPT:
                self.oob.append({**_line_of(n, body, where), "count": int(m.group(1))})
            return
        if p := _PREFIX.search(body):
            self.hosts.add(p.group(1))
        if "NCCL WARN" in body:
            self.warn_count += 1
            if len(self.warns) < _KEPT:
                self.warns.append(_line_of(n, body, where))
            return
        self.info_lines += 1
        if "via " in body and (m := _VIA.search(body)):
            t = transport_of(m.group(1))
            self.transports[t] += 1
            self.first_via.setdefault(t, _line_of(n, body, where))
            return
        if "Using network" in body and self.network is None and (m := _USING_NET.search(body)):
            self.network = {**_line_of(n, body, where), "name": m.group(1).strip()}
        elif "nRanks" in body and (m := _SHAPE_NEW.search(body)):
            self.nranks, self.nnodes, self.local_ranks = (int(m.group(i)) for i in (1, 2, 3))
        elif "nranks" in body and self.nranks is None and (m := _SHAPE_OLD.search(body)):
            self.nranks = int(m.group(1))
        elif "GPU Direct RDMA" in body and (m := _GDR_HCA.search(body)):
            self.gdr.setdefault(m.group(1), _line_of(n, body, where))
        elif "set by environment" in body and (m := _ENV.search(body)):
            self.env.setdefault(m.group(1), {**_line_of(n, body, where), "value": m.group(2)})
        elif "NET/Plugin" in body and self.plugin_missing is None and _PLUGIN_MISSING.search(body):
            self.plugin_missing = _line_of(n, body, where)
        elif "No device found" in body and self.no_ib_device is None and _NO_IB.search(body):
            self.no_ib_device = _line_of(n, body, where)
        elif "NVLS multicast" in body and self.nvls is None and (m := _NVLS.search(body)):
            self.nvls = {**_line_of(n, body, where), "available": m.group(1) is None}
        elif " : Using [" in body and self.net_devices is None and (m := _NET_DEVS.search(body)):
            kinds = sorted({k for _, k in _IB_DEV.findall(m.group(2))})
            devs = sorted({d for d, _ in _IB_DEV.findall(m.group(2))})
            self.net_devices = {**_line_of(n, body, where), "net": m.group(1), "devices": devs, "link": kinds}

    def extend(self, other: DebugFacts) -> None:
        """What a later part of the same log said, as one reading of both would."""
        self.hosts |= other.hosts
        for name in (
            "nranks",
            "nnodes",
            "local_ranks",
            "network",
            "net_devices",
            "plugin_missing",
            "no_ib_device",
            "nvls",
        ):
            if getattr(self, name) is None:
                setattr(self, name, getattr(other, name))
        self.transports.update(other.transports)
        for t, ln in other.first_via.items():
            self.first_via.setdefault(t, ln)
        for k, ln in other.gdr.items():
            self.gdr.setdefault(k, ln)
        for k, ln in other.env.items():
            self.env.setdefault(k, ln)
        self.warns = (self.warns + other.warns)[:_KEPT]
        self.warn_count += other.warn_count
        self.oob = (self.oob + other.oob)[:_KEPT]
        self.failures = (self.failures + other.failures)[:_KEPT]
        self.info_lines += other.info_lines

    def empty(self) -> bool:
        return not (self.info_lines or self.warn_count or self.oob or self.failures)

    def to_dict(self) -> dict[str, Any]:
        """The manifest's `nccl_debug` object (docs/contract.md): only what was seen."""
        out: dict[str, Any] = {
            "hosts": sorted(self.hosts),
            "nranks": self.nranks,
            "nnodes": self.nnodes,
            "local_ranks": self.local_ranks,
            "network": self.network,
            "net_devices": self.net_devices,
            "plugin_missing": self.plugin_missing,
            "no_ib_device": self.no_ib_device,
            "transports": dict(sorted(self.transports.items())),
            "first_via": dict(sorted(self.first_via.items())),
            "gdr": dict(sorted(self.gdr.items())),
            "nvls": self.nvls,
            "env": dict(sorted(self.env.items())),
            "warns": self.warns,
            "warn_count": self.warn_count,
            "out_of_bounds": self.oob,
            "test_failures": self.failures,
            "info_lines": self.info_lines,
        }
        return {k: v for k, v in out.items() if v not in (None, [], {}, 0)}


def settings_of(facts: DebugFacts) -> dict[str, str]:
    """The NCCL settings the log says were given (NCCL_ALGO, NCCL_P2P_DISABLE, ...), as the
    settings a run's manifest holds."""
    return {k: v["value"] for k, v in facts.env.items() if k in _ALGO_SETTING}
