"""Clusters compared like for like, and ranked on the cost of work (pure).

Directories whose spec has the same name are runs of one cluster: each figure is the
median over its runs and the runs' spread is its noise. A figure's noise is the larger of
that run-to-run spread (half the range over the median) and the records' iteration CV at
the size compared. Two figures whose noise bands overlap are a tie, not a winner.

Like for like (reports/fleet/rows.py): a network row is one (scope, op), compared only when
every cluster that measured it did so with the same tool, ranks and nodes, and at the largest
message size all of them measured (a sweep to 16M is not set against one to 4M at their own
ends). A storage row is one (scope, workload, direction), compared at a tool, processes per
node, block size and nodes all of them measured. Where that fails the row says "not
comparable:" and what differs, and ranks nothing.

The ranking, under a workload: $ per billion tokens (training workloads: the model's step
time prices the work, so an H200 hour and an H100 hour are set against what they buy),
else $ per useful GPU-hour. A cluster whose run lacks a component the workload needs, a
price, or a spec is not ranked; the headline says what it lacks and how to measure it (with
the command of the tool its files came from). The headline's first sentence says whether the
cheapest passed, and why not; the cheapest that passed follows it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from reports.fleet.clusters import COMPONENTS, ClusterSummary, finite
from reports.fleet.facts import Fed, Promise, RunFacts, merged_fed
from reports.fleet.rows import Cell, Row, best_of, io_rows, net_rows, tie
from reports.fleet.runs import STATISTIC, merge, recompute, spread


@dataclass(frozen=True, kw_only=True, slots=True)
class Ranked:
    name: str
    metric: str
    value: float
    noise: float | None
    rank: int
    tied_with: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True, slots=True)
class Comparison:
    clusters: dict[str, list[ClusterSummary]]  # name -> its runs, in the order given
    workload: str | None
    rows: list[Row]
    ranking: list[Ranked]
    not_ranked: dict[str, tuple[str, ...]] = field(default_factory=dict)
    headline: list[str] = field(default_factory=list)
    facts: dict[str, list[RunFacts]] = field(default_factory=dict)  # name -> its runs' facts
    # what the cost assumes (reports/fleet/assumptions.py): (assumption, value, where from)
    assumptions: tuple[tuple[str, str, str], ...] = ()

    def passed(self, name: str) -> bool:
        return passed(self.clusters[name])

    def why_not(self, name: str) -> str:
        return why_not(self.clusters[name], self.facts.get(name, []))


def passed(runs: Sequence[ClusterSummary]) -> bool:
    """A cluster passed when every run of it did."""
    return all(r.verdict == "pass" for r in runs)


def why_not(runs: Sequence[ClusterSummary], facts: Sequence[RunFacts]) -> str:
    """Why the cluster did not pass: each run's reason once ("" when it passed)."""
    whys = [f.why_not_pass for f in facts if f.why_not_pass]
    if whys:
        return "; ".join(dict.fromkeys(whys))
    return "; ".join(dict.fromkeys(r.verdict for r in runs if r.verdict != "pass"))


def promises_of(facts: Sequence[RunFacts]) -> tuple[Promise, ...]:
    """A cluster's failing promises over its runs, each (component, check) once (its first run's)."""
    out: dict[tuple[str, str], Promise] = {}
    for f in facts:
        for p in f.promises:
            out.setdefault((p.component, p.check), p)
    return tuple(out.values())


def group_runs(summaries: Sequence[ClusterSummary]) -> dict[str, list[ClusterSummary]]:
    """Runs by cluster name, clusters by name and runs by directory: the same directories in
    any order give the same comparison."""
    out: dict[str, list[ClusterSummary]] = {}
    for s in sorted(summaries, key=lambda s: (s.name, s.run)):
        out.setdefault(s.name, []).append(s)
    return out


def idle_of(component: str) -> Callable[[ClusterSummary], float | None]:
    """The idle share one component causes, as a metric row's getter."""
    return lambda s: s.idle_by_component.get(component)


