"""Per-host results → one io record for all nodes together (pure).

Aggregate bandwidth is total bytes over the common wall window: from the earliest start to
the latest end across hosts (host clocks are assumed synchronised, as NTP keeps them), so a
straggler lowers the aggregate just as it delays a synchronous checkpoint.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reports.shared.fio_json import (
    PHYSICAL_MAX_HOST_GBPS,
    FioDoc,
    exceeds_physical_bound,
    merge_latency,
    sum_parts,
)
from reports.shared.records import IoRecord, utc_now
from reports.shared.units import gbps


@dataclass(frozen=True, kw_only=True, slots=True)
class HostResult:
    """One host's part of one workload in one direction; times in seconds since the epoch."""

    host: str
    direction: str
    bytes: int
    ios: int
    start_s: float
    end_s: float
    procs: int
    p50_ms: float | None = None
    p99_ms: float | None = None
    bins: Mapping[int, int] = field(default_factory=dict)
    bw_cv: float | None = None  # fio's bandwidth samples' spread (reports/shared/fio_json.py)

    @property
    def seconds(self) -> float:
        return max(self.end_s - self.start_s, 0.0)


def host_results(doc: FioDoc, host: str, procs: int) -> list[HostResult]:
    """One result per direction of a local fio run. fio stamps its document when the jobs
    end; the start is that minus the longest job's runtime."""
    out = []
    for direction in ("read", "write"):
        parts = [p for p in doc.parts if p.direction == direction]
        if not parts:
            continue
        s = sum_parts(parts)
        end = doc.timestamp_ms / 1000.0
        out.append(
            HostResult(
                host=host,
                direction=direction,
                bytes=s.bytes,
                ios=s.ios,
                start_s=end - s.runtime_ms / 1000.0,
                end_s=end,
                procs=procs,
                p50_ms=s.p50_ms,
                p99_ms=s.p99_ms,
                bins=s.bins,
                bw_cv=s.bw_cv,
            )
        )
    return out


@dataclass(frozen=True, kw_only=True, slots=True)
class RecordContext:
    """What is known about a measurement besides its numbers."""

    run_id: str
    workload: str
    path: str
    scope: str
    backend: str = "fio"
    op: str = ""
    direction: str = ""  # overrides fio's (its file engines count under "read")
    block_size: int = 0
    direct: bool | None = None
    metadata_only: bool = False  # create/stat/delete: operations, no bytes
    cache_check: bool = True  # bandwidth workloads get the cache rule
    buffered_data_bytes: int = 0  # per host, when the IO was buffered; 0 when direct
    caches_dropped: bool = False
    ram_bytes: int = 0  # the smallest host's RAM
    extra: Mapping[str, Any] = field(default_factory=dict)


def cache_suspect(ctx: RecordContext, direction: str, per_host_GBps: Mapping[str, float]) -> bool:
    """Rule (docs/iobench.md): a per-host figure above PHYSICAL_MAX_HOST_GBPS is suspect;
    so is a buffered read of a data set smaller than RAM unless caches were dropped first
    (writes end with fsync, so their data did reach the device)."""
    if exceeds_physical_bound(per_host_GBps):
        return True
    if not ctx.cache_check or ctx.direct or direction != "read" or ctx.caches_dropped:
        return False
    return 0 < ctx.buffered_data_bytes < ctx.ram_bytes


def aggregate(results: Sequence[HostResult], ctx: RecordContext, failed: str = "") -> IoRecord:
    if not results:
        raise ValueError("no host results")
    hosts = tuple(r.host for r in results)
    start = min(r.start_s for r in results)
    end = max(r.end_s for r in results)
    window = end - start
    total = sum(r.bytes for r in results)
    ios = sum(r.ios for r in results)
    nbytes = 0 if ctx.metadata_only else total
    per_host = {r.host: round(gbps(0 if ctx.metadata_only else r.bytes, r.seconds), 6) for r in results}
    per_host_ops = {r.host: round(r.ios / r.seconds, 3) if r.seconds > 0 else 0.0 for r in results}
    p50, p99, _ = merge_latency(results)
    rank_by = per_host_ops if ctx.metadata_only else per_host
    slowest = min(rank_by, key=lambda h: rank_by[h])
    extra: dict[str, Any] = {
        "window_s": round(window, 6),
        "slowest_host": slowest,
        "per_host_ops_per_s": per_host_ops,
        "per_host_bytes": {r.host: 0 if ctx.metadata_only else r.bytes for r in results},
        "per_host_seconds": {r.host: round(r.seconds, 6) for r in results},
        "physical_max_host_GBps": PHYSICAL_MAX_HOST_GBPS,
        **ctx.extra,
    }
    on_host: dict[str, int] = {}
    for r in results:
        on_host[r.host] = on_host.get(r.host, 0) + r.procs
    if len(set(on_host.values())) == 1:  # every node ran as many: the record says how many (one place)
        extra["procs_per_node"] = next(iter(on_host.values()))
    cvs = [r.bw_cv for r in results if r.bw_cv is not None]
    if cvs:  # the spread of fio's own bandwidth samples, the noisiest host's
        extra["bw_cv"] = max(cvs)
    if ctx.op:
        extra["op"] = ctx.op
    if ctx.direct is False and ctx.cache_check:
        # the judge compares buffered IO with the disk only over data larger than memory
        extra.update(data_bytes=ctx.buffered_data_bytes, ram_bytes=ctx.ram_bytes)
    if ctx.workload == "dataloader_read":
        extra["samples_per_s"] = round(ios / window, 3) if window > 0 else 0.0
    if ctx.metadata_only or ctx.workload == "metadata":
        extra["ops_per_s"] = round(ios / window, 3) if window > 0 else 0.0
    lat = {k: round(v, 6) for k, v in (("p50", p50), ("p99", p99)) if v is not None}
    return IoRecord(
        run_id=ctx.run_id,
        ts=utc_now(),
        hosts=hosts,
        nodes=len(set(hosts)),
        workload=ctx.workload,
        direction=ctx.direction or results[0].direction,
        path=ctx.path,
        scope=ctx.scope,
        procs=sum(r.procs for r in results),
        bytes=nbytes,
        bw_GBps=round(gbps(nbytes, window), 6),
        per_host_bw_GBps=per_host,
        iops=round(ios / window, 3) if window > 0 else 0.0,
        lat_ms=lat,
        runtime_s=round(window, 6),
        backend=ctx.backend,
        block_size=ctx.block_size,
        direct=ctx.direct,
        cache_suspect=cache_suspect(ctx, results[0].direction, per_host),
        failed=failed,
        extra=extra,
    )
