"""Each closed vocabulary is declared once and everything else is derived from it: no module
spells out a copy (read from the source with ast), the CLIs take what the declaration says, and
the five statements of the net record schema (NetRecord, records.NET_FIGURES, plausible's type
sets, table_parse.required_schema, table_frame.FRAME_COLUMNS) agree field by field."""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

import pytest

from reports.shared import plausible, records
from reports.shared.records import IoRecord, NetRecord

ROOT = Path(__file__).resolve().parents[2]
TREES = ("netbench", "iobench", "launchers", "reports", "benchmarks")

# each vocabulary (as a set: a copy in another order is a copy) and the one module declaring it
DECLARED = {
    frozenset({"nccl", "gloo", "mpi"}): "reports/shared/records.py",
    frozenset({"auto", "nccl", "gloo", "mpi"}): "reports/shared/records.py",
    frozenset({"cluster", "node"}): "reports/shared/findings.py",
    frozenset({"checkpoint", "dataloader", "metadata"}): "reports/shared/records.py",
    frozenset({"world", "intra-node", "inter-node", "pair", "groups"}): "reports/shared/records.py",
    frozenset({"world", "intra-node", "inter-node", "pairs", "groups"}): "reports/shared/records.py",
    frozenset({"world", "intra-node", "inter-node", "pair"}): "reports/shared/records.py",
    frozenset({"slurm", "k8s", "skypilot", "dstack"}): "launchers/cloud/cloudjob.py",
    frozenset(
        {"checkpoint_write", "checkpoint_read", "dataloader_read", "metadata"}
    ): "reports/shared/records.py",
}


def _sources() -> list[Path]:
    return sorted(p for t in TREES for p in (ROOT / t).rglob("*.py"))