def _metric_row(
    clusters: dict[str, list[ClusterSummary]],
    figure: str,
    unit: str,
    kind: str,
    get: Callable[[ClusterSummary], float | None],
    better: str,
    ranked: set[str],
) -> Row:
    cells: dict[str, Cell] = {}
    for n, runs in clusters.items():
        vals = [get(s) for s in runs]
        merged = get(merge(runs))  # the figure at the median idle share: recomputable beside it
        if merged is not None and finite(merged) and all(v is not None and finite(v) for v in vals):
            per_run = [float(v) for v in vals if v is not None]
            note = f"{STATISTIC} ({len(runs)})" if len(runs) > 1 else ""
            cells[n] = Cell(
                value=float(merged), noise=spread(per_run, float(merged)), note=note, runs=len(per_run)
            )
        else:
            cells[n] = Cell(
                value=None, note="unmeasured" if kind == "idle" else "not ranked" if n not in ranked else ""
            )
    best = best_of({n: c for n, c in cells.items() if n in ranked}, better) if kind == "cost" else ()
    return Row(
        figure=figure,
        unit=unit,
        kind=kind,
        cells=cells,
        comparable=kind == "cost" and len(best) > 0,
        better=better,
        best=best,
    )


def lost_per_day(s: ClusterSummary) -> float | None:
    """$ lost per day to waiting = price x GPUs x 24 x GPU idle share."""
    day = s.usd_per_day
    return None if day is None or s.idle_share is None else day * s.idle_share


def compare(
    summaries: Sequence[ClusterSummary], workload: str | None, facts: Sequence[RunFacts] = ()
) -> Comparison:
    clusters = group_runs(summaries)
    by_run = {f.run: f for f in facts}
    run_facts = {n: [by_run[s.run] for s in runs if s.run in by_run] for n, runs in clusters.items()}
    not_ranked = {
        n: tuple(dict.fromkeys(p for s in runs for p in s.problems))
        + tuple(dict.fromkeys(a for f in run_facts[n] for a in f.advice))
        for n, runs in clusters.items()
    }
    not_ranked = {n: p for n, p in not_ranked.items() if p} if workload else {}
    ranked_names = {n for n in clusters if n not in not_ranked}
    rows = [*net_rows(clusters), *io_rows(clusters)]
    rank: list[Ranked] = []
    headline: list[str] = []
    if workload:
        training = all(s.tokens_per_step and s.compute_s for n in ranked_names for s in clusters[n])
        metric, get = (
            ("$ per billion tokens", lambda s: s.usd_per_billion_tokens)
            if training and ranked_names
            else ("$ per useful GPU-hour", lambda s: s.cost_per_useful_gpu_hour)
        )
        cost_rows = [
            _metric_row(clusters, metric, "$", "cost", get, "lower", ranked_names),
            *[
                _metric_row(clusters, figure, unit, "info", get_, better, ranked_names)
                for figure, unit, get_, better in (
                    ("$ per useful GPU-hour", "$", lambda s: s.cost_per_useful_gpu_hour, "lower"),
                    ("$ per step", "$", lambda s: s.usd_per_step, "lower"),
                    ("billion tokens per day", "", lambda s: s.billion_tokens_per_day, "higher"),
                    ("$ per day at the workload's scale", "$", lambda s: s.usd_per_day, "lower"),
                    ("$ lost per day to waiting", "$", lost_per_day, "lower"),
                )
            ],
            _metric_row(
                clusters, "GPU idle share", "", "idle", lambda s: s.idle_share, "lower", ranked_names
            ),
            *[
                _metric_row(
                    clusters,
                    f"idle: {comp}",
                    "",
                    "idle",
                    idle_of(comp),
                    "lower",
                    ranked_names,
                )
                for comp in COMPONENTS
                if any(comp in s.idle_by_component for s in summaries)
            ],
        ]
        if metric.endswith("useful GPU-hour"):
            cost_rows = [cost_rows[0], *cost_rows[2:]]
        rows = [*cost_rows, *rows]
        cells = cost_rows[0].cells
        for n in sorted(n for n in ranked_names if cells[n].value is None):
            not_ranked[n] = (
                f"no {metric} could be computed (the workload's GPU count or step time is missing)",
            )
            ranked_names.discard(n)
        ok = {n for n, runs in clusters.items() if passed(runs)}
        # a cluster that passed its acceptance ranks before any that did not, whatever it costs
        order = sorted(
            (n for n in ranked_names if cells[n].value is not None),
            key=lambda n: (n not in ok, cells[n].value, n),
        )
        for i, n in enumerate(order):
            c = cells[n]
            assert c.value is not None  # `order` holds the valued cells only
            tied = tuple(m for m in order if m != n and (m in ok) == (n in ok) and tie(c, cells[m]) is True)
            first = next((j for j, m in enumerate(order) if m == n or m in tied), i)
            rank.append(
                Ranked(
                    name=n,
                    metric=metric,
                    value=c.value,
                    noise=c.noise,
                    rank=first + 1,
                    tied_with=tied,
                )
            )
        accs = sorted({s.accelerator or "unknown" for runs in clusters.values() for s in runs})
        whys = {n: why_not(runs, run_facts[n]) for n, runs in clusters.items()}
        by_cost = sorted(rank, key=lambda r: (r.value, r.name))  # the headline names the cheapest first
        headline = _headline(by_cost, not_ranked, clusters, workload, metric, accs, ok, whys)
    else:
        headline = [
            "No workload given: nothing is ranked on cost. Give --workload (a preset such as llama-70b, or a "
            "file) to rank the clusters on what the work costs; the rows below compare figures like for like."
        ]
    return Comparison(
        clusters=clusters,
        workload=workload,
        rows=rows,
        ranking=rank,
        not_ranked=not_ranked,
        headline=headline,
        facts=run_facts,
    )


