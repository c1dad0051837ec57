"""The package layout keeps one direction (docs/architecture.md quotes these rules), read from
the source with ast over every package (reports, netbench, iobench, launchers), so that a lazy
import inside a function, or one under TYPE_CHECKING, counts like one at the top; and every rule
is checked on what a module reaches TRANSITIVELY, so that no wall is crossed by a detour:

1. the floor (reports/shared/: the record schema and what every room shares) imports only the floor;
2. inside reports the rooms go one way, table -> ingest -> evidence -> judging -> render ->
   pipeline -> fleet -> commands: a room reaches only the floor, its own room and earlier
   ones; every module of reports is on the floor or in a room;
3. netbench and iobench (measurement) reach only the floor of reports, never each other,
   never launchers;
4. launchers is the top: it drives measurement and the report; nothing else reaches it;
5. no import circle anywhere;
6. a folder's `__init__` docstring says what the folder may import (`May import: ...`), and
   each of its modules imports nothing else.

There is no allow-list: a module that must cross a wall moves to where the rules put it. The
floor and the rooms are read from the tree (the floor is reports/shared/, a room is any other
child of reports/), not from a list of modules."""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Collection
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("reports", "netbench", "iobench", "launchers")
# the name users' scripts import the record schema by: reports/records.py re-exports
# reports/shared/records.py and is part of the floor
ALIASES = frozenset({"reports.records"})
# the rooms of reports in their order; each is a child of reports/ (a folder or a module)
ROOMS = ("table", "ingest", "evidence", "judging", "render", "pipeline", "fleet", "commands")


def _floor() -> frozenset[str]:
    shared = ROOT / "reports" / "shared"
    return frozenset({"reports", *ALIASES, *(_module(p) for p in shared.rglob("*.py"))})


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


FLOOR = _floor()


