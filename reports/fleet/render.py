"""compare.md and compare.html (pure): the ranking and why, then the figures side by side.

Both are made from one reports.fleet.ranking.Comparison, through the same tables, so
the page and the markdown never disagree. No inf or nan is ever printed: a figure that is
missing or not finite reads "—" or "unmeasured".
"""

from __future__ import annotations

import pandas as pd

from reports.fleet.clusters import COMPONENTS, finite
from reports.fleet.facts import merged_fed
from reports.fleet.ranking import Comparison, limited_by, lost_per_day, promises_of
from reports.fleet.rows import Cell
from reports.fleet.runs import merge
from reports.render import plots
from reports.render.html import bullets, esc, html_page, img, table
from reports.render.markdown import LEGEND, md_table

COMPARE_LEGEND = (
    "- Like for like: a network row is one scope and op, compared at the largest message size every cluster "
    "measured and only with the same ranks per node; a storage row is one workload and direction at a block size "
    "and process count all measured. Where that fails, the row says what differs and names no best.",
    "- ± is the noise of a figure: the run-to-run spread (half the range over the median, where several runs of "
    "one cluster — directories whose specs share a name — are given) or the records' iteration CV, whichever is "
    'larger; "± unknown" where neither is known (one run, no iteration spread recorded). Figures whose noise '
    "bands overlap are a tie: both are marked best (one rule for rows and ranking); where a noise is unknown and the "
    "known bands do not cover the difference, it is not known to be a tie and only the better figure is marked.",
    "- Several runs of one cluster (directories whose specs share a name, and agree on accelerator, GPUs per node "
    "and price): the GPU idle share and each component's part are the median over runs (the medians of the parts "
    "need not add up to the median total); every cost is computed from that median idle share.",
    "- cost per useful GPU-hour = price per GPU-hour / (1 − GPU idle share); wall time of a step = compute time / "
    "(1 − idle share); $ per step = price × GPUs × wall time / 3600; $ per billion tokens = $ per step × 10^9 / "
    "tokens per step. Training workloads rank on $ per billion tokens (the work itself, whatever the accelerator), "
    "others on $ per useful GPU-hour.",
    "- idle: <component> is that component's part of the GPU idle share (the parts add up to it); unmeasured = the "
    "workload needs it and nothing was measured: such a cluster is not ranked (never counted as 0% idle), and its "
    "other parts read — (the split is shown only where every part was measured: a part of a total with a hole in "
    "it is no part).",
    "- GB/s per $ = the figure divided by the price per GPU-hour.",
    "- $ lost per day to waiting = price × GPUs × 24 × GPU idle share. GPUs fed at the idle budget b = measured "
    "read rate / ((1 − b) × per-GPU dataloader demand) (MLPerf Storage's maximum accelerators at AU ≥ 90%, at b); "
    "≥ where shared storage was measured from fewer nodes than the job has (a floor), per node for local storage. "
    "limited by = the component the GPUs wait for most. extrapolated = a figure the model takes for the whole "
    "job from fewer nodes than it has.",
)


# where a figure of a cluster is one run's: what would give it a spread
SPREAD_ADVICE = (
    '"± unknown" (or "within one run"): a figure measured in one run of its cluster has no run-to-run spread; '
    "take 3 or more runs of each cluster (one results directory each, under one spec name) to know how far "
    "its figures move from run to run."
)


def spread_text(c: Cell) -> str:
    """A figure's spread as the table shows it: "± 4% over 3 runs" for runs of one cluster
    measured alike; "± 2% within one run" (the records' iteration CV) or "± unknown" for one
    run. Unknown noise is said, never shown as none."""
    if c.noise is None:
        return "± unknown"
    if c.runs >= 2:
        return f"± {c.noise:.0%} over {c.runs} runs"
    return f"± {c.noise:.0%} within one run" if c.noise >= 0.005 else ""


def one_run_figures(cmp: Comparison) -> bool:
    """Whether a figure shown side by side is one run's (its spread is not run-to-run)."""
    return any(
        c.value is not None and c.runs < 2 for r in cmp.rows if r.unit == "GB/s" for c in r.cells.values()
    )


def fmt(c: Cell, unit: str, price: float | None = None) -> str:
    if c.value is None or not finite(c.value):
        return c.note or "—"
    if unit == "$":
        v = f"${c.value:,.2f}" if c.value >= 0.01 else f"${c.value:.2e}"
    elif unit == "":
        v = f"{c.value:.1%}" if c.value <= 1 else f"{c.value:,.1f}"
    else:
        v = f"{c.value:,.2f}"
    said = spread_text(c)
    extra = [said] if said else []
    if unit == "GB/s" and price and finite(c.value / price):
        extra.append(f"{c.value / price:.2f} per $")
    if c.note and not c.note.startswith("at "):
        extra.append(c.note)
    return v + (f" ({', '.join(extra)})" if extra else "")


