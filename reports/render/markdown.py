"""report.md (pure): the verdict and what to act on first, then the evidence, then the
legend and the environment. Deterministic: the same records give the same bytes (no
generation time, sorted everything), so golden files can pin it down.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from reports.evidence import Evidence
from reports.evidence.rail_grid import RailGrid
from reports.evidence.sweeps import Sweep, expected_for
from reports.render.paths import finding_message, findings_notes, scratch_names, storage_notes
from reports.render.stragglers import straggler_lines
from reports.shared import setaside
from reports.shared.findings import FAILING, STATUSES, Finding, Judgement, Thresholds
from reports.shared.group_search import SearchResult
from reports.shared.manifest import allowlisted_env
from reports.shared.outliers import DEFAULT_MIN_GAP
from reports.shared.units import format_size

MAX_ROWS = 20  # host / pair / skipped-line tables show the worst rows, then a summary
MAX_NAMES = 6  # host names listed in one cell
# the order findings are listed in, derived from the statuses: every failing status first (in
# FAILING's order), then the rest from the least settled to ok (suspect, no_reference, ok)
STATUS_ORDER: dict[str, int] = {
    s: i for i, s in enumerate((*FAILING, *reversed([s for s in STATUSES if s not in FAILING])))
}
assert set(STATUS_ORDER) == set(STATUSES)

LEGEND = (
    "- GB/s = 10^9 bytes per second; sizes (K, M, G) are powers of 1024, as nccl-tests prints them.",
    "- busbw (bus bandwidth) = algbw × the nccl-tests bus factor of the op (all_reduce 2(n−1)/n; all_gather, "
    "reduce_scatter, alltoall (n−1)/n; broadcast, reduce, sendrecv 1). It is unidirectional and comparable "
    "with the per-GPU advertised link rate, whatever the number of ranks.",
    "- algbw = size / time. size is the nccl-tests size column (bytes per rank buffer as nccl-tests defines it per op).",
    "- time = mean over ranks of the time of one operation in back-to-back iterations (like nccl-tests `-a 1`); "
    "a sweep row shows the median over the groups of its scope and the slowest group beside it.",
    "- plateau = the best per-size median busbw among the three largest sizes (the size is named); small messages "
    "measure latency, not bandwidth. Results with wrong elements carry no bandwidth.",
    "- storage bw = aggregate over all processes and nodes in the common window; p50/p99 are completion latencies.",
    "- Status: ok; below_spec = under the threshold share of the advertised figure; starving = the workload needs "
    "more than was achieved, beyond its idle budget; no_reference = nothing to compare with (never a guess); "
    "suspect = above what the hardware can physically do (cache, wrong spec).",
)


@dataclass(frozen=True, kw_only=True, slots=True)
class ReportInput:
    """Everything a report is made from (evidence and the judgement of it, each computed
    once by pipeline.collect); rendered by md and html, which judge nothing."""

    title: str
    evidence: Evidence
    judgement: Judgement
    imported: Sequence[str] = ()  # files imported from the results directory
    import_notes: Sequence[str] = ()
    notes: Sequence[str] = ()  # e.g. spec/workload not supported yet
    racks: Mapping[str, str] = field(default_factory=dict)  # host -> rack or leaf (the spec's `racks`)

    @property
    def missing(self) -> list[str]:  # phases that aborted, promises unmeasured: what this report lacks
        return self.judgement.missing

    @property
    def not_covered(self) -> list[str]:  # promises outside the scope under test (coverage)
        return self.judgement.not_covered


def fnum(x: Any, digits: int = 2) -> str:
    if x is None or (isinstance(x, float) and x != x):
        return "—"
    if isinstance(x, (int, float)):
        return f"{x:,.{digits}f}" if abs(x) >= 1000 else f"{x:.{digits}f}"
    return str(x)


def fsig(x: Any) -> str:
    """Three significant digits: latencies span microseconds to seconds."""
    return fnum(x) if not isinstance(x, (int, float)) or x != x else f"{x:.3g}"


def names(hosts: Iterable[str], limit: int = MAX_NAMES) -> str:
    hs = sorted(hosts)
    return ", ".join(hs) if len(hs) <= limit else ", ".join(hs[:limit]) + f" (+{len(hs) - limit} more)"


def md_text(v: Any) -> str:
    """Text from records, specs or imported files as it goes into report.md: HTML's special
    characters as entities (a Markdown viewer passes raw HTML through: a host or file name
    holding `<img onerror=...>` must show, not run) and line breaks as spaces (a name holding
    "\n# " must not start a heading or a list item of its own)."""
    text = str(v).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text.replace("\r", " ").replace("\n", " ")


def _cell(v: Any) -> str:
    return md_text(v).replace("|", "\\|")


def _items(lines: Iterable[Any]) -> list[str]:
    return [f"- {md_text(x)}" for x in lines]


def rows(df: pd.DataFrame) -> list[list[Any]]:
    """The rows' values as Python objects (what itertuples yields, without a namedtuple and a
    Series lookup per cell: a 1,000-node report renders ~70 tables twice)."""
    return df.to_numpy(dtype=object).tolist()


def md_table(df: pd.DataFrame) -> str:
    head = "| " + " | ".join(_cell(c) for c in df.columns) + " |"
    sep = "| " + " | ".join("---" for _ in df.columns) + " |"
    body = ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows(df)]
    return "\n".join([head, sep, *body])


def sorted_findings(findings: Sequence[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (STATUS_ORDER[f.status], f.component, f.check))


def _measured(f: Finding) -> str:
    """The figure judged; a figure measured again shows both, the first and the confirmation."""
    first, again = f.extra.get("first_GBps"), f.extra.get("confirm_GBps")
    if isinstance(first, int | float) and isinstance(again, int | float):
        return f"{fnum(first)} first, {fnum(again)} again"
    return fnum(f.measured)


def findings_table(findings: Sequence[Finding]) -> pd.DataFrame:
    """The findings, worst first; a scratch dir is named short in each row and once under the
    table (reports/render/paths.py findings_notes)."""
    scratch = scratch_names(str(f.extra.get("path", "")) for f in findings)
    rows = [
        {
            "status": f.status,
            "component": f.component,
            "check": f.check,
            "measured": _measured(f),
            "expected": fnum(f.expected),
            "unit": f.unit,
            "hosts": names(f.hosts),
            "what to do": finding_message(f, scratch),
        }
        for f in sorted_findings(findings)
    ]
    return pd.DataFrame(
        rows, columns=["status", "component", "check", "measured", "expected", "unit", "hosts", "what to do"]
    )


def verdict_line(judgement: Judgement) -> str:
    word, _, rest = judgement.headline.partition(" — ")
    return f"**Verdict: {word}** — {rest}"


def sweep_table(s: Sweep) -> pd.DataFrame:
    cols = {
        "size": [format_size(b) for b in s.sizes],
        "time (us)": [fnum(v) for v in s.time_us],
        "algbw (GB/s)": [fnum(v) for v in s.algbw],
        "busbw (GB/s)": [fnum(v) for v in s.busbw],
    }
    if s.groups > 1:
        cols["slowest group busbw"] = [fnum(v) for v in s.busbw_min]
        cols["groups"] = [str(v) for v in s.groups_per_size]
    if sum(s.wrong):
        cols["wrong"] = [str(v) for v in s.wrong]
    return pd.DataFrame(cols)  # one frame built whole: adding columns one by one cost more


def plateau_line(s: Sweep, expected: Mapping[str, float], thresholds: Thresholds) -> str:
    size, bw = s.plateau()
    if s.ranks < 2:  # nccl-tests on one GPU: the same; bus bandwidth needs a second rank
        return "One rank crosses no link: busbw is 0 by definition and the sweep is not judged."
    line = f"Plateau: **{fnum(bw)} GB/s** busbw at {format_size(size)}"
    adv = expected_for(s.scope, s.nodes, dict(expected))
    if adv:
        share = thresholds.network
        line += f" = {bw / adv:.0%} of the advertised {fnum(adv)} GB/s (threshold {share:.0%})"
    return line + "."


def _net_section(sws: Sequence[Sweep], j: Judgement) -> list[str]:
    out = ["## Network sweeps", ""]
    if not sws:
        return [*out, "No network records.", ""]
    for s in sws:
        if s.scope in ("pair", "groups"):
            continue  # pairs are many small groups: summarised under localisation
        out += [
            f"### {s.scope} · {md_text(s.label)}",
            "",
            plateau_line(s, j.expected, j.thresholds),
            "",
            md_table(sweep_table(s)),
            "",
        ]
    return out


def storage_table(io: pd.DataFrame) -> pd.DataFrame:
    """One row per storage record; a scratch dir is named short (reports/render/paths.py storage_notes)."""
    scratch = scratch_names(io["path"]) if not io.empty else {}
    rows = []
    for r in io.itertuples(index=False):
        note = "FAILED: " + r.failed if r.failed else ("page cache suspected" if r.cache_suspect else "")
        note = "; ".join(n for n in (getattr(r, "aside", ""), note) if n)  # "median of 3, 1.2–1.6 GB/s"
        rows.append(
            {
                "workload": r.workload + (f" ({r.op})" if r.op else ""),
                "direction": r.direction,
                "path": scratch.get(r.path, r.path),
                "scope": r.scope,
                "tool": r.backend,
                "block": format_size(r.block) if r.block else "—",
                "procs": str(r.procs),
                "bw (GB/s)": fnum(r.bw),
                "IOPS": fnum(r.iops, 0),
                "p50 (ms)": fsig(r.p50_ms),
                "p99 (ms)": fsig(r.p99_ms),
                "note": note,
            }
        )
    return pd.DataFrame(rows)


def model_table(model: Sequence[Any]) -> pd.DataFrame:
    rows = [
        {
            "component": m.component,
            "check": m.check,
            "required": fnum(m.required),
            "achieved": fnum(m.achieved),
            "unit": m.unit,
            "idle share": f"{m.idle_share:.1%}",
            "$ per day": fnum(m.usd_per_day, 0),
            "status": m.status,
        }
        for m in model
    ]
    return pd.DataFrame(rows)


def _kv(d: Mapping[str, Any]) -> list[str]:
    return _items(f"{k}: {fnum(v) if isinstance(v, float) else v}" for k, v in sorted(d.items()))


def _localisation(ev: Evidence, racks: Mapping[str, str] | None = None) -> list[str]:
    out = ["## Localisation", ""]
    hosts = ev.per_host
    if not hosts.empty:
        for op, part in hosts.groupby("op", sort=True):
            bw = part["busbw"]
            out += [
                f"Intra-node {op} busbw per host at {format_size(int(part['bytes'].max()))}: {len(part)} hosts, "
                f"min {fnum(bw.min())}, median {fnum(bw.median())}, max {fnum(bw.max())} GB/s. Slowest first:",
                "",
            ]
            top = part.head(MAX_ROWS)
            out += [
                md_table(
                    pd.DataFrame({"host": top["host"], "busbw (GB/s)": [fnum(v) for v in top["busbw"]]})
                ),
                "",
            ]
    cells = ev.pairs.cells
    if cells:
        out += [
            f"Pair busbw (largest size): {len(cells)} pairs among {len(ev.pairs.hosts)} hosts. Slowest first:",
            "",
        ]
        out += [ev.pairs.matrix_note, ""] if ev.pairs.matrix_note else []
        out += [
            md_table(
                pd.DataFrame(
                    [{"host A": a, "host B": b, "busbw (GB/s)": fnum(v)} for v, a, b in cells[:MAX_ROWS]]
                )
            ),
            "",
        ]
    out += rail_outlier_lines(ev.pairs.grid, racks)
    out += groups_search_lines(ev.search)
    if len(out) == 2:
        out += ["No per-host or pair measurements.", ""]
    return out


def rail_outliers(grid: RailGrid, racks: Mapping[str, str] | None = None) -> tuple[str, pd.DataFrame | None]:
    """The node x rail outliers: which node and which rail stand out, furthest under their
    rail's fleet median first, with each host's rack where the spec names it: (the line that
    says so, the table; None when none stands out)."""
    racks = racks or {}
    head = (
        f"Node x rail: {len(grid.hosts)} hosts on {len(grid.rails)} rails, each cell the host's best pair busbw "
        f"on that rail against the rail's fleet median"
    )
    if not grid.outliers:
        return f"{head}: no cell under {1 - DEFAULT_MIN_GAP:.0%} of its rail's median.", None
    rows = pd.DataFrame(
        [
            {
                "host": c.host,
                **({"rack": racks.get(c.host, "-")} if racks else {}),
                "rail": c.rail,
                "busbw (GB/s)": fnum(c.busbw),
                "rail median (GB/s)": fnum(c.median),
                "share": f"{c.share:.0%}",
            }
            for c in grid.outliers
        ]
    )
    line = f"{head}; cells under {1 - DEFAULT_MIN_GAP:.0%} of it, furthest under first"
    named = [racks[c.host] for c in grid.outliers if c.host in racks]
    if named:
        hosts: dict[str, set[str]] = {}
        for c in grid.outliers:
            if c.host in racks:
                hosts.setdefault(racks[c.host], set()).add(c.host)
        by_rack = Counter(named).most_common()
        line += (
            " (by rack: "
            + "; ".join(
                f"{r} {n} cell{'s' if n > 1 else ''} on {len(hosts[r])} host{'s' if len(hosts[r]) > 1 else ''}"
                for r, n in by_rack
            )
            + ")"
        )
    return line + ":", rows


def rail_outlier_lines(grid: RailGrid | None, racks: Mapping[str, str] | None = None) -> list[str]:
    if grid is None:
        return []
    line, rows = rail_outliers(grid, racks)
    return [line, ""] + ([] if rows is None else [md_table(rows), ""])


def groups_search_lines(res: SearchResult | None) -> list[str]:
    """The groups search replayed on its records: what each round measured and what it named."""
    if res is None:
        return []
    named = [*res.culprits, *(f"{a}–{b} (link)" for a, b in res.links)]
    rows = [
        {
            "round": k,
            "groups": len(rnd),
            "slowest group": ", ".join(g),
            "its busbw (GB/s)": fnum(v),
            "fastest (GB/s)": fnum(max(x for _, x in rnd)),
        }
        for k, rnd in enumerate(res.history)
        for g, v in [min(rnd, key=lambda gv: gv[1])]
    ]
    return [
        f"Groups search (`--scopes groups`): {res.rounds} rounds over {len({h for rnd in res.history for g, _ in rnd for h in g})} nodes, "
        f"reference {fnum(res.reference)} GB/s; slow: {', '.join(named) or 'none'}.",
        "",
        md_table(pd.DataFrame(rows)),
        "",
    ]


def manifest_summary(manifests: Sequence[Mapping[str, Any]]) -> list[str]:
    """Distinct values with how many hosts reported each: 1,000 hosts fit in a few lines."""
    if not manifests:
        return ["No manifest (imported results carry only what their logs say)."]
    hosts = sorted({str(m.get("host", "?")) for m in manifests})
    tools = sorted({str(m.get("tool", "?")) for m in manifests})
    out = [f"- tools: {', '.join(tools)}", f"- hosts ({len(hosts)}): {names(hosts, 12)}"]
    seen: dict[str, Counter[str]] = {}
    for m in manifests:
        for key in ("python", "platform"):
            if key in m:
                seen.setdefault(key, Counter())[str(m[key])] += 1
        for k, v in (m.get("versions") or {}).items():
            seen.setdefault(f"version {k}", Counter())[str(v)] += 1
        for d in m.get("devices") or []:
            desc = (
                d
                if not isinstance(d, Mapping)
                else d.get("name")
                or d.get("model")
                or ", ".join(f"{k}={v}" for k, v in sorted(d.items()) if k not in ("host", "rank", "index"))
            )
            seen.setdefault("devices", Counter())[str(desc)] += 1
        for k, v in allowlisted_env(m.get("env") or {}).items():  # again: a manifest may come from elsewhere
            seen.setdefault(f"env {k}", Counter())[v] += 1
    for key in sorted(seen):
        vals = "; ".join(f"{v} (×{n})" if n > 1 else v for v, n in sorted(seen[key].items()))
        out.append(f"- {key}: {vals}")
    return out


def render(ri: ReportInput) -> str:
    j, ev = ri.judgement, ri.evidence
    # an incomplete report says on its first line which phase is missing and why
    first = f" — INCOMPLETE: {ri.missing[0]}" if j.verdict == "incomplete" and ri.missing else ""
    lines = [f"# stoker report: {md_text(ri.title)}{md_text(first)}", "", md_text(verdict_line(j)), ""]
    for headline in setaside.headlines(j.findings):  # nodes left out: said before anything else is read
        lines += [md_text(headline), ""]
    lines += [
        f"Run: {j.run_id or '—'} · {len(ev.net)} network and {len(ev.io)} storage records"
        f" · spec: {j.spec_name or 'none'} · workload: {j.workload_name or 'none'}",
        "",
    ]
    if ri.missing:
        lines += ["## Missing measurements", "", *_items(ri.missing), ""]
    if ri.not_covered:  # what a node-scope verdict did not cover
        lines += ["## Not covered (scope: node)", "", *_items(ri.not_covered), ""]
    lines += ["## Findings", ""]
    lines += [
        md_table(findings_table(j.findings))
        if j.findings
        else "No findings: give `--spec` (or put `spec.yaml` in the results directory) so that measurements can "
        "be compared with advertised figures.",
        "",
    ]
    notes = findings_notes(j.findings)
    lines += [*(md_text(n) for n in notes), ""] if notes else []
    lines += _net_section(ev.sweeps, j)
    io = ev.io_frame
    lines += ["## Storage", "", md_table(storage_table(io)) if not io.empty else "No storage records.", ""]
    notes = storage_notes(io["path"]) if not io.empty else []
    lines += [*(md_text(n) for n in notes), ""] if notes else []
    if ev.host:
        from reports.render.inventory import host_link_table, port_table

        lines += ["## Node inventory", ""]
        lines += [md_table(t) + "\n" for t in (host_link_table(ev.host), port_table(ev.host)) if not t.empty]
    if j.model:
        lines += [
            f"## Starvation model: {j.workload_name or 'workload'}",
            "",
            md_table(model_table(j.model)),
            "",
        ]
        lines += [*_kv(j.model_summary), ""] if j.model_summary else []
    lines += _localisation(ev, ri.racks)
    lines += straggler_lines(ev.stragglers)
    if ri.imported or ri.import_notes:
        lines += [
            "## Imported results",
            "",
            *_items(sorted(ri.imported)),
            *_items(f"note: {n}" for n in ri.import_notes),
            "",
        ]
    if ev.skipped:
        lines += [
            "## Skipped lines",
            "",
            f"{len(ev.skipped)} line(s) could not be read and were left out:",
            "",
        ]
        lines += [
            md_table(
                pd.DataFrame(
                    [{"file": s.file, "line": str(s.line), "reason": s.reason} for s in ev.skipped[:MAX_ROWS]]
                )
            )
        ]
        lines += ["", f"(+{len(ev.skipped) - MAX_ROWS} more)"] if len(ev.skipped) > MAX_ROWS else []
        lines += [""]
    notes = [*ri.notes, *j.notes]
    if notes:
        lines += ["## Notes", "", *_items(notes), ""]
    lines += ["## Units and statistics", "", *LEGEND, ""]
    lines += ["## Environment", "", *(md_text(x) for x in manifest_summary(ev.manifests)), ""]
    return "\n".join(lines)
