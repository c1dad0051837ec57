"""The like-for-like rows of a cross-cluster comparison (pure): one per network (scope, op)
and per storage (scope, workload, direction), each compared only where every cluster
measured it the same way, and the one rule for a tie: noise bands that overlap.

"The same way" is the identity the baseline declares (reports.judging.fleet.baseline.IDENTITY): a
sweep's tool, ranks and nodes (so its ranks per node); a storage figure's tool, writers or
workers per node, block size and nodes. A row whose figures differ in it says "not
comparable:" and what differs, and ranks nothing.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from reports.fleet.clusters import ClusterSummary
from reports.judging.fleet.baseline import FIELD_NAMES, IDENTITY
from reports.shared.units import format_size

NET_IDENTITY = IDENTITY["sweep"]
IO_IDENTITY = IDENTITY["storage"]


def measured(fig: Any, field: str) -> Any:
    """How a figure was measured, one identity field: a storage figure's processes per node."""
    return getattr(fig, "procs_per_node" if field == "procs" else field)


def identity(fig: Any, fields: Sequence[str]) -> tuple[Any, ...]:
    return tuple(measured(fig, f) for f in fields)


def _shown(field: str, value: Any) -> str:
    if field in ("block", "bytes"):
        return format_size(int(value)) if value else "?"
    return str(value) if value not in ("", None) else "?"


def unlike(fields: Sequence[str], members: dict[str, list[Any]]) -> str:
    """ "not comparable: ..." naming each identity field whose values differ between the
    clusters, with each cluster's values."""
    parts = []
    for f in fields:
        vals = {n: sorted({measured(x, f) for x in figs}, key=str) for n, figs in members.items()}
        if len({tuple(v) for v in vals.values()}) > 1 or any(len(v) > 1 for v in vals.values()):
            each = ", ".join(f"{n} {'/'.join(_shown(f, x) for x in v)}" for n, v in vals.items())
            parts.append(f"{FIELD_NAMES.get(f, f)} ({each})")
    return "not comparable: " + ("; ".join(parts) or "no way of measuring it is shared by all")


@dataclass(frozen=True, kw_only=True, slots=True)
class Cell:
    value: float | None
    noise: float | None = (
        None  # relative: 0.05 = +-5%; None = unknown (one run, no iteration spread recorded)
    )
    note: str = ""  # e.g. "block 1M, 16 procs" or "not measured"
    runs: int = 1  # the runs of the cluster the figure is the median of (measured alike)


@dataclass(frozen=True, kw_only=True, slots=True)
class Row:
    figure: str
    unit: str
    kind: str  # network | storage | cost | idle
    cells: dict[str, Cell]
    comparable: bool
    reasons: tuple[str, ...] = ()
    better: str = "higher"  # higher | lower
    best: tuple[str, ...] = ()  # the winner and those tied with it


def combine(values: Sequence[tuple[float, float | None]]) -> Cell:
    """Median over runs; noise = max(half the range / median, the records' own spread),
    None when neither is known (one run whose records carry no iteration spread)."""
    vals = [v for v, _ in values]
    med = statistics.median(vals)
    known = [c for _, c in values if c is not None]
    if len(vals) > 1:
        known.append((max(vals) - min(vals)) / 2 / med if med > 0 else 0.0)
    return Cell(
        value=med,
        noise=max(known) if known else None,
        note=f"{len(vals)} runs" if len(vals) > 1 else "",
        runs=len(vals),
    )


def tie(a: Cell, b: Cell) -> bool | None:
    """The one rule for "tie" (and so for "best"): the noise bands overlap. True when the
    difference fits in the bands that are known; False when both are known and it does not;
    None (unknown) when it does not fit in the known ones and a noise is unknown — unknown
    noise is never taken as zero."""
    assert a.value is not None and b.value is not None
    known = a.value * (a.noise or 0.0) + b.value * (b.noise or 0.0)
    if abs(a.value - b.value) <= known:
        return True
    return None if a.noise is None or b.noise is None else False


def best_of(cells: dict[str, Cell], better: str) -> tuple[str, ...]:
    """The best figure and every one tied with it (tie() is True); order-independent."""
    have = {n: c for n, c in cells.items() if c.value is not None}
    if len(have) < 2:
        return ()
    pick = (max if better == "higher" else min)(have, key=lambda n: (have[n].value, n))
    return tuple(n for n in have if n == pick or tie(have[pick], have[n]) is True)