def limited_by(s: ClusterSummary) -> str | None:
    """The component the GPUs wait for most (None when none waits, or a part is unmeasured)."""
    if any(v is None for v in s.idle_by_component.values()):
        return None
    parts = {c: v for c, v in s.idle_by_component.items() if v is not None and v > 0}
    return max(parts, key=lambda c: parts[c], default=None)


def _why(runs: list[ClusterSummary]) -> str:
    top = limited_by(merge(runs))
    return f"most of it {top}" if top else "none of it exposed"


def _headline(
    rank: list[Ranked],
    not_ranked: dict[str, tuple[str, ...]],
    clusters: dict[str, list[ClusterSummary]],
    workload: str,
    metric: str,
    accs: list[str],
    ok_names: set[str],
    whys: dict[str, str],
) -> list[str]:
    out = []

    def failed(n: str) -> str:
        word = "failed" if any(r.verdict == "fail" for r in clusters[n]) else "did not pass"
        return f"{word} ({whys[n]})"

    if rank:
        b = rank[0]
        verdict = "" if b.name in ok_names else f"; but {b.name} {failed(b.name)}"
        ok = next((r for r in rank if r.name in ok_names), None)
        if b.name not in ok_names:
            verdict += (
                f"; the cheapest that passed is {ok.name} at ${ok.value:,.2f}"
                if ok is not None
                else "; no ranked cluster passed"
            )
        s = merge(clusters[b.name])
        winners = [b.name, *b.tied_with]
        lead = (
            f"Cheapest {metric.removeprefix('$ ')} of {workload}: {b.name} at ${b.value:,.2f}"
            if len(winners) == 1
            else f"Tie for the cheapest {metric.removeprefix('$ ')} of {workload}: {', '.join(winners)} "
            f"(equal, or apart by less than their noise); {b.name} at ${b.value:,.2f}"
        )
        out.append(f"{lead} = {recompute(s, metric)}; {_why(clusters[b.name])}{verdict}.")
        for r in rank[1:]:
            more = r.value / b.value - 1 if b.value > 0 else 0.0
            tie_txt = f", a tie with {', '.join(r.tied_with)} (inside the noise)" if r.tied_with else ""
            if (
                not r.tied_with
                and tie(Cell(value=b.value, noise=b.noise), Cell(value=r.value, noise=r.noise)) is None
            ):
                tie_txt = ", noise unknown (one run: no run-to-run spread), so not known to be outside it"
            fails = "" if r.name in ok_names else f"; {failed(r.name)}"
            out.append(
                f"{r.name}: ${r.value:,.2f} {metric.removeprefix('$ ')} = {recompute(merge(clusters[r.name]), metric)}, "
                f"{more:.0%} more{tie_txt}{fails}."
            )
        if metric.endswith("useful GPU-hour") and len(accs) > 1:
            out.append(
                f"Accelerators differ ({', '.join(accs)}): a GPU-hour does not buy the same work, and this "
                "workload has no step time to price the work itself."
            )
    for n, why in not_ranked.items():
        out.append(f"{n} is not ranked: " + "; ".join(why) + ".")
    if not rank:
        out.append(
            "No cluster could be ranked: each needs a spec with price_per_gpu_hour and every measurement the "
            "workload needs."
        )
    elif any(r.noise is None for r in rank):
        out.append(
            "± unknown: one run per cluster gives no run-to-run spread; take 3 or more runs of each cluster "
            "(one results directory each, under one spec name) to know whether the ranking is outside the noise."
        )
    return out


