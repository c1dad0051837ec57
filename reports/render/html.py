"""report.html (pure): one self-contained file — inline CSS, plots embedded as base64 PNG,
no external URL — that can be mailed or attached to a ticket. Every string that comes from
records, specs or imported files goes through html.escape.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable, Sequence
from itertools import groupby

import pandas as pd

from reports.evidence.pairs import PairEvidence
from reports.evidence.storage import REAL_SAVE_BACKENDS
from reports.evidence.sweeps import Sweep, expected_for
from reports.render import figure_jobs, plots
from reports.render.markdown import (
    LEGEND,
    MAX_ROWS,
    ReportInput,
    findings_table,
    fnum,
    manifest_summary,
    model_table,
    plateau_line,
    rail_outliers,
    rows,
    storage_table,
    sweep_table,
    verdict_line,
)
from reports.render.paths import chart_labels, findings_notes, storage_notes
from reports.render.soak import section as soak_section
from reports.shared.findings import Judgement
from reports.shared.records import IO_WORKLOADS
from reports.shared.units import format_size

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em auto;max-width:1100px;
color:#1b1f24;line-height:1.4;padding:0 1em}
h1{font-size:1.6em}h2{border-bottom:1px solid #d0d7de;padding-bottom:.2em;margin-top:1.6em}h3{font-size:1.05em}
table{border-collapse:collapse;margin:.6em 0;font-size:.85em}th,td{border:1px solid #d0d7de;padding:3px 7px;
text-align:left;vertical-align:top}th{background:#f6f8fa}
.verdict{font-size:1.3em;padding:.5em .8em;border-radius:6px;display:inline-block}
.pass{background:#dafbe1;color:#116329}.fail{background:#ffebe9;color:#a40e26}
tr.below_spec td:first-child,tr.starving td:first-child,tr.regression td:first-child{color:#a40e26;font-weight:600}
tr.suspect td:first-child{color:#9a6700;font-weight:600}img{max-width:100%;display:block;margin:.5em 0}
.muted{color:#57606a;font-size:.9em}details{margin:.4em 0}
"""


def esc(x: object) -> str:
    return html.escape(str(x), quote=True)