def net_rows(clusters: dict[str, list[ClusterSummary]]) -> list[Row]:
    rows = []
    keys = sorted({k for runs in clusters.values() for s in runs for k in s.curves})
    for scope, op in keys:
        have = {
            n: [s.curves[(scope, op)] for s in runs if (scope, op) in s.curves]
            for n, runs in clusters.items()
        }
        members = {n: cs for n, cs in have.items() if cs}
        reasons: list[str] = [f"{n} did not measure it" for n, cs in have.items() if not cs]
        common = set.intersection(*(set(c.sizes) for cs in members.values() for c in cs))
        figure = f"{scope} {op} busbw"
        if len({identity(c, NET_IDENTITY) for cs in members.values() for c in cs}) > 1:
            reasons.append(unlike(NET_IDENTITY, members))
            cells = {
                n: Cell(
                    value=None,
                    note="; ".join(
                        f"{c.backend or '?'}, {c.ranks} ranks on {c.nodes} node{'s' if c.nodes != 1 else ''} "
                        f"({c.ranks_per_node}/node), {max(c.busbw):.2f} GB/s best"
                        for c in cs
                    ),
                )
                for n, cs in members.items()
            }
            rows.append(gbps_row(figure, "network", cells, clusters, reasons, alike=False))
            continue
        if not common:
            ranges = ", ".join(
                f"{n} {format_size(min(c.sizes[0] for c in cs))}–{format_size(max(c.sizes[-1] for c in cs))}"
                for n, cs in members.items()
            )
            reasons.append(f"no message size measured by all ({ranges}): not compared")
            rows.append(gbps_row(figure, "network", {}, clusters, reasons, alike=False))
            continue
        at = max(common)
        for n, cs in members.items():
            top = max(c.sizes[-1] for c in cs)
            if top > at:
                bw = statistics.median(c.busbw[c.sizes.index(top)] for c in cs if top in c.sizes)
                reasons.append(
                    f"{n} swept to {format_size(top)} ({bw:.2f} GB/s there), not used: "
                    f"compared at {format_size(at)}, the largest size all measured"
                )
        cells = {n: combine([c.point(at) for c in cs]) for n, cs in members.items()}
        cells = {
            n: replace(c, note=f"at {format_size(at)}" + (f", {c.note}" if c.note else ""))
            for n, c in cells.items()
        }
        rows.append(gbps_row(f"{figure} at {format_size(at)}", "network", cells, clusters, reasons))
    return rows


def io_rows(clusters: dict[str, list[ClusterSummary]]) -> list[Row]:
    rows = []
    keys = sorted(
        {(f.scope, f.workload, f.direction) for runs in clusters.values() for s in runs for f in s.storage}
    )
    for scope, workload, direction in keys:
        have = {
            n: [
                [f for f in s.storage if (f.scope, f.workload, f.direction) == (scope, workload, direction)]
                for s in runs
            ]
            for n, runs in clusters.items()
        }
        members = {n: [fs for fs in runs if fs] for n, runs in have.items() if any(runs)}
        reasons = [f"{n} did not measure it" for n in clusters if n not in members]
        shapes = [{identity(f, IO_IDENTITY) for f in fs} for runs in members.values() for fs in runs]
        common = set.intersection(*shapes)
        figure = f"{scope} {direction} ({workload})"
        if not common:
            figs = {n: [f for fs in runs for f in fs] for n, runs in members.items()}
            reasons.append(unlike(IO_IDENTITY, figs))
            rows.append(gbps_row(figure, "storage", {}, clusters, reasons, alike=False))
            continue

        # of the ways all measured it: the most processes per node, then the largest block
        def most(shape: tuple[Any, ...]) -> tuple[Any, ...]:
            got = dict(zip(IO_IDENTITY, shape))
            return (got["procs"], got["block"], str(shape))

        pick = max(common, key=most)
        cells = {}
        for n, runs in members.items():
            c = combine([(max(f.bw for f in fs if identity(f, IO_IDENTITY) == pick), None) for fs in runs])
            cells[n] = replace(c, note="")  # the runs are said with the spread (render.spread_text)
        label = ", ".join(f"{FIELD_NAMES.get(f, f)} {_shown(f, v)}" for f, v in zip(IO_IDENTITY, pick) if v)
        rows.append(gbps_row(f"{figure}, {label}", "storage", cells, clusters, reasons))
    return rows


def fill(cells: dict[str, Cell], clusters: dict[str, list[ClusterSummary]]) -> dict[str, Cell]:
    return {n: cells.get(n, Cell(value=None, note="not measured")) for n in clusters}


def gbps_row(
    figure: str,
    kind: str,
    cells: dict[str, Cell],
    clusters: dict[str, list[ClusterSummary]],
    reasons: list[str],
    alike: bool = True,
) -> Row:
    """A network or storage row. Measured alike by the clusters in `cells`: compared (and a
    best named) when two or more did; not alike: shown with why, and nothing ranked on it."""
    return Row(
        figure=figure,
        unit="GB/s",
        kind=kind,
        cells=fill(cells, clusters),
        comparable=alike and len(cells) > 1,
        reasons=tuple(reasons),
        best=best_of(cells, "higher") if alike else (),
    )