def _price(cmp: Comparison, name: str) -> float | None:
    return cmp.clusters[name][0].price_per_gpu_hour


def rows_table(cmp: Comparison) -> pd.DataFrame:
    names = list(cmp.clusters)
    out = []
    for r in cmp.rows:
        row = {"figure": r.figure + (f" ({r.unit})" if r.unit and r.unit != "$" else "")}
        for n in names:
            cell = fmt(r.cells[n], r.unit, _price(cmp, n))
            if r.figure.startswith("idle: ") and r.cells[n].value is None:
                comp = r.figure.removeprefix("idle: ")
                cell = "unmeasured" if any(comp in s.idle_by_component for s in cmp.clusters[n]) else "—"
            row[n] = cell + (" **best**" if n in r.best and r.comparable else "")
        row["like for like"] = (
            "yes" + (f" ({'; '.join(r.reasons)})" if r.reasons else "")
            if r.comparable
            else "; ".join(r.reasons)
            or ("one cluster measured it" if r.kind in ("network", "storage") else "—")
        )
        out.append(row)
    return pd.DataFrame(out, columns=["figure", *names, "like for like"])


def _verdict(cmp: Comparison, name: str) -> str:
    """The cluster's acceptance verdict as the ranking shows it: pass, or each run's other verdict."""
    verdicts = list(dict.fromkeys(s.verdict for s in cmp.clusters.get(name, [])))
    return ", ".join(verdicts) or "—"


def ranking_table(cmp: Comparison) -> pd.DataFrame:
    rows = [
        {
            "rank": f"{r.rank}{'=' if r.tied_with else ''}",
            "cluster": r.name,
            "verdict": _verdict(cmp, r.name),
            r.metric: f"${r.value:,.2f}",
            "±": "unknown" if r.noise is None else f"{r.noise:.0%}",
            "tied with": ", ".join(r.tied_with) or "—",
        }
        for r in cmp.ranking
    ]
    rows += [
        {
            "rank": "not ranked",
            "cluster": n,
            "verdict": _verdict(cmp, n),
            cmp.ranking[0].metric if cmp.ranking else "cost": "—",
            "±": "—",
            "tied with": "; ".join(why),
        }
        for n, why in cmp.not_ranked.items()
    ]
    return pd.DataFrame(rows)


def why_table(cmp: Comparison) -> pd.DataFrame:
    """Per cluster (the median over its runs, as the cost rows): the verdict, where the GPUs
    wait, and the deciding findings."""
    rows = []
    for n, runs in cmp.clusters.items():
        s = merge(runs)
        row = {
            "cluster": n,
            "verdict": ", ".join(f"{r.verdict} ({r.failing} to act on)" for r in runs),
            "GPU idle": "unmeasured"
            if s.lacks
            else (f"{s.idle_share:.1%}" if s.idle_share is not None else "—"),
        }
        for c in COMPONENTS:
            v = s.idle_by_component.get(c, "absent")
            row[c] = "—" if v == "absent" else ("unmeasured" if v is None else f"{v:.1%}")
        row["compute figure"] = s.appetite or "—"
        lost = lost_per_day(s)
        row["$ lost per day to waiting"] = "—" if lost is None else f"${lost:,.0f}"
        fed = merged_fed(cmp.facts.get(n, []))
        row["GPUs fed at the idle budget"] = fed.text if fed else "—"
        row["limited by"] = limited_by(s) or ("unmeasured" if s.lacks else "nothing waits")
        extra = list(dict.fromkeys(x for f in cmp.facts.get(n, []) for x in f.extrapolated))
        row["extrapolated"] = "; ".join(extra) or "—"
        # the whole finding: what is wrong and what to do
        row["deciding findings"] = (
            " / ".join(dict.fromkeys(m for r in runs for m in r.deciding)) or "none failing"
        )
        rows.append(row)
    return pd.DataFrame(rows)


def assumptions_table(cmp: Comparison) -> pd.DataFrame:
    """What the cost of the work assumes (reports/fleet/assumptions.py)."""
    return pd.DataFrame(list(cmp.assumptions), columns=["assumption", "value", "from"])


def promises_table(cmp: Comparison) -> pd.DataFrame:
    """Each failing promise beside what it costs this workload: a promise under spec that the
    job does not wait on costs 0% idle, and the table says so rather than leave the two apart."""
    rows = [
        {"cluster": n, "failing promise and what it costs this workload": p.text}
        for n in cmp.clusters
        for p in promises_of(cmp.facts.get(n, []))
    ]
    return pd.DataFrame(rows, columns=["cluster", "failing promise and what it costs this workload"])


def _cost_sections(cmp: Comparison) -> list[tuple[str, pd.DataFrame]]:
    out = []
    if cmp.workload and cmp.assumptions:
        out.append(("What the cost assumes", assumptions_table(cmp)))
    promises = promises_table(cmp)
    if cmp.workload and len(promises):
        out.append(("Failing promises and what they cost", promises))
    return out


