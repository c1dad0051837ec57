"""The report pipeline: one results directory read, imported, turned into evidence, judged and
rendered — once — by the one path that `stoker report`, `stoker baseline` and `stoker compare`
share (collect), and everything `stoker report` writes as strings (build).

Reads net.jsonl, io.jsonl and manifest.jsonl, imports foreign results placed in DIR
(nccl-tests logs or -J JSON, fio JSON), and judges them against the spec and the workload.
Without a spec / workload given, a `spec.yaml` / `workload.yaml` kept in DIR is used, so a
results directory carries what it should be judged against (`stoker compare` relies on it).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reports.shared.errors import UsageError

if TYPE_CHECKING:  # pandas comes with them: `stoker report` starts its parse first (main)
    import pandas as pd

    from reports.evidence.pairs import PairEvidence
    from reports.judging.coverage import Scope
    from reports.render.figure_jobs import Job
    from reports.render.figure_process import FigureProcess
    from reports.render.markdown import ReportInput

SPEC_FILES = ("spec.yaml", "spec.yml")
WORKLOAD_FILES = ("workload.yaml", "workload.yml")
_LOADERS = {
    "spec": ("reports.shared.spec", "load_spec"),
    "workload": ("reports.judging.workload.workload", "load_workload"),
}


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
        return None, [
            f"{Path(path).name} in the results directory was not used: this stoker cannot read a {kind} yet"
        ]
    loaded = getattr(mod, fn)(path)
    return loaded, ([] if given else [f"{kind} taken from {Path(path).name} in the results directory"])


def read_phases(directory: Path) -> list[dict[str, Any]]:
    """How each phase of `stoker run` / the acceptance job ended (DIR/phases.jsonl, written by
    launchers; reports/shared/phases.py)."""
    from reports.shared.phases import read

    return read(directory)


def aborted_phases(directory: Path) -> list[dict[str, Any]]:
    """Phases that did not end cleanly: their measurements are missing or partial."""
    return [p for p in read_phases(directory) if p.get("rc", 0) != 0 and p.get("phase") != "report"]


# launcher chatter after a rank's own error: not the reason. slurmstepd names its node when
# a host runs several slurmd ("slurmstepd-n1: error: *** STEP 2.2 ON n1 CANCELLED ... ***")
_CHATTER = re.compile(r"(srun|slurmstepd(-\S+)?|timeout): ")


def last_error_line(directory: Path, p: dict[str, Any]) -> str:
    """The phase's last line of output that is not its launcher's chatter: `error` in the
    phase line (stoker run), or the last line of its `log` file in DIR (the sbatch job)."""
    text = str(p.get("error") or "")
    log = str(p.get("log") or "")
    if not text and log and "/" not in log and (directory / log).is_file():
        lines = [
            ln.strip() for ln in (directory / log).read_text(encoding="utf-8", errors="replace").splitlines()
        ]
        lines = [
            ln.split(": ", 1)[1] if ln[:1].isdigit() and ": " in ln else ln for ln in lines if ln
        ]  # srun -l labels
        text = next((ln for ln in reversed(lines) if not _CHATTER.match(ln)), lines[-1] if lines else "")
    return text[:300]


def unfinished_phases(
    directory: Path, phases: list[dict[str, Any]], last_soak_pass: int = 0
) -> list[tuple[str, str]]:
    """(phase, why) of each phase that started and never ended (reports/shared/phases.py)."""
    from reports.shared.phases import unfinished

    try:
        names = [p.name for p in directory.iterdir()]
    except OSError:
        names = []
    return unfinished(phases, names, last_soak_pass)


def missing_phases(
    directory: Path,
    phases: list[dict[str, Any]],
    net_scopes: set[str],
    io_count: int,
    ranks_per_node: float | None = None,
    last_soak_pass: int = 0,
) -> list[str]:
    """One line per phase that should have produced records and did not: it aborted, it
    started and never ended (no line: the launcher was killed), or it ended cleanly with none
    of its records (pure but for reading DIR's names and a phase's log). An intra-node phase
    with one rank per node (`ranks_per_node` 1, from the sweeps that crossed nodes) had
    nothing to measure: no missing phase (coverage says so)."""
    from reports.shared.phases import missing_records

    out = []
    for p in phases:
        name = str(p.get("phase", "?"))
        rc = p.get("rc", 0)
        if name == "report":
            continue  # an earlier report (stoker run records it): it measures nothing
        if rc != 0:
            why = "ran past its time limit" if rc == 124 else f"ended with exit code {rc}"
            err = last_error_line(directory, p)
            out.append(f"phase {name} {why} after {p.get('elapsed_s', '?')} s" + (f": {err}" if err else ""))
        elif p.get("skipped") or (name == "intra-node" and ranks_per_node == 1):
            continue  # left out on purpose (stoker run --skip), or nothing to measure: coverage names it
        elif name == "compute" and not (directory / "compute.jsonl").is_file():
            out.append(f"phase {name} ended cleanly but wrote no compute records")
        elif lacks := missing_records(
            name, net_scopes, io_count
        ):  # reports/shared/phases.py says what each yields
            out.append(f"phase {name} ended cleanly but {lacks}")
    return out + [why for _, why in unfinished_phases(directory, phases, last_soak_pass)]


def record_inputs() -> tuple[str, ...]:
    """The files of stoker's own in DIR a verdict is judged from: the records, the phase and
    the set-aside lines."""
    from reports.shared import records
    from reports.shared.phases import PHASES_FILE
    from reports.shared.setaside import SETASIDE_FILE

    return (
        *(records.NET_FILE, records.IO_FILE, records.HOST_FILE, records.COUNTER_FILE),
        *(records.COMPUTE_FILE, records.MANIFEST_FILE, PHASES_FILE, SETASIDE_FILE),
    )


def input_digests(directory: Path, imported: Sequence[str]) -> dict[str, str]:
    """{file: SHA-256} of every file in DIR a verdict is judged from (record_inputs) and the
    foreign files imported. `stoker drain` acts on a verdict only while each is present and
    unchanged (launchers/commands/drain_cmd.py)."""
    from reports.shared.phases import PHASES_FILE
    from reports.shared.safe_write import file_sha256

    out = {}
    for name in (*record_inputs(), *imported):
        if "/" in name:
            continue
        digest = _phases_digest(directory / name) if name == PHASES_FILE else file_sha256(directory / name)
        if digest is not None:
            out[name] = digest
    return out


def _phases_digest(path: Path) -> str | None:
    """The SHA-256 of the phase lines but the report's own: `stoker run`, `stoker soak` and
    the acceptance job record the report phase after it wrote verdict.json, and that line
    changes nothing the verdict was judged from (missing_phases passes over it)."""
    import hashlib
    import json

    from reports.shared.safe_write import file_sha256

    if file_sha256(path) is None:  # not a regular file
        return None
    h = hashlib.sha256()
    for line in path.read_bytes().splitlines(keepends=True):
        try:
            doc = json.loads(line)
        except ValueError:
            doc = None
        if not (isinstance(doc, dict) and doc.get("phase") == "report"):
            h.update(line)
    return h.hexdigest()


def _io_hosts(rec: Any) -> set[str]:
    return {*rec.hosts, *rec.per_host_bw_GBps}


def host_origins(rs: Any, imp: Any) -> tuple[list[str], list[str], list[str]]:
    """(measured hosts, imported hosts, import sources) of a results dir, read before the
    imports are merged (pure): a host named by an imported file, whether `stoker report`
    imported it now or `stoker import` wrote it into the records (its records and manifest
    carry `source`), is imported; the hosts of stoker's own records are measured. A host
    named by both is imported: an action never rests on a foreign file."""
    from reports.table.read import NetTable, hosts_in

    sources: set[str] = set(imp.sources)
    imported: set[str] = set()
    for m in [*rs.manifests, *imp.manifests]:
        if m.get("source") is not None:
            sources.add(str(m["source"]))
            imported |= {str(h) for h in m.get("hosts") or ()} | {str(m.get("host") or "")}
    own: set[str] = hosts_in(rs.net.frame) if len(rs.net) else set()
    for r in rs.io:
        if r.extra.get("source") is None:
            own |= _io_hosts(r)
        else:
            sources.add(str(r.extra["source"]))
            imported |= _io_hosts(r)
    for r in imp.io:
        imported |= _io_hosts(r)
    if imp.net:
        imported |= hosts_in(NetTable.of(imp.net).frame)
    for rec in [*rs.host, *rs.compute, *rs.counters]:
        if isinstance(rec.get("host"), str):
            own.add(rec["host"])
    imported.discard("")
    sources.discard("")
    return sorted(own - imported), sorted(imported), sorted(sources)


@dataclass(frozen=True, kw_only=True, slots=True)
class Outcome:
    verdict: dict[str, Any]
    markdown: str
    html: str


@dataclass(frozen=True, kw_only=True, slots=True)
class Collected:
    """One results directory read, imported, turned into evidence and judged — once — by the
    one pipeline `stoker report` and `stoker compare` share."""

    report: ReportInput
    spec: Any  # reports.shared.spec.Spec or None
    workload: Any  # reports.judging.workload.Workload or None
    verdict: dict[str, Any]


def collect(
    directory: Path,
    spec_arg: str | None = None,
    workload_arg: str | None = None,
    scope: Scope = "cluster",
    runs: str | None = None,
    baseline_arg: str | None = None,
    localised: Callable[[pd.DataFrame, PairEvidence], None] | None = None,
) -> Collected:
    """`localised` is called with the per-host figures and the pair evidence as soon as they
    are computed (stoker report starts drawing their figures then: reports.evidence.build)."""
    from reports import evidence
    from reports.evidence.soak import soak_pass
    from reports.ingest.importers import import_dir
    from reports.judging.judge import judge
    from reports.render.markdown import ReportInput
    from reports.shared import plausible
    from reports.shared.findings import verdict_json
    from reports.table.read import read_records

    if not directory.is_dir():
        raise UsageError(f"{directory}: no such results directory")
    rs = read_records(directory)
    known = set(rs.run_ids())
    imp = import_dir(directory, known_run_ids=known)
    # one run unless --runs names more; imported figures through the range check (plausible.py)
    from reports.shared.records import to_dict
    from reports.shared.runs import check_runs, keep_runs, parse_runs
    from reports.table.read import SkippedLine

    measured_hosts, imported_hosts, import_sources = host_origins(rs, imp)
    wanted = parse_runs(runs)
    check_runs(directory, known, wanted)
    keep_runs(rs, wanted)
    spec, spec_notes = load_optional("spec", spec_arg, directory)
    from reports.ingest.nccl_records import place_on_nodes

    imp.net = place_on_nodes(imp.net, spec.gpus_per_node if spec else None)  # a table pasted alone
    for kind in ("net", "io"):
        kept, refused = plausible.screen(getattr(imp, kind), "imported", to_dict)
        setattr(imp, kind, kept)
        rs.skipped += [SkippedLine(file=f, line=n, reason=why) for f, n, why in refused]
    rs.net.extend(imp.net)
    rs.io += imp.io
    rs.manifests += imp.manifests
    from reports.ingest.nccl_debug_files import read_debug_dir

    rs.manifests += read_debug_dir(directory)  # NCCL's account of stoker's own GPU runs
    told = any("nccl_debug" in m for m in rs.manifests)  # NCCL's own account, judged alone too
    if not len(rs.net) and not rs.io and not rs.host and not rs.compute and not told:
        first = rs.skipped[0] if rs.skipped else None
        unread = (
            f" ({len(rs.skipped)} unreadable lines; first {first.file}:{first.line}: {first.reason})"
            if first
            else ""
        )
        raise UsageError(
            f"{directory}: no records{unread} and no nccl-tests or fio output to import; "
            "run `stoker run --out DIR` or `stoker import FILE --out DIR` first"
        )
    workload, wl_notes = load_optional("workload", workload_arg, directory)
    ev = evidence.build(rs, localised)
    phases = read_phases(directory)
    last_pass = max((soak_pass(r) or 0 for r in ev.soak), default=0)
    missing = missing_phases(directory, phases, ev.net_scopes, len(ev.io), ev.ranks_per_node, last_pass)
    missing += plausible.not_judged(rs.skipped)  # a suspect figure never softens a fail
    missing += plausible.unread_schema(rs.skipped)  # a newer stoker's records: not judged, not passed
    skipped = {str(p.get("phase")) for p in phases if p.get("skipped")}
    from reports.judging.fleet.baseline_file import load as load_baseline

    baseline = load_baseline(baseline_arg) if baseline_arg else None
    from reports.shared import setaside

    aside_read, aside_bad = setaside.read_all(directory)  # DIR/setaside.jsonl: the job's preflight
    aside = setaside.findings(aside_read, setaside.logs_in(directory, aside_read))
    missing += aside_bad  # a line that names no node cannot pass: incomplete, the line named
    j = judge(ev, spec, workload, missing, scope=scope, skipped=skipped, baseline=baseline, set_aside=aside)
    title = j.spec_name or getattr(spec, "name", None) or directory.resolve().name
    ri = ReportInput(
        title=title,
        evidence=ev,
        judgement=j,
        imported=imp.sources,
        import_notes=imp.notes,
        notes=[*spec_notes, *wl_notes],
        racks=spec.racks if spec else {},
    )
    verdict = verdict_json(
        j,
        spec=j.spec_name,
        workload=j.workload_name,
        records=ev.counts,
        skipped_lines=len(ev.skipped),
        imported=import_sources,
        imported_hosts=imported_hosts,
        measured_hosts=measured_hosts,
        inputs=input_digests(directory, imp.sources),
        aborted_phases=[str(p.get("phase", "?")) for p in aborted_phases(directory)]
        + [name for name, _ in unfinished_phases(directory, phases, last_pass)],
        missing_phases=j.missing_phases,
    )
    return Collected(report=ri, spec=spec, workload=workload, verdict=verdict)


def build(
    directory: Path,
    spec_arg: str | None = None,
    workload_arg: str | None = None,
    scope: Scope = "cluster",
    runs: str | None = None,
    baseline_arg: str | None = None,
    figures: FigureProcess | None = None,
) -> Outcome:
    """Everything `stoker report` writes, as strings; report.html's figures drawn by `figures`
    when given (main's figure process), else here."""
    from reports.render.html import localisation_figures
    from reports.render.html import render as render_html
    from reports.render.markdown import render as render_md

    def start(per_host: pd.DataFrame, pairs: PairEvidence) -> None:  # drawn while the rest is built
        if figures is not None:
            figures.start(list(localisation_figures(per_host, pairs).values()))

    c = collect(directory, spec_arg, workload_arg, scope, runs, baseline_arg, start)
    md: list[str] = []

    def draw(jobs: Sequence[Job]) -> list[str]:  # the markdown is written while the figures are drawn
        assert figures is not None
        return figures.draw(jobs, meanwhile=lambda: md.append(render_md(c.report)))

    html = render_html(c.report, draw if figures else None)
    return Outcome(verdict=c.verdict, markdown=md[0] if md else render_md(c.report), html=html)
