"""Several clusters side by side (pure): the figures a buyer compares across trials.

For each results directory: the plateau busbw per scope (all_reduce where measured), the
best storage bandwidth per scope and workload, the verdict, the price per GPU-hour (from
the spec) and, when a workload was modelled, the cost per useful GPU-hour:

    cost per useful GPU-hour = price per GPU-hour / (1 - idle share)

where the idle share is the share of step time the accelerators wait for network and
storage (reports.judging.model). A cluster that is 20% cheaper but keeps its GPUs waiting 30% of
the time costs more per hour of work done.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from reports.findings import FAILING
from reports.records import RecordSet
from reports.judging.frames import Sweep, io_frame, net_frame, sweeps

SCOPES = ("intra-node", "inter-node")


@dataclass(frozen=True, kw_only=True, slots=True)
class ClusterSummary:
    name: str
    verdict: str
    failing: int
    findings: int
    plateaus: dict[str, tuple[str, int, float]] = field(default_factory=dict)   # scope -> (op, size, busbw)
    curves: dict[str, Sweep] = field(default_factory=dict)                       # scope -> the sweep plotted
    storage: dict[str, float] = field(default_factory=dict)                      # "shared write (checkpoint_write)"
    price_per_gpu_hour: float | None = None
    idle_share: float | None = None
    workload: str | None = None

    @property
    def cost_per_useful_gpu_hour(self) -> float | None:
        return cost_per_useful(self.price_per_gpu_hour, self.idle_share)


def cost_per_useful(price: float | None, idle_share: float | None) -> float | None:
    """price / (1 - idle share); None when either is unknown or the GPUs never work."""
    if price is None or idle_share is None or not 0 <= idle_share < 1:
        return None
    return price / (1.0 - idle_share)


def effective(s: Sweep) -> str:
    """World sweeps stand for inter-node on several nodes, intra-node on one (as reports.judging.compare)."""
    if s.scope == "world":
        return "inter-node" if s.nodes > 1 else "intra-node"
    return s.scope


def main_sweeps(sws: Sequence[Sweep]) -> dict[str, Sweep]:
    """One sweep per scope: explicit scopes before world, all_reduce before other ops,
    the most ranks first."""
    out: dict[str, Sweep] = {}
    ranked = sorted(sws, key=lambda s: (s.scope == "world", s.op != "all_reduce", -s.ranks, s.op, s.backend))
    for s in ranked:
        scope = effective(s)
        if scope in SCOPES and scope not in out:
            out[scope] = s
    return out


def summarise(name: str, records: RecordSet, judgement: Any, spec: Any = None) -> ClusterSummary:
    main = main_sweeps(sweeps(net_frame(records.net)))
    plateaus = {scope: (s.op, *s.plateau) for scope, s in main.items()}
    storage: dict[str, float] = {}
    io = io_frame(records.io)
    for r in io.itertuples(index=False) if not io.empty else ():
        if r.failed or r.bytes == 0:
            continue
        key = f"{r.scope} {r.direction} ({r.workload})"
        storage[key] = max(storage.get(key, 0.0), float(r.bw))
    summary: Mapping[str, Any] = judgement.model_summary or {}
    price = getattr(spec, "price_per_gpu_hour", None) or summary.get("price_per_gpu_hour")
    idle = summary.get("idle_share") if judgement.model else None
    return ClusterSummary(
        name=name, verdict=judgement.verdict, failing=sum(f.status in FAILING for f in judgement.findings),
        findings=len(judgement.findings), plateaus=plateaus, curves=main, storage=storage,
        price_per_gpu_hour=float(price) if price is not None else None,
        idle_share=float(idle) if idle is not None else None, workload=judgement.workload_name)


def unique_names(names: Sequence[str], dirs: Sequence[str]) -> list[str]:
    """Spec names can repeat (three trials of one offer): add the directory name then."""
    return [f"{n} ({d})" if names.count(n) > 1 else n for n, d in zip(names, dirs)]


def _f(x: float | None, fmt: str) -> str:
    return "—" if x is None else format(x, fmt)


def side_by_side(clusters: Sequence[ClusterSummary]) -> pd.DataFrame:
    """Rows = figures, columns = clusters; every cell a string ('—' = not measured)."""
    from reports.units import format_size

    rows: dict[str, list[str]] = {"verdict": [f"{c.verdict} ({c.failing} to act on)" for c in clusters]}
    for scope in SCOPES:
        rows[f"{scope} busbw plateau (GB/s)"] = [
            f"{c.plateaus[scope][2]:.2f} ({c.plateaus[scope][0]} at {format_size(c.plateaus[scope][1])})"
            if scope in c.plateaus else "—" for c in clusters]
    for key in sorted({k for c in clusters for k in c.storage}):
        rows[f"{key} (GB/s)"] = [_f(c.storage.get(key), ".2f") for c in clusters]
    rows["price per GPU-hour ($)"] = [_f(c.price_per_gpu_hour, ".2f") for c in clusters]
    rows["GPU idle share (workload)"] = [
        "—" if c.idle_share is None else f"{c.idle_share:.1%} ({c.workload})" for c in clusters]
    rows["cost per useful GPU-hour ($)"] = [_f(c.cost_per_useful_gpu_hour, ".2f") for c in clusters]
    df = pd.DataFrame.from_dict(rows, orient="index", columns=[c.name for c in clusters])
    return df.rename_axis("figure").reset_index()


def ranking(clusters: Sequence[ClusterSummary]) -> list[str]:
    """Plain sentences: the cheapest useful hour, and what the others cost beside it."""
    priced = sorted((c for c in clusters if c.cost_per_useful_gpu_hour is not None),
                    key=lambda c: (c.cost_per_useful_gpu_hour, c.name))
    if not priced:
        return ["No cost per useful GPU-hour: give price_per_gpu_hour in each spec and a --workload to model."]
    best = priced[0]
    out = [f"Cheapest per useful GPU-hour: {best.name} at ${best.cost_per_useful_gpu_hour:.2f} "
           f"(list ${best.price_per_gpu_hour:.2f}, GPUs idle {best.idle_share:.1%})."]
    for c in priced[1:]:
        extra = c.cost_per_useful_gpu_hour / best.cost_per_useful_gpu_hour - 1  # type: ignore[operator]
        out.append(f"{c.name}: ${c.cost_per_useful_gpu_hour:.2f} per useful GPU-hour, {extra:.0%} more.")
    return out