def _literal_sets(path: Path) -> list[tuple[int, frozenset[str]]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and len(node.elts) >= 2:
            if all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
                out.append((node.lineno, frozenset(e.value for e in node.elts)))  # type: ignore[attr-defined]
    return out


def test_each_vocabulary_is_spelled_out_once() -> None:
    seen: dict[frozenset[str], list[str]] = {v: [] for v in DECLARED}
    for p in _sources():
        for line, values in _literal_sets(p):
            if values in seen:
                seen[values].append(f"{p.relative_to(ROOT)}:{line}")
    copies = {
        tuple(sorted(v)): where
        for v, where in seen.items()
        if [w for w in where if not w.startswith(DECLARED[v] + ":")]
    }
    assert not copies, f"a vocabulary spelled out outside its declaration: {copies}"


def test_the_declarations_say_what_the_contract_says() -> None:
    # by hand, from docs/contract.md (records, `stoker net`/`stoker io` options, --scope)
    assert records.BACKENDS == ("nccl", "gloo", "mpi")
    assert records.BACKEND_CHOICES == ("auto", "nccl", "gloo", "mpi")
    assert records.NET_SCOPES == ("world", "intra-node", "inter-node", "pair", "groups")
    assert records.CLI_NET_SCOPES == ("world", "intra-node", "inter-node", "pairs", "groups")
    assert records.IO_FAMILIES == ("checkpoint", "dataloader", "metadata")
    assert records.IO_WORKLOADS == ("checkpoint_write", "checkpoint_read", "dataloader_read", "metadata")
    from reports.shared.findings import REPORT_SCOPES

    assert REPORT_SCOPES == ("cluster", "node")


def test_the_commands_take_the_declared_choices() -> None:
    from launchers.cloud import cloudjob
    from netbench import topology
    from netbench.backends import BACKENDS
    from reports.evidence.sweeps import SCOPE_ORDER

    assert BACKENDS == records.BACKEND_CHOICES
    assert topology.SCOPES == records.CLI_NET_SCOPES
    assert SCOPE_ORDER == ("world", "intra-node", "inter-node", "pair")
    assert cloudjob.PLATFORMS == ("slurm", "k8s", "skypilot", "dstack")
    contract = (ROOT / "docs" / "contract.md").read_text().replace("\\|", "|")  # table cells escape |
    assert "--backend " + "|".join(records.BACKEND_CHOICES) in contract
    assert "--platform " + "|".join(cloudjob.PLATFORMS) in contract
    assert "--scope " + "|".join(("cluster", "node")) in contract


def test_iobench_writes_the_declared_workload_names() -> None:
    from iobench.workloads import IoSettings, plan

    written = {j.workload for j in plan(IoSettings(), "/d") if j.workload}
    assert written == set(records.IO_WORKLOADS)


def test_every_storage_workload_name_in_the_source_is_declared() -> None:
    name = re.compile(r"(checkpoint|dataloader)_(read|write)")
    unknown = sorted(
        f"{p.relative_to(ROOT)}:{n.lineno}: {n.value}"
        for p in _sources()
        for n in ast.walk(ast.parse(p.read_text()))
        if isinstance(n, ast.Constant)
        and isinstance(n.value, str)
        and name.fullmatch(n.value)
        and n.value not in records.IO_WORKLOADS
    )
    assert not unknown, unknown


def _types(cls: type) -> dict[str, str]:
    return {f.name: str(f.type) for f in dataclasses.fields(cls) if f.name != "extra"}


@pytest.mark.parametrize(
    ("cls", "figures", "optional", "strs", "bools", "ints", "maps"),
    [
        (
            NetRecord,
            records.NET_FIGURES,
            records.NET_OPTIONAL,
            plausible.NET_STR,
            plausible.NET_BOOL,
            plausible.NET_INT,
            (),
        ),
        (
            IoRecord,
            records.IO_FIGURES,
            (),
            plausible.IO_STR,
            plausible.IO_BOOL,
            plausible.IO_INT,
            records.IO_MAPS,
        ),
    ],
)
def test_the_record_checks_cover_every_field_at_its_type(
    cls: type,
    figures: tuple[tuple[str, bool], ...],
    optional: tuple[str, ...],
    strs: tuple[str, ...],
    bools: tuple[str, ...],
    ints: tuple[str, ...],
    maps: tuple[str, ...],
) -> None:
    types = _types(cls)
    checked = {n: ("int" if integer else "float") for n, integer in figures}
    checked |= {n: "float | None" for n in optional}
    checked |= {n: "str" for n in strs} | {n: "bool" for n in bools} | {n: "int" for n in ints}
    checked |= {n: "dict[str, float]" for n in maps}
    # not checked: kind (fixed by the file), hosts (records.hosts_why), direct (a tri-state)
    unchecked = {"kind", "hosts", "direct"}
    assert {n: t for n, t in types.items() if n not in unchecked} == checked


def test_the_column_reader_requires_the_contract_minimum() -> None:
    pa = pytest.importorskip("pyarrow")
    from reports.table.parse import required_schema

    by_hand = {
        "run_id": pa.string(),
        "ts": pa.string(),
        "op": pa.string(),
        "scope": pa.string(),
        "backend": pa.string(),
        "dtype": pa.string(),
        "hosts": pa.list_(pa.string()),
        "nodes": pa.int64(),
        "ranks": pa.int64(),
        "bytes": pa.int64(),
        "wrong": pa.int64(),
        "time_s": pa.float64(),
        "algbw_GBps": pa.float64(),
        "busbw_GBps": pa.float64(),
    }
    schema = required_schema()
    assert {f.name: f.type for f in schema} == by_hand
    required = {f.name for f in dataclasses.fields(NetRecord)} - {
        f.name
        for f in dataclasses.fields(NetRecord)
        if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
    }
    assert set(by_hand) == required


def test_the_frame_columns_are_record_fields_or_documented_extras() -> None:
    pytest.importorskip("pandas")
    from reports.table.frame import FRAME_COLUMNS

    # the extra keys net records carry at the top level (docs/contract.md: pass, round, rail,
    # confirmation; per_iter and soak are the frame's own flags of nccl-tests -I and soak records)
    extras = {"pass", "round", "rail", "confirmation", "per_iter", "soak"}
    fields = set(_types(NetRecord))
    assert set(FRAME_COLUMNS) - fields == extras
    assert {n for n, _ in records.NET_FIGURES} <= set(FRAME_COLUMNS)


def test_the_contract_lists_the_record_vocabularies() -> None:
    text = (ROOT / "docs" / "contract.md").read_text()
    net = text.split("A `net` record also has:", 1)[1].split("An `io` record also has:", 1)
    io = net[1].split("```", 2)[1]

    def listed(block: str, key: str) -> list[str]:
        line = next(li for li in block.splitlines() if li.startswith(key + " "))
        return re.findall(r'"([^"]+)"', line)

    assert listed(net[0], "scope") == list(records.NET_SCOPES)
    assert listed(net[0], "backend") == [*records.BACKENDS, "nccl-tests"]  # nccl-tests: imported
    assert listed(io, "scope") == list(records.IO_SCOPES)
    assert listed(io, "workload") == list(records.IO_WORKLOADS)
