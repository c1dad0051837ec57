"""Several runs of one cluster in a comparison (pure).

Runs are grouped by the name of their spec, and told apart by what they hold, never by
their directory: `distinct` counts copies of one run's directory as that one run. They are one cluster only when they agree on
what is bought: the accelerator, the GPUs per node and the price. `check_alike` refuses
anything else in one line naming the field and the two directories (or the user keeps each
directory apart, `stoker compare --by dir`).

`merge` makes one summary of a cluster's runs, the same whatever order the directories were
given in. The statistic is the median over runs, of the GPU idle share and of each component's
part of it; the costs are then computed from that median idle share (cost per useful
GPU-hour = price / (1 - median idle)), so that every cost in the headline can be recomputed
from the price and the idle share shown beside it. The median of the parts need not add up to
the median of the total; the report says so.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace

from reports.fleet.clusters import ClusterSummary
from reports.shared.errors import UsageError

STATISTIC = "median over runs"


@dataclass(frozen=True, kw_only=True, slots=True)
class RunIdentity:
    """What a results directory says was bought: the fields runs of one cluster share."""

    name: str  # the spec's name (or the directory's)
    run: str  # the directory as given
    accelerator: str | None
    gpus_per_node: int | None
    price_per_gpu_hour: float | None


FIELDS = ("accelerator", "gpus_per_node", "price_per_gpu_hour")


def check_alike(runs: Sequence[RunIdentity]) -> None:
    """UsageError when two runs under one name differ in what was bought."""
    first: dict[str, RunIdentity] = {}
    for r in sorted(runs, key=lambda r: r.run):  # the same refusal whatever the order given
        f = first.setdefault(r.name, r)
        for field in FIELDS:
            a, b = getattr(f, field), getattr(r, field)
            if a != b:
                raise UsageError(
                    f"{f.run} and {r.run} are both named {r.name!r} but differ in {field} ({a} vs {b}): "
                    "give each cluster's spec its own name, or --by dir to compare each directory on its own"
                )


def distinct(summaries: Sequence[ClusterSummary]) -> tuple[list[ClusterSummary], list[str]]:
    """One summary per run of a cluster: directories that hold the same run (the same run ids
    and records: copies of one directory) count once, the first by directory kept, in the
    order given; one note per copy left out. Copies counted as runs made a median of one run
    and a run-to-run noise of 0.0, which turned unknown noise into "known exactly"."""
    first: dict[tuple[str, str], ClusterSummary] = {}
    notes: list[str] = []
    for s in sorted(summaries, key=lambda s: s.run):
        if not s.identity:
            continue
        k = (s.name, s.identity)
        if k in first:
            notes.append(
                f"{s.run} holds the same run as {first[k].run} (the same run ids and records): counted once"
            )
        else:
            first[k] = s
    left_out = {id(s) for s in summaries if s.identity and first[(s.name, s.identity)] is not s}
    return [s for s in summaries if id(s) not in left_out], notes


def by_dir(summaries: Sequence[ClusterSummary]) -> list[ClusterSummary]:
    """Each directory its own cluster (`--by dir`): named by the directory where names repeat."""
    seen: dict[str, int] = {}
    for s in summaries:
        seen[s.name] = seen.get(s.name, 0) + 1
    return [replace(s, name=f"{s.name} ({s.run})") if seen[s.name] > 1 else s for s in summaries]


def _median(values: Sequence[float | None]) -> float | None:
    if not values or any(v is None for v in values):
        return None  # one run unmeasured: the cluster's figure is unmeasured, never a partial median
    return float(statistics.median(v for v in values if v is not None))


def merge(runs: Sequence[ClusterSummary]) -> ClusterSummary:
    """One summary of a cluster's runs, independent of their order (see the module docstring).
    Verdicts, findings and curves stay per run (the side-by-side rows combine those)."""
    runs = distinct(runs)[0]  # a copy of a run is that run once
    if len(runs) == 1:
        return runs[0]
    ordered = sorted(runs, key=lambda s: s.run)
    base = ordered[0]
    comps = sorted({c for s in ordered for c in s.idle_by_component})
    parts = {c: _median([s.idle_by_component.get(c) for s in ordered]) for c in comps}
    lacks = tuple(dict.fromkeys(x for s in ordered for x in s.lacks))
    problems = tuple(dict.fromkeys(x for s in ordered for x in s.problems))
    return replace(
        base,
        run=", ".join(s.run for s in ordered),
        idle_share=_median([s.idle_share for s in ordered]),
        idle_by_component=parts,
        compute_s=_median([s.compute_s for s in ordered]),
        lacks=lacks,
        problems=problems,
    )


def spread(values: Sequence[float], at: float) -> float | None:
    """Run-to-run noise of a figure: half the range over the value, None with one run."""
    if len(values) < 2:
        return None
    if max(values) == min(values):
        return 0.0
    return (max(values) - min(values)) / 2 / at if at > 0 else None


def recompute(s: ClusterSummary, metric: str) -> str:
    """The headline's cost as the arithmetic of figures shown beside it (GPU idle share to
    0.01%: the shown factors give the cost to within 0.05%)."""
    idle = s.idle_share if s.idle_share is not None else float("nan")
    price = s.price_per_gpu_hour or 0.0
    head = f"${price:.2f} per GPU-hour / (1 − GPU idle {idle:.2%}"
    if metric.endswith("useful GPU-hour"):
        return head + ")"
    return (
        f"${price:.2f} per GPU-hour × {s.gpus} GPUs × {s.compute_s:.4g} s compute / (1 − GPU idle {idle:.2%}) "
        f"/ 3600 × 10^9 / {s.tokens_per_step:.4g} tokens per step"
    )
