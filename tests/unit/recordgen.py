"""Synthetic records for the judgement tests (pure data, no IO)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from reports.evidence import Evidence, build
from reports.evidence.sweeps import Sweep, judged
from reports.shared.findings import Judgement
from reports.shared.records import IoRecord, NetRecord
from reports.table.read import NetTable, RecordSet


def net(
    scope: str,
    op: str,
    size: int,
    busbw: float,
    hosts: tuple[str, ...] = ("n1",),
    *,
    group: int = 0,
    ranks: int = 8,
    wrong: int = 0,
    in_place: bool = False,
    backend: str = "nccl",
) -> NetRecord:
    return NetRecord(
        run_id="r1",
        ts="2026-11-22T00:00:00Z",
        hosts=hosts,
        nodes=len(set(hosts)),
        op=op,
        scope=scope,
        ranks=ranks,
        backend=backend,
        dtype="float32",
        bytes=size,
        time_s=1e-3,
        algbw_GBps=busbw / 2,
        busbw_GBps=busbw,
        wrong=wrong,
        group=group,
        in_place=in_place,
    )


def flat(
    scope: str, op: str, busbw: float, hosts: tuple[str, ...] = ("n1",), sizes: range = range(20, 31)
) -> list[NetRecord]:
    """The same busbw at every size from 1 MiB to 1 GiB (interpolation then changes nothing)."""
    return [net(scope, op, 2**k, busbw, hosts) for k in sizes]


def io(
    workload: str,
    direction: str,
    path: str,
    bw: float,
    *,
    scope: str = "shared",
    per_host: dict[str, float] | None = None,
    cache_suspect: bool = False,
    failed: str = "",
    direct: bool | None = True,
    runtime_s: float = 0.0,
    backend: str = "fio",
) -> IoRecord:
    hosts = tuple(per_host) if per_host else ("n1", "n2")
    return IoRecord(
        run_id="r1",
        ts="2026-11-22T00:00:00Z",
        hosts=hosts,
        nodes=len(hosts),
        workload=workload,
        direction=direction,
        path=path,
        scope=scope,
        procs=8 * len(hosts),
        bytes=10**12,
        bw_GBps=bw,
        per_host_bw_GBps=per_host or {h: bw / len(hosts) for h in hosts},
        iops=1.0,
        lat_ms={},
        cache_suspect=cache_suspect,
        failed=failed,
        direct=direct,
        runtime_s=runtime_s,
        backend=backend,
    )


def table(recs: Iterable[NetRecord]) -> NetTable:
    """The table the one reader would give for these records."""
    return NetTable.of(recs)


def curves(recs: Iterable[NetRecord]) -> tuple[dict[tuple[str, str], Sweep], int]:
    """The judged curves of these records (reports.evidence.sweeps.judged) and the #wrong count."""
    return judged(NetTable.of(recs).frame)


def evidence(net: Iterable[NetRecord] = (), io: Iterable[IoRecord] = (), **more: Any) -> Evidence:
    """Evidence built from records, as `stoker report` builds it from a directory."""
    return build(RecordSet(net=NetTable.of(net), io=list(io), **more))


def judge_records(rs: RecordSet, spec: Any = None, workload: Any = None) -> Judgement:
    """The judgement of a RecordSet, through its evidence, as `stoker report` makes it."""
    from reports.judging.judge import judge

    return judge(build(rs), spec, workload)
