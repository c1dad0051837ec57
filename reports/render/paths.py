"""How the report names storage paths (pure): a run's own scratch dir (`.io-scratch-*`, removed
after the run) is a long path no one types again, so a table says `the scratch dir` in its rows
and names the path once, in a line under the table, with what to add to the spec for it; a
storage chart labels each bar short (the workload, a key for its path, the tool) and prints
the key under the chart."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from reports.shared.findings import Finding
from reports.shared.storage_rule import path_role, spec_advice

SCRATCH = "the scratch dir"
SHORT_PATH = 16  # characters: a path this short is its own key on a chart


def scratch_names(paths: Iterable[str]) -> dict[str, str]:
    """The scratch dirs among `paths`, each with what a row says instead: `the scratch dir`,
    or `scratch dir 1`, `scratch dir 2` ... when a run has several (in sorted order)."""
    found = sorted({p for p in paths if path_role(p)})
    if len(found) == 1:
        return {found[0]: SCRATCH}
    return {p: f"scratch dir {i}" for i, p in enumerate(found, 1)}


def _kind(f: Finding) -> str:
    return "shared" if f.component == "shared storage" else "local"


def _path(f: Finding) -> str:
    path = f.extra.get("path")
    return path if isinstance(path, str) else ""


def finding_message(f: Finding, names: dict[str, str]) -> str:
    """The finding's message with a scratch dir named short, and the spec advice for it left to
    the line under the table (the message in verdict.json keeps both)."""
    path = _path(f)
    name = names.get(path)
    if not name:
        return f.message
    msg = f.message.replace(
        ": " + spec_advice(path, _kind(f)), " (what to add to the spec: under the table)."
    )
    return msg.replace(path, name)


def findings_notes(findings: Sequence[Finding]) -> list[str]:
    """The lines under the findings table: each scratch dir once, with the spec advice its rows left out."""
    names = scratch_names(_path(f) for f in findings)
    out = []
    for path, name in names.items():
        kinds = sorted({_kind(f) for f in findings if _path(f) == path})
        out.append(f"{name[0].upper()}{name[1:]}: {path}; {spec_advice(path, kinds[0])}")
    return out


def storage_notes(paths: Iterable[str]) -> list[str]:
    """The line under the storage table: each scratch dir once."""
    return [
        f"{name[0].upper()}{name[1:]}: {path} (stoker's own, removed after the run)"
        for path, name in scratch_names(paths).items()
    ]


def chart_keys(paths: Sequence[str]) -> dict[str, str]:
    """A short key per distinct path, for a chart's bar labels: `scratch` (`scratch 1` ...) for a
    scratch dir, a short path itself, else P1, P2 ... in the order first seen."""
    keys: dict[str, str] = {}
    scratch = scratch_names(paths)
    n = 0
    for p in dict.fromkeys(paths):
        if p in scratch:
            keys[p] = scratch[p].removeprefix("the ").replace(" dir", "")
        elif len(p) <= SHORT_PATH:
            keys[p] = p
        else:
            n += 1
            keys[p] = f"P{n}"
    return keys


def chart_label(workload: str, direction: str, key: str, backend: str) -> str:
    """`checkpoint write · scratch (fio)`: the workload named once (its direction only when
    its name does not end with it), the path's key, the tool."""
    what = workload if workload.endswith("_" + direction) else f"{workload} {direction}"
    return f"{what.replace('_', ' ')} · {key} ({backend})"


def chart_labels(bars: Sequence[tuple[str, str, str, str, int]]) -> tuple[list[str], str]:
    """Each bar's label, of (workload, direction, path, backend, procs), and the key line under
    the chart; two bars alike but for their processes say how many each ran (`×2`)."""
    keys = chart_keys([b[2] for b in bars])
    labels = [chart_label(w, d, keys[p], t) for w, d, p, t, _ in bars]
    twice = {x for x in labels if labels.count(x) > 1}
    labels = [x[:-1] + f" ×{bar[4]})" if x in twice else x for x, bar in zip(labels, bars, strict=True)]
    parts = [f"{k} = {p}" for p, k in keys.items() if k != p] + (["×N = N processes"] if twice else [])
    return labels, "Key: " + "; ".join(parts) if parts else ""
