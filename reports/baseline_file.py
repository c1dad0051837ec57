"""The baseline file (docs/check.md): YAML a person can read and edit, written by `stoker
baseline` and read by `stoker report --baseline` and `stoker check --baseline`.

One entry per figure: what it is (kind, component, and whichever of scope, op, host, device,
path, workload, direction apply), the accepted value, the spread the accepted run showed and
the tolerance. A malformed file is a UsageError naming the file and the field (exit 2).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from reports.errors import UsageError
from reports.findings import COMPONENTS
from reports.judging.baseline import KINDS, MAX_TOLERANCE, VERSION, Accepted, Baseline, Figure
from reports.judging.spec import Fields, read_yaml

HEADER = f"""\
# stoker baseline: what the accepted run measured (docs/check.md).
# A later figure under accepted x (1 - tolerance) is a `regression`. Edit a tolerance (0-{MAX_TOLERANCE})
# to loosen or tighten one figure; delete an entry to stop judging it.
"""
_TEXT = ("scope", "op", "host", "device", "path", "workload", "direction")
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
    *_TEXT,
)


def to_yaml(b: Baseline) -> str:
    entries = []
    for a in b.figures:
        f = a.figure
        e: dict[str, Any] = {"kind": f.kind, "component": f.component, "what": f.what}
        e.update({k: getattr(f, k) for k in _TEXT if getattr(f, k)})
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
    body = {"stoker_baseline": VERSION, "run_id": b.run_id, "created": b.created, "figures": entries}
    return HEADER + yaml.safe_dump(body, sort_keys=False, default_flow_style=None, width=110)


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
    fig = Figure(
        kind=fx.text(m["kind"], f"{where}.kind", KINDS),
        component=fx.text(m["component"], f"{where}.component", COMPONENTS),
        what=fx.text(m["what"], f"{where}.what"),
        value=fx.number(m["accepted"], f"{where}.accepted"),
        unit=fx.text(m.get("unit", "GB/s"), f"{where}.unit"),
        low=low,
        high=high,
        bytes=fx.integer(m["bytes"], f"{where}.bytes") if "bytes" in m else 0,
        hosts=tuple(hosts) or ((text["host"],) if "host" in text else ()),
        **text,
    )
    tol = fx.number(m["tolerance"], f"{where}.tolerance", positive=False, maximum=0.95)
    return Accepted(figure=fig, tolerance=tol)


def load(path: str | Path) -> Baseline:
    fx, doc = read_yaml(path, "baseline")
    fx.known_keys(doc, "", ("stoker_baseline", "run_id", "created", "figures"))
    if doc.get("stoker_baseline") != VERSION:
        raise fx.fail(
            "stoker_baseline", f"{VERSION} (a file written by `stoker baseline`)", doc.get("stoker_baseline")
        )
    figs = doc.get("figures")
    if not isinstance(figs, list) or not figs:
        raise fx.fail("figures", "a non-empty list of figures", figs)
    return Baseline(
        run_id=str(doc.get("run_id", "?")),
        created=str(doc.get("created", "?")),
        figures=tuple(_entry(fx, e, f"figures[{i}]") for i, e in enumerate(figs)),
        file=str(path),
    )
