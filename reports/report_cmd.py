"""`stoker report DIR [--spec FILE] [--workload FILE]`: judge the records in DIR.

Reads net.jsonl, io.jsonl and manifest.jsonl, imports foreign results placed in DIR
(nccl-tests logs or -J JSON, fio JSON), judges them against the spec and the workload,
and writes DIR/report.md, DIR/report.html and DIR/verdict.json. Exit 0 when the verdict
is pass, 1 when it is fail, 2 on bad input (missing or empty DIR, malformed spec).

Without --spec / --workload, a `spec.yaml` / `workload.yaml` kept in DIR is used, so a
results directory carries what it should be judged against (`stoker compare` relies on it).
"""
from __future__ import annotations

import argparse
import importlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reports.errors import UsageError

HELP = "judge the records in DIR: report.md, report.html, verdict.json"
SPEC_FILES = ("spec.yaml", "spec.yml")
WORKLOAD_FILES = ("workload.yaml", "workload.yml")
_LOADERS = {"spec": ("reports.judging.spec", "load_spec"), "workload": ("reports.judging.workload", "load_workload")}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dir", metavar="DIR", help="results directory (net.jsonl, io.jsonl, nccl-tests/fio files)")
    parser.add_argument("--spec", metavar="FILE", help="cluster spec YAML: what the hardware is advertised to do")
    parser.add_argument("--workload", metavar="FILE", help="workload YAML or preset: what the accelerators will need")


def load_optional(kind: str, given: str | None, directory: Path) -> tuple[Any, list[str]]:
    """The spec or workload: the file given, else one kept in the results directory."""
    files = SPEC_FILES if kind == "spec" else WORKLOAD_FILES
    path = given or next((str(directory / f) for f in files if (directory / f).is_file()), None)
    if path is None:
        return None, []
    mod_name, fn = _LOADERS[kind]
    try:
        mod = importlib.import_module(mod_name)
    except ImportError:
        if given:
            raise UsageError(f"--{kind} is not supported by this stoker yet; run without it") from None
        return None, [f"{Path(path).name} in the results directory was not used: this stoker cannot read a {kind} yet"]
    loaded = getattr(mod, fn)(path)
    return loaded, ([] if given else [f"{kind} taken from {Path(path).name} in the results directory"])


def aborted_phases(directory: Path) -> list[dict[str, Any]]:
    """Phases of `stoker run` / the sbatch job that did not end cleanly (DIR/phases.jsonl,
    written by launchers): their measurements are missing or partial, and the report says so."""
    from reports.records import iter_jsonl

    path = directory / "phases.jsonl"
    if not path.is_file():
        return []
    return [obj for _, obj, _ in iter_jsonl(path) if obj is not None and obj.get("rc", 0) != 0]


def _phase_note(p: dict[str, Any]) -> str:
    why = "ran past its time limit" if p.get("rc") == 124 else f"ended with exit code {p.get('rc')}"
    return (f"phase {p.get('phase', '?')} {why} after {p.get('elapsed_s', '?')} s: its measurements are "
            "missing or partial; findings for it may be absent")


@dataclass(frozen=True, kw_only=True, slots=True)
class Outcome:
    verdict: dict[str, Any]
    markdown: str
    html: str


@dataclass(frozen=True, kw_only=True, slots=True)
class Collected:
    """One results directory read, imported and judged: what report and compare render."""

    report: Any          # render_md.ReportInput
    spec: Any            # reports.judging.spec.Spec or None
    verdict: dict[str, Any]


def collect(directory: Path, spec_arg: str | None = None, workload_arg: str | None = None) -> Collected:
    from reports.findings import verdict_json
    from reports.ingest.importers import import_dir
    from reports.judging.judge import judge
    from reports.records import read_records
    from reports.render.markdown import ReportInput
    from reports.judging.frames import net_frame

    if not directory.is_dir():
        raise UsageError(f"{directory}: no such results directory")
    rs = read_records(directory)
    imp = import_dir(directory, known_run_ids={r.run_id for r in (*rs.net, *rs.io)})
    rs.net += imp.net
    rs.io += imp.io
    rs.manifests += imp.manifests
    if not rs.net and not rs.io:
        skipped = f" ({len(rs.skipped)} unreadable lines)" if rs.skipped else ""
        raise UsageError(f"{directory}: no records{skipped} and no nccl-tests or fio output to import; "
                         "run `stoker run --out DIR` or `stoker import FILE --out DIR` first")
    spec, spec_notes = load_optional("spec", spec_arg, directory)
    workload, wl_notes = load_optional("workload", workload_arg, directory)
    aborted = aborted_phases(directory)
    j = judge(rs, spec, workload)
    title = j.spec_name or getattr(spec, "name", None) or directory.resolve().name
    ri = ReportInput(title=title, records=rs, judgement=j, imported=imp.sources, import_notes=imp.notes,
                     notes=[*spec_notes, *wl_notes], missing=[_phase_note(p) for p in aborted], net_df=net_frame(rs.net))
    verdict = verdict_json(j.run_id, j.findings, spec=j.spec_name, workload=j.workload_name,
                           records={"net": len(rs.net), "io": len(rs.io)}, skipped_lines=len(rs.skipped),
                           imported=sorted(imp.sources),
                           aborted_phases=[str(p.get("phase", "?")) for p in aborted])
    return Collected(report=ri, spec=spec, verdict=verdict)


def build(directory: Path, spec_arg: str | None = None, workload_arg: str | None = None) -> Outcome:
    """Everything `stoker report` writes, as strings."""
    from reports.render.html import render as render_html
    from reports.render.markdown import render as render_md

    c = collect(directory, spec_arg, workload_arg)
    return Outcome(verdict=c.verdict, markdown=render_md(c.report), html=render_html(c.report))


def main(args: argparse.Namespace) -> int:
    directory = Path(args.dir)
    out = build(directory, args.spec, args.workload)
    (directory / "report.md").write_text(out.markdown, encoding="utf-8")
    (directory / "report.html").write_text(out.html, encoding="utf-8")
    (directory / "verdict.json").write_text(json.dumps(out.verdict, indent=2) + "\n", encoding="utf-8")
    from reports.findings import FAILING

    bad = sum(1 for f in out.verdict["findings"] if f["status"] in FAILING)
    print(f"verdict: {out.verdict['verdict']} ({bad} finding{'s' if bad != 1 else ''} to act on) -> "
          f"{directory / 'report.md'}, report.html, verdict.json")
    return 0 if out.verdict["verdict"] == "pass" else 1
