"""Soak evidence (pure): series over a soak's passes, one value per pass, from records with
`extra.soak_pass` (and io records of the passes that wrote): per scope, per pair and node,
per storage workload; the passes' time windows and the p99 spikes. Judged by
reports.judging.fleet.stability, drawn by reports.render.soak.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping

from reports.shared.records import IoRecord, NetRecord

SPIKE_K = 3.0
MIN_PASSES = 3  # a median of fewer passes is no reference


def soak_pass(rec: NetRecord | IoRecord) -> int | None:
    v = rec.extra.get("soak_pass")
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def spikes(p99: Mapping[int, float]) -> list[int]:
    if len(p99) < MIN_PASSES:
        return []
    med = statistics.median(p99.values())
    return sorted(k for k, v in p99.items() if med > 0 and v > SPIKE_K * med)


# -- series ------------------------------------------------------------------------------
def scope_series(net: Iterable[NetRecord]) -> dict[tuple[str, tuple[str, ...]], dict[int, float]]:
    """(scope, hosts) -> pass -> median over its op x size series of busbw / own median."""
    raw: dict[tuple[str, tuple[str, ...], str, int, bool], dict[int, float]] = defaultdict(dict)
    for r in net:
        k = soak_pass(r)
        if k is not None and r.scope in ("world", "intra-node", "inter-node") and r.wrong == 0:
            raw[(r.scope, tuple(r.hosts), r.op, r.bytes, r.in_place)][k] = r.busbw_GBps
    ratios: dict[tuple[str, tuple[str, ...]], dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for (scope, hosts, *_), vals in raw.items():
        med = statistics.median(vals.values())
        for k, v in vals.items():
            if med > 0:
                ratios[(scope, hosts)][k].append(v / med)
    return {key: {k: statistics.median(v) for k, v in per.items()} for key, per in ratios.items()}


def _rail(r: NetRecord) -> int:
    v = r.extra.get("rail", 0)  # records without `rail` (one rank per node, or older) are rail 0
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0


def pair_rails(net: Iterable[NetRecord]) -> list[int]:
    """The rails a soak's pair tests ran on ([0] for records without `rail`)."""
    return sorted({_rail(r) for r in net if soak_pass(r) is not None and r.scope == "pair"}) or [0]


def pair_series(net: Iterable[NetRecord], rail: int | None = None) -> dict[tuple[str, str], dict[int, float]]:
    """(host a, host b) -> pass -> the pair's best busbw in that pass (both pair passes) on
    `rail`; with rail None, on the pair's slowest rail that pass (a slow NIC is not hidden
    behind its node's fast ones)."""
    best: dict[tuple[str, str], dict[int, dict[int, float]]] = defaultdict(lambda: defaultdict(dict))
    for r in net:
        k = soak_pass(r)
        if k is None or r.scope != "pair" or r.wrong or len(set(r.hosts)) != 2:
            continue
        j = _rail(r)
        if rail is not None and j != rail:
            continue
        a, b = sorted(set(r.hosts))
        best[(a, b)][k][j] = max(best[(a, b)][k].get(j, 0.0), r.busbw_GBps)
    return {p: {k: min(by_rail.values()) for k, by_rail in per.items()} for p, per in best.items()}


def node_scores(pairs: Mapping[tuple[str, str], Mapping[int, float]]) -> dict[str, dict[int, float]]:
    out: dict[str, dict[int, float]] = defaultdict(dict)
    for (a, b), vals in pairs.items():
        for k, v in vals.items():
            for h in (a, b):
                out[h][k] = max(out[h].get(k, 0.0), v)
    return out


def io_series(io: Iterable[IoRecord]) -> dict[tuple[str, str, str, str], dict[int, float]]:
    """(scope, path, workload, direction + tool) -> pass -> bandwidth GB/s (fio and torch.save
    writes of one pass are two series)."""
    out: dict[tuple[str, str, str, str], dict[int, float]] = defaultdict(dict)
    for r in io:
        k = soak_pass(r)
        if k is not None and r.bw_GBps > 0:
            how = r.direction if r.backend == "fio" else f"{r.direction} ({r.backend})"
            out[(r.scope, r.path, r.workload, how)][k] = r.bw_GBps
    return out


def pass_times(records: Iterable[NetRecord | IoRecord]) -> dict[int, tuple[str, str]]:
    """pass -> (first ts, last ts) of its records (ISO-8601 UTC sorts as text)."""
    out: dict[int, tuple[str, str]] = {}
    for r in records:
        k = soak_pass(r)
        if k is not None:
            lo, hi = out.get(k, (r.ts, r.ts))
            out[k] = (min(lo, r.ts), max(hi, r.ts))
    return out
