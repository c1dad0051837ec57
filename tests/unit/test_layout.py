"""The package layout keeps one direction (docs/architecture.md): inside reports, the schema
-> table -> evidence -> judging -> render, with the cross-cluster comparison (fleet) a sibling
that may use them all; never back (render never imports judging), and no module of reports
imports itself in a circle (read from the source with ast, so a lazy import inside a function
counts too)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# the rooms of reports in their order: a module may import its own room and earlier ones.
# ingest (imports of other tools' output) sits beside the table: both turn files into records.
ROOMS = ("table", "ingest", "evidence", "judging", "render", "fleet")
# the shared schema every room (and netbench/iobench) may use
SHARED = {
    "reports",
    "reports.errors",
    "reports.records",
    "reports.ops",
    "reports.findings",
    "reports.units",
    "reports.manifest",
    "reports.outdir",
}


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def _graph(pkg: str) -> dict[str, set[str]]:
    mods = {_module(p): p for p in (ROOT / pkg).rglob("*.py")}
    return {m: {i for i in _imports(p) if i in mods and i != m} for m, p in mods.items()}


def _room(mod: str) -> str | None:
    parts = mod.split(".")
    return parts[1] if len(parts) >= 2 and parts[1] in ROOMS else None


def test_reports_has_no_import_cycle() -> None:
    graph = _graph("reports")
    state: dict[str, int] = {}

    def visit(m: str, stack: list[str]) -> None:
        state[m] = 1
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                raise AssertionError("import cycle: " + " -> ".join([*stack, m, n]))
            if n not in state:
                visit(n, [*stack, m])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [])


def test_rooms_depend_one_way() -> None:
    order = {r: i for i, r in enumerate(ROOMS)}
    bad = [
        (m, n)
        for m, deps in _graph("reports").items()
        for n in deps
        if _room(m) and _room(n) and order[_room(n)] > order[_room(m)]
    ]  # type: ignore[index]
    assert not bad, f"a room imports a later room: {bad}"


def test_measurement_imports_only_the_schema_from_reports() -> None:
    # netbench/iobench may use the record schema, plus three documented extras: the fio
    # parser (shared with `stoker import`), the pair statistics that choose the pairs to
    # measure again (the pairs scope's confirmation pass) and the groups search (the groups
    # scope runs the search that the report replays).
    allowed = SHARED | {
        "reports.fio_json",
        "reports.outliers",  # the confirmation pairs of each rail (the pairs scope, rail by rail)
        "reports.group_search",
        "reports.catalog",  # stoker compute sweeps the dtypes the catalog lists per accelerator
        "reports.spread",  # the median of repeated saves, with its samples, is the record written
        "reports.spec",  # stoker io --spec: a figure under its storage threshold is measured
        "reports.storage_rule",  # again, chosen by the report's own rule (storage_rule.to_confirm)
    }
    for pkg in ("netbench", "iobench"):
        for p in (ROOT / pkg).rglob("*.py"):
            used = {i for i in _imports(p) if i.startswith("reports")}
            extra = {i for i in used if i not in allowed and i.rsplit(".", 1)[0] not in allowed}
            assert not extra, f"{p.relative_to(ROOT)} imports {sorted(extra)}"


def test_render_reads_evidence_and_judgement_never_judging() -> None:
    graph = _graph("reports")
    bad = sorted(
        (m, n) for m, deps in graph.items() if _room(m) == "render" for n in deps if _room(n) == "judging"
    )
    assert not bad, f"render imports judging: {bad}"


def test_the_verdict_is_decided_in_one_place() -> None:
    # verdict_of is called by the judgement and nowhere else in reports (findings defines it)
    callers = sorted(
        _module(p)
        for p in (ROOT / "reports").rglob("*.py")
        if any(
            isinstance(n, ast.Call) and getattr(n.func, "id", getattr(n.func, "attr", "")) == "verdict_of"
            for n in ast.walk(ast.parse(p.read_text()))
        )
    )
    assert callers == ["reports.judging.judge"], callers


def test_the_schema_imports_no_room() -> None:
    graph = _graph("reports")
    bad = sorted((m, n) for m in SHARED if m in graph for n in graph[m] if _room(n))
    assert not bad, f"the schema imports a room: {bad}"


def test_judging_runs_no_tool() -> None:
    # judging is pure: hardware detection (nvidia-smi, sysfs) is IO on the measuring side
    # (netbench/inventory/hardware.py) and reaches the report only through the records
    for p in (ROOT / "reports" / "judging").rglob("*.py"):
        assert not {"subprocess", "shutil"} & _imports(p), f"{p.relative_to(ROOT)} runs tools"