def render_md(cmp: Comparison) -> str:
    names = ", ".join(cmp.clusters)
    lines = [
        f"# stoker compare: {names}",
        "",
        f"Workload: {cmp.workload or 'none'}",
        "",
        *[f"- {h}" for h in cmp.headline],
        "",
    ]
    if cmp.ranking or cmp.not_ranked:
        lines += ["## Ranking", "", md_table(ranking_table(cmp)), ""]
    for title, df in _cost_sections(cmp):
        lines += [f"## {title}", "", md_table(df), ""]
    lines += [
        "## Why: where the GPUs wait, the verdict and what decides it",
        "",
        md_table(why_table(cmp)),
        "",
        "## Side by side",
        "",
        md_table(rows_table(cmp)),
        "",
        *([SPREAD_ADVICE, ""] if one_run_figures(cmp) else []),
        "## How to read it",
        "",
        *COMPARE_LEGEND,
        *LEGEND[:2],
        "",
    ]
    return "\n".join(lines)


def _cost_chart(cmp: Comparison) -> list[str]:
    if not cmp.ranking:
        return []
    ranked = list(cmp.ranking)
    names = [r.name for r in ranked]
    totals = [r.value for r in ranked]
    merged = {n: merge(cmp.clusters[n]) for n in names}
    comps = [c for c in COMPONENTS if any(merged[n].idle_by_component.get(c) for n in names)]
    parts = [("compute", [1 - (merged[n].idle_share or 0.0) for n in names])]
    parts += [(f"waiting: {c}", [merged[n].idle_by_component.get(c) or 0.0 for n in names]) for c in comps]
    metric = ranked[0].metric
    title = f"{metric} of {cmp.workload}: compute and GPUs waiting, by component"
    noise = [r.noise for r in ranked]
    return [
        "<h2>Cost of the work</h2>",
        img(plots.cost_stack(title, names, totals, parts, metric, noise), title),
    ]


def _net_charts(cmp: Comparison) -> list[str]:
    out: list[str] = []
    keys = sorted({k for runs in cmp.clusters.values() for s in runs for k in s.curves})
    for scope, op in keys:
        series, adv = [], []
        for n, runs in cmp.clusters.items():
            for s in runs:
                c = s.curves.get((scope, op))
                if c is not None:
                    label = f"{n}{'' if len(runs) == 1 else ' ' + s.run} ({c.ranks} ranks on {c.nodes} nodes)"
                    series.append(plots.Series(label=label, sizes=list(c.sizes), values=list(c.busbw)))
                    adv.append(s.advertised.get(f"{scope} network"))
        title = f"{scope} {op}: busbw vs message size, advertised dashed"
        out += [f"<h3>{esc(scope)} {esc(op)}</h3>", img(plots.sweeps_with_lines(title, series, adv), title)]
    return ["<h2>Network: busbw by size, each cluster against its advertised line</h2>", *out] if out else []


def _storage_chart(cmp: Comparison) -> list[str]:
    rows = [r for r in cmp.rows if r.kind == "storage" and any(c.value is not None for c in r.cells.values())]
    if not rows:
        return []
    names = list(cmp.clusters)
    title = "storage bandwidth per workload (like for like rows)"
    return [
        "<h2>Storage</h2>",
        img(
            plots.grouped_bars(
                title,
                [r.figure for r in rows],
                names,
                [[r.cells[n].value for n in names] for r in rows],
                [[r.cells[n].noise for n in names] for r in rows],
            ),
            title,
        ),
    ]


def render_html(cmp: Comparison) -> str:
    names = ", ".join(cmp.clusters)
    body = [
        f"<h1>stoker compare: {esc(names)}</h1>",
        f'<p class="muted">Workload: {esc(cmp.workload or "none")}</p>',
        bullets(cmp.headline),
    ]
    if cmp.ranking or cmp.not_ranked:
        body += ["<h2>Ranking</h2>", table(ranking_table(cmp))]
    for title, df in _cost_sections(cmp):
        body += [f"<h2>{esc(title)}</h2>", table(df)]
    body += _cost_chart(cmp)
    body += ["<h2>Why: where the GPUs wait, the verdict and what decides it</h2>", table(why_table(cmp))]
    body += ["<h2>Side by side</h2>", table(_plain(rows_table(cmp)))]
    if one_run_figures(cmp):
        body.append(f'<p class="muted">{esc(SPREAD_ADVICE)}</p>')
    body += _net_charts(cmp)
    body += _storage_chart(cmp)
    body += ["<h2>How to read it</h2>", bullets([*COMPARE_LEGEND, *LEGEND[:2]])]
    return html_page(f"stoker compare: {names}", body)


def _plain(df: pd.DataFrame) -> pd.DataFrame:
    return df.map(lambda v: str(v).replace(" **best**", " ★ best"))