def _num(x: float | None, digits: int = 6) -> float | None:
    return round(x, digits) if x is not None and finite(x) else None


def _noise(x: float | None) -> float | None:
    return None if x is None else _num(x, 4)


def to_json(cmp: Comparison) -> dict[str, Any]:
    """compare.json (docs/contract.md): no inf or nan anywhere (json.dumps(allow_nan=False) holds it to that)."""
    clusters = []
    for n, runs in cmp.clusters.items():
        s = merge(runs)
        clusters.append(
            {
                "name": n,
                "runs": sorted(r.run for r in runs),
                "verdict": [r.verdict for r in sorted(runs, key=lambda r: r.run)],
                "accelerator": s.accelerator,
                "price_per_gpu_hour": _num(s.price_per_gpu_hour),
                "workload": s.workload,
                "gpus": s.gpus,
                "idle_share": _num(s.idle_share),  # one run's, or the median over runs
                "idle_by_component": {c: _num(v) for c, v in s.idle_by_component.items()},
                "statistic": STATISTIC if len(runs) > 1 else None,
                "deciding_findings": list(
                    dict.fromkeys(m for r in sorted(runs, key=lambda r: r.run) for m in r.deciding)
                ),
                "ranked": n not in cmp.not_ranked and any(r.name == n for r in cmp.ranking),
                "not_ranked_because": list(cmp.not_ranked.get(n, ())),
                "passed": cmp.passed(n),
                "why_not_passed": cmp.why_not(n) or None,
                "usd_lost_per_day": _num(lost_per_day(s), 2),
                "limited_by": limited_by(s),
                "gpus_fed": _fed(merged_fed(cmp.facts.get(n, []))),
                "promises": [
                    {
                        "component": p.component,
                        "check": p.check,
                        "measured": _num(p.measured),
                        "expected": _num(p.expected),
                        "unit": p.unit,
                        "idle_share": _num(p.idle_share),
                        "usd_per_day": _num(p.usd_per_day, 2),
                        "text": p.text,
                    }
                    for p in promises_of(cmp.facts.get(n, []))
                ],
                "extrapolated": list(dict.fromkeys(x for f in cmp.facts.get(n, []) for x in f.extrapolated)),
            }
        )
    rows = [
        {
            "figure": r.figure,
            "kind": r.kind,
            "unit": r.unit,
            "comparable": r.comparable,
            "reasons": list(r.reasons),
            "better": r.better,
            "best": list(r.best),
            "values": {
                n: {"value": _num(c.value), "noise": _noise(c.noise), "note": c.note}
                for n, c in r.cells.items()
            },
        }
        for r in cmp.rows
    ]
    ranking = [
        {
            "rank": r.rank,
            "name": r.name,
            "metric": r.metric,
            "value": _num(r.value),
            "noise": _noise(r.noise),
            "tied_with": list(r.tied_with),
            "passed": cmp.passed(r.name),
        }
        for r in cmp.ranking
    ]
    return {
        "schema": 1,
        "workload": cmp.workload,
        "headline": cmp.headline,
        "clusters": clusters,
        "rows": rows,
        "ranking": ranking,
        "cheapest_passed": next((r.name for r in cmp.ranking if cmp.passed(r.name)), None),
        "assumptions": [{"assumption": a, "value": v, "from": f} for a, v, f in cmp.assumptions],
    }


def _fed(f: Fed | None) -> dict[str, Any] | None:
    if f is None:
        return None
    return {
        "value": _num(f.gpus, 1),
        "per_node": f.per_node,
        "floor": f.floor,
        "note": f.note,
        "job_gpus": f.bound,
        "all_fed": f.all_fed,
        "text": f.text,
    }
