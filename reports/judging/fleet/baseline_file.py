"""The baseline file (docs/check.md): YAML a person can read and edit, written by `stoker
baseline` and read by `stoker report --baseline` and `stoker check --baseline`.

One entry per figure: what it is (kind, component, and whichever of scope, op, host, device,
path, workload, direction apply), how it was measured (backend, ranks, nodes, procs_per_node,
block_bytes, bytes), the accepted value, the spread its own repeats showed and the tolerance.
A file without the "how" fields (an older stoker's) still loads; its figures are compared only
where that is unambiguous (reports.judging.fleet.baseline.REQUIRED). A malformed file is a
UsageError naming the file and the field (exit 2): a key twice in one mapping, two entries for
one figure, a unit other than the figure's, a tolerance outside 0-0.5.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from reports.judging.fleet.baseline import (
    KINDS,
    MAX_TOLERANCE,
    STORAGE_KINDS,
    VERSION,
    Accepted,
    Baseline,
    Figure,
)
from reports.shared.errors import UsageError
from reports.shared.findings import COMPONENTS
from reports.shared.spec import Fields
from reports.shared.storage_rule import SCRATCH_ROLE, path_role

HEADER = f"""\
# stoker baseline: what the accepted run measured (docs/check.md).
# A later figure under accepted x (1 - tolerance) is a `regression`. Edit a tolerance (0-{MAX_TOLERANCE})
# to loosen or tighten one figure; delete an entry to stop judging it.
"""
_TEXT = ("scope", "op", "host", "device", "path", "role", "workload", "direction")
# how a figure was measured: the file's name of each Figure field (integers; backend is text)
_HOW = (
    ("ranks", "ranks"),
    ("nodes", "nodes"),
    ("procs_per_node", "procs"),
    ("block_bytes", "block"),
    ("data_set_bytes", "data"),
)
_ENTRY_KEYS = (
    "kind",
    "component",
    "what",
    "accepted",
    "spread",
    "unit",
    "tolerance",
    "bytes",
    "hosts",
    "backend",
    *(name for name, _ in _HOW),
    *_TEXT,
)


def unit_of(kind: str) -> str:
    """The one unit a figure of `kind` is in."""
    return "TFLOPS" if kind == "compute" else "GB/s"


def to_yaml(b: Baseline) -> str:
    entries = []
    for a in b.figures:
        f = a.figure
        e: dict[str, Any] = {"kind": f.kind, "component": f.component, "what": f.what}
        e.update({k: getattr(f, k) for k in _TEXT if getattr(f, k)})
        if f.backend:
            e["backend"] = f.backend
        e.update({name: getattr(f, attr) for name, attr in _HOW if getattr(f, attr)})
        e["accepted"] = round(f.value, 6)
        if f.low is not None and f.high is not None:
            e["spread"] = [round(f.low, 6), round(f.high, 6)]
        e["unit"] = f.unit
        e["tolerance"] = a.tolerance
        if f.bytes:
            e["bytes"] = f.bytes
        if f.hosts and f.hosts != ((f.host,) if f.host else ()):
            e["hosts"] = list(f.hosts)
        entries.append(e)
    body: dict[str, Any] = {"stoker_baseline": VERSION, "run_id": b.run_id, "created": b.created}
    if b.warning:
        body["warning"] = b.warning
    body["figures"] = entries
    head = HEADER + "".join(f"# WARNING: {line}\n" for line in [b.warning] if line)
    return head + yaml.safe_dump(body, sort_keys=False, default_flow_style=None, width=110)


def _entry(fx: Fields, e: Any, where: str) -> Accepted:
    m = fx.mapping(e, where)
    fx.known_keys(m, where, _ENTRY_KEYS)
    for need in ("kind", "component", "what", "accepted", "tolerance"):
        if need not in m:
            raise UsageError(f"{fx.file}: {where}.{need}: missing; every figure needs {need}")
    spread = m.get("spread")
    low = high = None
    if spread is not None:
        if not isinstance(spread, list) or len(spread) != 2:
            raise fx.fail(f"{where}.spread", "[lowest, highest]", spread)
        low = fx.number(spread[0], f"{where}.spread[0]", positive=False)
        high = fx.number(spread[1], f"{where}.spread[1]", positive=False)
    hosts = m.get("hosts", [])
    if not isinstance(hosts, list) or not all(isinstance(h, str) for h in hosts):
        raise fx.fail(f"{where}.hosts", "a list of host names", hosts)
    text = {k: str(m[k]) for k in _TEXT if k in m and m[k] is not None}
    if "role" in text:
        text["role"] = fx.text(text["role"], f"{where}.role", (SCRATCH_ROLE,))
    elif m.get("kind") in STORAGE_KINDS and path_role(text.get("path", "")):
        text["role"] = path_role(text["path"])  # written before roles: a run's scratch dir all the same
    kw: dict[str, Any] = {**text}
    if m.get("backend") is not None:
        kw["backend"] = fx.text(m["backend"], f"{where}.backend")
    kw.update(
        {attr: fx.integer(m[name], f"{where}.{name}") for name, attr in _HOW if m.get(name) is not None}
    )
    kw["component"] = fx.text(m["component"], f"{where}.component", COMPONENTS)
    kind = fx.text(m["kind"], f"{where}.kind", KINDS)
    unit = fx.text(m.get("unit", unit_of(kind)), f"{where}.unit", (unit_of(kind),))
    fig = Figure(
        kind=kind,
        what=fx.text(m["what"], f"{where}.what"),
        value=fx.number(m["accepted"], f"{where}.accepted"),
        unit=unit,
        low=low,
        high=high,
        bytes=fx.integer(m["bytes"], f"{where}.bytes") if "bytes" in m else 0,
        hosts=tuple(hosts) or ((text["host"],) if "host" in text else ()),
        **kw,
    )
    tol = fx.number(m["tolerance"], f"{where}.tolerance", positive=False, maximum=MAX_TOLERANCE)
    return Accepted(figure=fig, tolerance=tol)


def _duplicate_key(text: str) -> str:
    """The first key written twice in one mapping of the YAML `text`, as `line N: key`, or ""
    (YAML keeps the last of them in silence: an edited figure would be judged by another)."""
    seen: set[int] = set()
    todo = [yaml.compose(text, Loader=yaml.SafeLoader)]
    while todo:
        node = todo.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            keys: set[str] = set()
            for k, v in node.value:
                if isinstance(k, yaml.ScalarNode):
                    if k.value in keys:
                        return f"line {k.start_mark.line + 1}: {k.value}"
                    keys.add(k.value)
                todo += [k, v]
        elif isinstance(node, yaml.SequenceNode):
            todo += node.value
    return ""


def load(path: str | Path) -> Baseline:
    from reports.shared.safe_read import MAX_YAML_BYTES, parse_yaml, read_text

    text = read_text(path, "baseline", MAX_YAML_BYTES)  # regular file, UTF-8, bounded
    data = parse_yaml(text, f"baseline {path}")  # bounded depth and aliases
    fx = Fields(str(path))
    if dup := _duplicate_key(text):
        raise UsageError(f"{path}: {dup}: the key is written twice; keep one (YAML would keep the last)")
    doc = fx.mapping(data if data is not None else {}, "top level")
    fx.known_keys(doc, "", ("stoker_baseline", "run_id", "created", "warning", "figures"))
    if doc.get("stoker_baseline") != VERSION:
        raise fx.fail(
            "stoker_baseline", f"{VERSION} (a file written by `stoker baseline`)", doc.get("stoker_baseline")
        )
    figs = doc.get("figures")
    if not isinstance(figs, list) or not figs:
        raise fx.fail("figures", "a non-empty list of figures", figs)
    entries = tuple(_entry(fx, e, f"figures[{i}]") for i, e in enumerate(figs))
    first: dict[tuple[str, ...], int] = {}
    for i, a in enumerate(entries):
        j = first.setdefault(a.figure.identity, i)
        if j != i:
            raise UsageError(
                f"{path}: figures[{i}]: the same figure as figures[{j}] ({a.figure.what}); "
                "keep one entry per figure (delete the other)"
            )
    return Baseline(
        run_id=str(doc.get("run_id", "?")),
        created=str(doc.get("created", "?")),
        figures=entries,
        file=str(path),
        warning=str(doc.get("warning") or ""),
    )