def imports_of(source: str) -> set[str]:
    """Every module and `module.name` the source imports, wherever the import statement is."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


@functools.cache
def graph() -> dict[str, frozenset[str]]:
    """Each module of the packages -> the modules of the packages it imports directly."""
    mods = {_module(p): p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}
    return {
        m: frozenset(
            i for i in imports_of(p.read_text()) | named_modules(p.read_text(), mods) if i in mods and i != m
        )
        for m, p in mods.items()
    }


def named_modules(source: str, mods: Collection[str]) -> set[str]:
    """The modules a source that uses importlib names in a string (`importlib.import_module(NAME)`,
    the dispatcher's table of commands): an import all the same. (A module name handed to
    `python -m` starts a process; it imports nothing.)"""
    if "importlib" not in source:
        return set()
    return {
        n.value
        for n in ast.walk(ast.parse(source))
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in mods
    }


def reach(g: dict[str, frozenset[str]], m: str) -> set[str]:
    """Every module `m` imports, directly or through others."""
    seen: set[str] = set()
    todo = [m]
    while todo:
        for n in g[todo.pop()]:
            if n not in seen:
                seen.add(n)
                todo.append(n)
    return seen


def circles(g: dict[str, frozenset[str]]) -> list[list[str]]:
    """The import circles of `g` (its strongly connected components of 2 or more modules)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(g[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def room(mod: str) -> str | None:
    parts = mod.split(".")
    if parts[0] != "reports" or len(parts) < 2 or mod in FLOOR:
        return None
    return parts[1] if parts[1] in ROOMS else None


def test_no_import_circle_anywhere() -> None:
    found = circles(graph())
    assert not found, f"import circles: {found}"


def test_the_floor_is_there() -> None:
    assert FLOOR <= set(graph()), sorted(FLOOR - set(graph()))


def test_the_floor_imports_only_the_floor() -> None:
    g = graph()
    bad = {m: sorted(reach(g, m) - FLOOR) for m in sorted(FLOOR)}
    assert not any(bad.values()), {m: b for m, b in bad.items() if b}


def test_every_module_of_reports_is_on_the_floor_or_in_a_room() -> None:
    lost = sorted(m for m in graph() if m.startswith("reports.") and m not in FLOOR and room(m) is None)
    assert not lost, f"neither floor nor room: {lost} (move it into reports/shared/ or a room of ROOMS)"


def test_rooms_depend_one_way() -> None:
    g, order = graph(), {r: i for i, r in enumerate(ROOMS)}
    bad = sorted(
        (m, n)
        for m in g
        if (r := room(m))
        for n in reach(g, m)
        if not n.startswith("reports") or (n not in FLOOR and order[room(n) or "commands"] > order[r])
    )
    assert not bad, f"a room reaches a later room or another package: {bad}"


def test_measurement_reaches_only_the_floor() -> None:
    g = graph()
    for pkg, other in (("netbench", "iobench"), ("iobench", "netbench")):
        bad = sorted(
            (m, n)
            for m in g
            if m.split(".")[0] == pkg
            for n in reach(g, m)
            if (n.startswith("reports") and n not in FLOOR) or n.split(".")[0] in (other, "launchers")
        )
        assert not bad, f"{pkg} reaches past the floor: {bad}"


def test_launchers_is_the_top() -> None:
    g = graph()
    bad = sorted(
        (m, n) for m in g if not m.startswith("launchers") for n in reach(g, m) if n.startswith("launchers")
    )
    assert not bad, f"launchers is reached from below: {bad}"


def test_render_never_reaches_judging() -> None:
    # the evidence and the judgement come in as data (reports.render.markdown.ReportInput)
    g = graph()
    bad = sorted((m, n) for m in g if room(m) == "render" for n in reach(g, m) if room(n) == "judging")
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


def test_judging_runs_no_tool() -> None:
    # judging is pure: hardware detection (nvidia-smi, sysfs) is IO on the measuring side
    # (netbench/inventory/hardware.py) and reaches the report only through the records
    for p in (ROOT / "reports" / "judging").rglob("*.py"):
        assert not {"subprocess", "shutil"} & imports_of(p.read_text()), f"{p.relative_to(ROOT)} runs tools"


def test_the_rules_see_through_a_detour_and_a_circle() -> None:
    # by hand: a floor module that reaches a room through another floor module, and a circle
    # made of an import inside a function
    g = {
        "reports.shared.records": frozenset({"reports.shared.plausible"}),
        "reports.shared.plausible": frozenset({"reports.judging.catalog"}),
        "reports.judging.catalog": frozenset(),
        "netbench.runner": frozenset({"netbench.soak"}),
        "netbench.soak": frozenset({"netbench.runner"}),
    }
    assert reach(g, "reports.shared.records") == {"reports.shared.plausible", "reports.judging.catalog"}
    assert circles(g) == [["netbench.runner", "netbench.soak"]]
    src = "import os\ndef f():\n    from netbench.runner import RankRun\n"
    assert imports_of(src) == {"os", "netbench.runner", "netbench.runner.RankRun"}


def test_the_architecture_doc_quotes_these_rules() -> None:
    doc = " ".join((ROOT / "docs" / "architecture.md").read_text().split())
    rules = (__doc__ or "").split("\n\n")[1]  # the numbered rules of this module's docstring
    assert " ".join(rules.split()) in doc, "docs/architecture.md must quote test_layout's rules"


def test_the_rooms_are_the_children_of_reports() -> None:
    # every child of reports/ is the floor, the schema's alias, or a room named in ROOMS (in order)
    children = {p.stem for p in (ROOT / "reports").glob("*.py") if p.stem != "__init__"}
    children |= {p.name for p in (ROOT / "reports").iterdir() if p.is_dir() and any(p.glob("*.py"))}
    assert children - {"shared", *(a.split(".")[1] for a in ALIASES)} == set(ROOMS)


def allowed_imports(package: Path) -> tuple[str, ...] | None:
    """The prefixes the `May import:` line of a folder's `__init__` docstring names, or None."""
    init = package / "__init__.py"
    doc = ast.get_docstring(ast.parse(init.read_text())) if init.is_file() else None
    m = re.search(r"^May import: (.+)$", doc or "", re.M)
    return tuple(x.strip() for x in m.group(1).split(",")) if m else None


def _within(mod: str, prefixes: tuple[str, ...]) -> bool:
    return any(mod == p or mod.startswith(p + ".") for p in prefixes)


def test_each_folder_imports_what_its_init_says() -> None:
    g = graph()
    empty_inits = {m for m in g if (ROOT / m.replace(".", "/") / "__init__.py").is_file() and not g[m]}
    declared = {}
    for pkg in PACKAGES:
        for init in (ROOT / pkg).rglob("__init__.py"):
            if (allowed := allowed_imports(init.parent)) is not None:
                declared[_module(init)] = allowed
    assert {"reports.shared", "reports.judging.network", "launchers.slurm", "launchers.commands"} <= set(
        declared
    )
    bad = sorted(
        (m, n)
        for folder, allowed in declared.items()
        for m in g
        if m.startswith(folder + ".")
        for n in g[m]
        if n not in empty_inits and not _within(n, (folder, *allowed))
    )
    assert not bad, f"a module imports what its folder's __init__ does not allow: {bad}"


def test_a_may_import_line_is_read() -> None:
    assert _within("reports.shared.records", ("reports.shared",))
    assert not _within("reports.sharedx", ("reports.shared",))
    assert allowed_imports(ROOT / "reports" / "shared") == ("reports.shared",)