def table(df: pd.DataFrame, row_class: Sequence[str] | None = None) -> str:
    head = "".join(f"<th>{esc(c)}</th>" for c in df.columns)
    body = []
    for i, row in enumerate(rows(df)):
        cls = f' class="{esc(row_class[i])}"' if row_class else ""
        body.append(f"<tr{cls}>" + "".join(f"<td>{esc(v)}</td>" for v in row) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def img(b64: str, alt: str) -> str:
    return f'<img alt="{esc(alt)}" src="data:image/png;base64,{b64}">'


def bullets(lines: Iterable[str]) -> str:
    return "<ul>" + "".join(f"<li>{esc(line.removeprefix('- '))}</li>" for line in lines) + "</ul>"


def _net(sws: Sequence[Sweep], ri: ReportInput, fig: figure_jobs.Deferred) -> list[str]:
    j = ri.judgement
    out = ["<h2>Network sweeps</h2>"]
    shown = [s for s in sws if s.scope not in ("pair", "groups")]
    if not shown:
        return [*out, "<p>No network records.</p>"]
    for scope, group in groupby(shown, key=lambda s: s.scope):
        items = list(group)
        # one advertised line per scope the curves show: a world sweep on one node is intra-node
        lines = {
            ("inter-node" if s.nodes > 1 else "intra-node") if scope == "world" else scope: adv
            for s in items
            if (adv := expected_for(scope, s.nodes, dict(j.expected)))
        }
        series = [plots.Series(label=s.label, sizes=list(s.sizes), values=list(s.busbw)) for s in items]
        out += [
            f"<h3>{esc(scope)}</h3>",
            img(
                fig(
                    plots.sweep_plot,
                    f"{scope}: busbw vs message size",
                    series,
                    sorted(lines.items()),
                    j.thresholds.network,
                ),
                f"{scope} busbw vs message size",
            ),
        ]
        for s in items:
            out += [
                f"<p>{esc(s.label)} — {esc(plateau_line(s, j.expected, j.thresholds).replace('**', ''))}</p>",
                f"<details><summary>table ({len(s.sizes)} sizes)</summary>{table(sweep_table(s))}</details>",
            ]
    return out


# which model part a storage workload feeds: its demand is drawn beside the bar
_DEMAND_PART = {"dataloader_read": "dataloader", "checkpoint_write": "checkpoint"}
assert set(_DEMAND_PART) <= set(IO_WORKLOADS)


def _storage(ri: ReportInput, fig: figure_jobs.Deferred) -> list[str]:
    io_all = ri.evidence.io_frame
    out = ["<h2>Storage</h2>"]
    if io_all.empty:
        return [*out, "<p>No storage records.</p>"]
    io = io_all[io_all["bytes"] > 0]  # pure metadata moves no bytes: its IOPS are in the table only
    spec_refs, demand = [], []
    for r in io.itertuples(index=False):
        comp = f"{r.scope} storage"
        spec_refs.append(
            None  # a torch.save / dcp bar is shown beside, "not compared" with the spec
            if r.backend in REAL_SAVE_BACKENDS
            else next(
                (
                    f.expected
                    for f in ri.judgement.findings
                    if f.component == comp
                    and f.extra.get("path") == r.path
                    and f.extra.get("workload") == r.workload
                    and f.extra.get("direction") == r.direction
                ),
                None,
            )
        )
        need = next(
            (
                m
                for m in ri.judgement.model
                if m.component == comp
                and m.required
                and m.unit.startswith("GB/s")
                and m.part == _DEMAND_PART.get(r.workload)
            ),
            None,
        )
        per_node = need is not None and "per node" in need.unit and r.scope == "shared"
        demand.append(
            None if need is None or need.required is None else need.required * (r.nodes if per_node else 1)
        )
    labels, key = chart_labels(
        [(r.workload, r.direction, r.path, r.backend, int(r.procs)) for r in io.itertuples(index=False)]
    )
    rest = [table(storage_table(io_all)), *(f"<p>{esc(n)}</p>" for n in storage_notes(io_all["path"]))]
    if io.empty:
        return [*out, *rest]
    out.append(
        img(
            fig(
                plots.bar_plot,
                "storage: achieved",  # bar_plot adds the references it draws
                labels,
                list(io["bw"]),
                [("spec", spec_refs), ("workload demand", demand)],
            ),
            "storage bandwidth against spec and demand",
        )
    )
    return [*out, *([f'<p class="muted">{esc(key)}</p>'] if key else []), *rest]


def localisation_figures(ph: pd.DataFrame, pe: PairEvidence) -> dict[str, figure_jobs.Job]:
    """The figures drawn from the evidence alone, by name: the per-host grids and the pair
    matrix (`stoker report` starts them before it judges: pipeline.build)."""
    out: dict[str, figure_jobs.Job] = {}
    if not ph.empty:
        grids = [
            (str(op), list(o["host"]), list(o["busbw"]))
            for op, part in ph.groupby("op", sort=True)
            for o in [part.sort_values("host", kind="stable")]
        ]
        size = format_size(int(ph["bytes"].max()))
        title = f"intra-node busbw per host at each op's largest size (up to {size})"
        out["hosts"] = (plots.host_grids, (title, grids))
    if pe.cells and pe.matrix.size:  # none over MAX_MATRIX_HOSTS (PairEvidence.matrix_note)
        title = f"pair busbw at the largest size ({len(pe.cells)} pairs, {len(pe.hosts)} hosts)"
        out["pairs"] = (plots.matrix_plot, (title, pe.hosts, pe.matrix))
    if pe.grid is not None:
        g = pe.grid
        title = f"best pair busbw per node and rail ({len(g.hosts)} hosts x {len(g.rails)} rails)"
        row, col = {h: i for i, h in enumerate(g.hosts)}, {r: j for j, r in enumerate(g.rails)}
        marked = [(row[c.host], col[c.rail]) for c in g.outliers]
        out["rails"] = (plots.rail_heatmap, (title, g.hosts, g.rails, g.shares(), marked))
    return out


def _hosts(ri: ReportInput, fig: figure_jobs.Deferred) -> list[str]:
    out = ["<h2>Localisation</h2>"]
    ph = ri.evidence.per_host
    figures = localisation_figures(ph, ri.evidence.pairs)
    if "hosts" in figures:
        fn, args = figures["hosts"]
        out.append(img(fig(fn, *args), args[0]))
    for op, part in ph.groupby("op", sort=True):
        out += [
            f"<details><summary>{esc(op)}: slowest {min(MAX_ROWS, len(part))} of {len(part)} hosts</summary>"
            + table(
                pd.DataFrame(
                    {
                        "host": part["host"].head(MAX_ROWS),
                        "busbw (GB/s)": [fnum(v) for v in part["busbw"].head(MAX_ROWS)],
                    }
                )
            )
            + "</details>",
        ]
    cells = ri.evidence.pairs.cells
    if cells:
        if "pairs" in figures:
            fn, args = figures["pairs"]
            out += [img(fig(fn, *args), args[0])]
        else:
            out += [f'<p class="muted">{esc(ri.evidence.pairs.matrix_note)}</p>']
        out += [
            table(
                pd.DataFrame(
                    [{"host A": a, "host B": b, "busbw (GB/s)": fnum(v)} for v, a, b in cells[:MAX_ROWS]]
                )
            )
        ]
    grid = ri.evidence.pairs.grid
    if grid is not None and "rails" in figures:
        fn, args = figures["rails"]
        out.append(img(fig(fn, *args), args[0]))
        line, rows = rail_outliers(grid, ri.racks)
        out += [f"<p>{esc(line)}</p>"] + ([] if rows is None else [table(rows)])
    if len(out) == 1:
        out.append("<p>No per-host or pair measurements.</p>")
    return out


def render(ri: ReportInput, draw: Callable[[Sequence[figure_jobs.Job]], list[str]] | None = None) -> str:
    """The page; its figures drawn by `draw` (figure_jobs.draw_all unless given: stoker report
    hands them to its figure process)."""
    j, ev = ri.judgement, ri.evidence
    verdict = verdict_line(j).replace("**", "")
    body = [
        f"<h1>stoker report: {esc(ri.title)}</h1>",
        f'<p class="verdict {_box(j)}">{esc(verdict)}</p>',
        f'<p class="muted">Run: {esc(j.run_id or "—")} · {len(ev.net)} network and {len(ev.io)} storage records · '
        f"spec: {esc(j.spec_name or 'none')} · workload: {esc(j.workload_name or 'none')}</p>",
    ]
    if ri.missing:
        body += ["<h2>Missing measurements</h2>", bullets(ri.missing)]
    if ri.not_covered:  # what a node-scope verdict did not cover
        body += ["<h2>Not covered (scope: node)</h2>", bullets(ri.not_covered)]
    body.append("<h2>Findings</h2>")
    if j.findings:
        ft = findings_table(j.findings)
        body.append(table(ft, list(ft["status"])))
        body += [f"<p>{esc(n)}</p>" for n in findings_notes(j.findings)]
    else:
        body.append(
            "<p>No findings: give --spec (or put spec.yaml in the results directory) so that measurements "
            "can be compared with advertised figures.</p>"
        )
    fig = figure_jobs.Deferred(draw=draw)  # drawn together when the page is built, on both cores
    body += _net(ev.sweeps, ri, fig)
    body += _storage(ri, fig)
    body += soak_section(ev.soak, ev.io, ev.counters, j.findings, j.expected, j.thresholds.network)
    if ev.host:
        from reports.render.inventory import host_link_table, port_table

        body += [
            "<h2>Node inventory</h2>",
            *[table(t) for t in (host_link_table(ev.host), port_table(ev.host)) if not t.empty],
        ]
    if j.model:
        body += [
            f"<h2>Starvation model: {esc(j.workload_name or 'workload')}</h2>",
            table(model_table(j.model)),
        ]
        body += [
            bullets(
                f"{k}: {fnum(v) if isinstance(v, float) else v}" for k, v in sorted(j.model_summary.items())
            )
        ]
    body += _hosts(ri, fig)
    if ri.imported or ri.import_notes:
        body += [
            "<h2>Imported results</h2>",
            bullets([*sorted(ri.imported), *[f"note: {n}" for n in ri.import_notes]]),
        ]
    if ev.skipped:
        body += [
            "<h2>Skipped lines</h2>",
            f"<p>{len(ev.skipped)} line(s) could not be read and were left out.</p>",
            table(
                pd.DataFrame(
                    [{"file": s.file, "line": s.line, "reason": s.reason} for s in ev.skipped[:MAX_ROWS]]
                )
            ),
        ]
    notes = [*ri.notes, *j.notes]
    if notes:
        body += ["<h2>Notes</h2>", bullets(notes)]
    body += [
        "<h2>Units and statistics</h2>",
        bullets(LEGEND),
        "<h2>Environment</h2>",
        bullets(manifest_summary(ev.manifests)),
    ]
    return fig.fill(html_page(f"stoker report: {ri.title}", body))


def html_page(title: str, body: Sequence[str]) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )


def _box(j: Judgement) -> str:
    """The verdict box's colour: green for pass, red for the rest, plain for a run on a machine
    without a GPU that nothing judged (its headline says what the figures are for: no alarm)."""
    if j.verdict == "pass":
        return "pass"
    return "cpu" if j.verdict == "unjudged" and j.cpu_path else "fail"
