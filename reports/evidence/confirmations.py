"""Which records marked `confirmation: true` confirm a first measurement (pure).

A confirmation binds to what it confirms: the same run, op, scope, backend, hosts, ranks and
size as a first measurement (storage: the same run, path, workload, direction and hosts), dated
no earlier than the first measurement it repeats; and, for a network sweep, over the same set of
hosts as the first sweep of that op and scope (a confirmation of one node does not stand for a
sweep of four). Anything else is left out of the judgement and named in the report's notes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Sequence
from datetime import datetime
from typing import Any

from reports.shared.records import IoRecord, NetRecord


def _when(ts: str) -> datetime | None:
    try:
        got = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        return None
    return got if got.tzinfo is not None else None


def _not_before(again: str, first: Sequence[str]) -> bool:
    """`again` is dated no earlier than the earliest of `first` (both readable, else False)."""
    t = _when(again)
    firsts = [w for w in (_when(x) for x in first) if w is not None]
    return t is not None and bool(firsts) and t >= min(firsts)


def _net_key(r: NetRecord) -> tuple[Hashable, ...]:
    return (r.run_id, r.op, r.scope, r.backend, r.ranks, tuple(sorted(set(r.hosts))), r.bytes)


def bound_net(first: Sequence[NetRecord], again: Sequence[NetRecord]) -> tuple[list[bool], list[str]]:
    """(for each record of `again`: whether it confirms a record of `first`, one note per
    test whose confirmations were left out). `first`: the first measurements of the ops and
    scopes `again` measured (the rest make no difference)."""
    ts: dict[tuple[Hashable, ...], list[str]] = defaultdict(list)
    hosts_of: dict[tuple[Hashable, ...], set[tuple[str, ...]]] = defaultdict(set)
    for r in first:
        ts[_net_key(r)].append(r.ts)
        hosts_of[(r.run_id, r.op, r.scope, r.backend)].add(tuple(sorted(set(r.hosts))))
    again_hosts: dict[tuple[Hashable, ...], set[tuple[str, ...]]] = defaultdict(set)
    for r in again:
        again_hosts[(r.run_id, r.op, r.scope, r.backend)].add(tuple(sorted(set(r.hosts))))
    keep: list[bool] = []
    why: dict[str, str] = {}
    for r in again:
        test = (r.run_id, r.op, r.scope, r.backend)
        name = f"{r.scope} {r.op} ({r.backend})"
        if _net_key(r) not in ts:
            why.setdefault(name, "no first measurement of the same hosts, ranks and size")
            keep.append(False)
        elif not _not_before(r.ts, ts[_net_key(r)]):
            why.setdefault(name, "dated before the first measurement it would confirm")
            keep.append(False)
        elif again_hosts[test] != hosts_of[test]:
            why.setdefault(name, "not over the same hosts as the first sweep")
            keep.append(False)
        else:
            keep.append(True)
    return keep, [_note(name, reason) for name, reason in why.items()]


def _io_key(r: IoRecord) -> tuple[Hashable, ...]:
    return (r.run_id, r.path, r.workload, r.direction, tuple(sorted({*r.hosts, *r.per_host_bw_GBps})))


def bound_io(first: Sequence[IoRecord], again: Sequence[IoRecord]) -> tuple[list[IoRecord], list[str]]:
    """The storage confirmations that confirm a first measurement, and a note per one left out."""
    ts: dict[tuple[Hashable, ...], list[str]] = defaultdict(list)
    for r in first:
        ts[_io_key(r)].append(r.ts)
    kept: list[IoRecord] = []
    why: dict[str, str] = {}
    for r in again:
        name = f"{r.workload} {r.direction} on {r.path}"
        if _io_key(r) not in ts:
            why.setdefault(name, "no first measurement of the same path, workload and hosts")
        elif not _not_before(r.ts, ts[_io_key(r)]):
            why.setdefault(name, "dated before the first measurement it would confirm")
        else:
            kept.append(r)
    return kept, [_note(name, reason) for name, reason in why.items()]


def _note(name: str, reason: str) -> str:
    return f"records marked as a confirmation of {name} were ignored: {reason}"


def first_of(records: Sequence[Any], again: Sequence[Any]) -> list[Any]:
    """The first measurements that share run, op and scope with a confirmation (net records)."""
    tests = {(r.run_id, r.op, r.scope) for r in again}
    return [r for r in records if (r.run_id, r.op, r.scope) in tests]
