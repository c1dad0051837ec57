"""The accepted baseline (docs/check.md): what an accepted run measured, and the judging of a
later run against it (pure; reading and writing the YAML is at the edges, `load`/`dump`).

A baseline is a list of figures, each one number a later run can measure again under the same
key: a sweep's plateau per scope and op, each node's intra-node plateau, each node's best pair
(its own link), each storage path per workload and direction (all nodes, and per node), each
GPU's pinned host-link copies, each device's matmul TFLOPS per dtype (stoker compute).

A figure is compared only with a figure measured the same way: beside its key (where it was
measured) it carries its identity (how: the tool, the ranks and nodes, the writers or workers
per node, the block or message size; IDENTITY per kind). A later figure whose key or identity
differs is "not comparable", never a regression; an entry that does not record a field its
kind needs to be compared (REQUIRED: a file from an older stoker) is not comparable either.

Beside the accepted value an entry keeps the spread of its own repeats (the lowest and
highest) and a tolerance: a later figure under `accepted x (1 - tolerance)` is a `regression`,
a failing finding named by component and host. The tolerance starts at DEFAULT_TOLERANCE,
widened to twice the relative spread seen when the run itself was noisier, and a person may
edit it in the file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from reports.shared.findings import Component, Finding
from reports.shared.hostnames import host_key
from reports.shared.records import norm_path, tool_figure
from reports.shared.units import format_size

VERSION = 1
DEFAULT_TOLERANCE = 0.15  # a healthy rerun on a quiet node stays within 15% of its plateau
# storage shares its disks and servers with whatever else runs: a looser start
STORAGE_TOLERANCE = 0.25
MAX_TOLERANCE = 0.5
_KEY_FIELDS = ("kind", "scope", "op", "host", "device", "path", "workload", "direction")
KINDS = ("sweep", "node-intra", "node-pair", "storage", "node-storage", "host-link", "compute")
STORAGE_KINDS = ("storage", "node-storage")
# how a figure of each kind was measured: a later figure differing in one of these is another figure
IDENTITY: dict[str, tuple[str, ...]] = {
    "sweep": (
        "backend",
        "ranks",
        "nodes",
    ),  # its plateau size is the best of the largest 3: kept, not matched
    "node-intra": ("backend", "ranks", "bytes"),
    "node-pair": (),
    "storage": ("backend", "procs", "block", "nodes"),
    "node-storage": ("backend", "procs", "block"),
    "host-link": (),
    "compute": (),
}
# what an accepted entry must record to be compared at all: a storage figure scales with its
# writers or workers, and an older file mixed fio with torch.save under one figure
REQUIRED: dict[str, tuple[str, ...]] = {"storage": ("backend", "procs"), "node-storage": ("backend", "procs")}
assert set(IDENTITY) == set(KINDS) and set(REQUIRED) <= set(KINDS)
# an identity field as a person reads it (a field not named here reads as itself)
FIELD_NAMES = {
    "backend": "tool",
    "block": "block size",
    "bytes": "message size",
    "procs": "processes per node",
}


@dataclass(frozen=True, kw_only=True, slots=True)
class Figure:
    """One figure of a run, keyed so that a later run's same figure meets it, with the
    identity of how it was measured (0 or "": not recorded)."""

    kind: str  # one of KINDS
    component: Component  # a reports.shared.findings component
    what: str  # the check's name in a finding, e.g. "intra-node all_reduce busbw"
    value: float
    unit: str = "GB/s"
    low: float | None = None  # the spread seen in this run (repeats at the same point)
    high: float | None = None
    scope: str = ""
    op: str = ""
    host: str = ""
    device: str = ""
    path: str = ""
    workload: str = ""
    direction: str = ""
    bytes: int = 0  # the message size the figure was taken at (network)
    hosts: tuple[str, ...] = ()
    backend: str = ""  # the tool: nccl, gloo, fio, torch.save, torch.dcp
    ranks: int = 0  # network: ranks of the collective
    nodes: int = 0  # nodes the figure spans (sweeps, storage of all nodes together)
    procs: int = 0  # storage: processes per node (checkpoint writers, dataloader workers)
    block: int = 0  # storage: bytes per I/O (the checkpoint block, the dataloader sample)
    data: int = 0  # storage: the dataloader's data set per worker (bytes), for a check to read alike
    # storage: the path's role when its path names no disk a later run finds again (a run's own
    # scratch dir, reports/shared/storage_rule.py `path_role`): the figure is keyed by it
    role: str = ""

    def __post_init__(self) -> None:
        assert self.kind in KINDS, self.kind

    @property
    def key(self) -> tuple[str, ...]:
        """Where the figure was measured, one spelling per thing: a host by its node identity
        (`GPU02`, `gpu02.cluster.local` are `gpu02`), a path normalised (`/scratch/`)."""
        return tuple(
            where_of(self) if f == "path" else _KEY_OF.get(f, str)(getattr(self, f)) for f in _KEY_FIELDS
        )

    @property
    def identity(self) -> tuple[str, ...]:
        """Where and how: two entries of a baseline never share it."""
        return self.key + tuple(str(getattr(self, f)) for f in IDENTITY[self.kind])


def where_of(fig: Figure) -> str:
    """Where a figure was measured, as its key holds it: the role (`(scratch)`) of a path that
    was a run's own scratch dir, else the path normalised."""
    return f"({fig.role})" if fig.role else norm_path(fig.path)


def shown_where(fig: Figure) -> str:
    """The place in words: `/local/scratch`, `the run's own scratch dir (local)`."""
    return f"the run's own {fig.role} dir ({fig.scope or 'local'})" if fig.role else fig.path


def _host(name: object) -> str:
    return host_key(str(name)) if name else ""


_KEY_OF: dict[str, Callable[[Any], str]] = {"host": _host, "path": lambda p: norm_path(str(p))}
# an identity field compared in its one spelling (a field not named here: as written)
_SAME: dict[str, Callable[[Any], object]] = {"backend": lambda b: tool_figure(str(b))}


def _label(fig: Figure, field: str) -> str:
    if field == "procs":
        return {"checkpoint": "writers per node", "dataloader": "workers per node"}.get(
            fig.workload.split("_")[0], "processes per node"
        )
    return FIELD_NAMES.get(field, field)


def _shown(field: str, value: object) -> str:
    return format_size(int(str(value))) if field in ("block", "bytes") else str(value)


def _as_is(value: object) -> object:
    return value


def differences(accepted: Figure, later: Figure) -> list[str]:
    """How `later` was measured unlike `accepted` (empty: alike). A field the accepted entry
    does not record is unknown and alike, unless its kind REQUIRES it."""
    out = []
    for field in IDENTITY[later.kind]:
        a, b = getattr(accepted, field), getattr(later, field)
        if not a:
            if b and field in REQUIRED.get(later.kind, ()):
                out.append(f"the accepted entry does not record its {_label(later, field)}")
        elif b and _SAME.get(field, _as_is)(a) != _SAME.get(field, _as_is)(b):
            out.append(f"{_label(later, field)} {_shown(field, b)} here, {_shown(field, a)} accepted")
    return out


@dataclass(frozen=True, kw_only=True, slots=True)
class Accepted:
    figure: Figure
    tolerance: float


@dataclass(frozen=True, kw_only=True, slots=True)
class Match:
    """A later figure against a baseline: the accepted entry it is compared with, or why it
    is not comparable; neither when the baseline has no such figure."""

    accepted: Accepted | None = None
    why: str = ""


@dataclass(frozen=True, kw_only=True, slots=True)
class Baseline:
    run_id: str
    created: str
    figures: tuple[Accepted, ...]
    file: str = ""
    # the run it was taken from was never judged (`unjudged`: no spec, no reference): said in
    # the file and on the terminal; its figures are what the machine gave, vouched for by nobody
    warning: str = ""

    def match(self, fig: Figure) -> Match:
        """The one accepted entry at the same key whose identity is alike; else why not."""
        same = [a for a in self.figures if a.figure.key == fig.key]
        alike = [a for a in same if not differences(a.figure, fig)]
        if len(alike) == 1:
            return Match(accepted=alike[0])
        if alike:
            return Match(why=f"{len(alike)} accepted entries fit it and none is named more closely")
        if same:
            return Match(why="; ".join(differences(same[0].figure, fig)))
        elsewhere = sorted(
            {
                shown_where(a.figure)
                for a in self.figures
                if replace(a.figure, path=fig.path, role=fig.role).key == fig.key
            }
        )
        if elsewhere and fig.kind in STORAGE_KINDS:
            return Match(
                why=f"measured on {shown_where(fig)}, accepted on {', '.join(elsewhere)} (another disk)"
            )
        others = sorted(
            {
                a.figure.host or "(no host)"
                for a in self.figures
                if replace(a.figure, host=fig.host).key == fig.key
            }
        )
        if fig.host and others:
            return Match(
                why=f"host {fig.host} is not in the baseline (its figure is of {', '.join(others[:5])})"
            )
        return Match()

    def find(self, fig: Figure) -> Accepted | None:
        """The accepted entry `fig` is compared with, if any (never one on another path)."""
        return self.match(fig).accepted

    def like(self, kind: str, host: str, **where: str) -> list[Figure]:
        """The accepted figures of `kind` matching `where` (e.g. path=...), this host's when
        it has any, else every host's (a fleet's baseline taken on identical nodes)."""
        figs = [
            a.figure
            for a in self.figures
            if a.figure.kind == kind and all(getattr(a.figure, k) == v for k, v in where.items())
        ]
        own = [f for f in figs if _host(f.host) == _host(host)]
        return own or figs

    def size_for(self, host: str, op: str = "all_reduce") -> int:
        """The message size the accepted run's intra-node plateau of `host` was at (0: none)."""
        return next((f.bytes for f in self.like("node-intra", host, op=op)), 0)


def tolerance_for(fig: Figure, default: float = DEFAULT_TOLERANCE) -> float:
    """The default (storage: at least STORAGE_TOLERANCE), or twice the relative spread the
    accepted run itself showed."""
    if fig.kind in ("storage", "node-storage"):
        default = max(default, STORAGE_TOLERANCE)
    spread = (fig.value - fig.low) / fig.value if fig.low is not None and fig.value > 0 else 0.0
    return round(min(MAX_TOLERANCE, max(default, 2 * spread)), 3)


def make(
    run_id: str, created: str, figs: Iterable[Figure], default: float = DEFAULT_TOLERANCE, warning: str = ""
) -> Baseline:
    return Baseline(
        run_id=run_id,
        created=created,
        figures=tuple(Accepted(figure=f, tolerance=tolerance_for(f, default)) for f in figs),
        warning=warning,
    )


def unjudged_warning(run_id: str) -> str:
    """What a baseline taken from a run nothing judged says, in the file and on the terminal."""
    return (
        f"run {run_id} was never judged (unjudged: no spec and no reference for what it measured), so "
        "these figures say what the machine gave, not that it was healthy; a later check holds it to them"
    )


# -- judging ------------------------------------------------------------------------------
def _fmt(x: float) -> str:
    return f"{x:.3g}"


def _where(fig: Figure) -> dict[str, str]:
    """What a finding carries of where its figure was measured, for the actions' gate
    (launchers/actions/node_actions.py): a storage figure's scope ("local" or "shared") and path."""
    if fig.kind in STORAGE_KINDS:
        return {"scope": fig.scope, "path": fig.path, "workload": fig.workload}
    return {}


def _compared(baseline: Baseline, fig: Figure, acc: Accepted) -> Finding:
    floor = acc.figure.value * (1 - acc.tolerance)
    bad = fig.value < floor
    where = f"{fig.host} " if fig.host else ""
    dev = f" {fig.device}" if fig.device else ""
    msg = (
        f"{where}{fig.what}{dev}: {_fmt(fig.value)} {fig.unit} against {_fmt(acc.figure.value)} accepted "
        f"(run {baseline.run_id}), "
        + (
            f"{1 - fig.value / acc.figure.value:.0%} lower, past the {acc.tolerance:.0%} tolerance: "
            "it degraded since acceptance; drain it and look at what changed."
            if bad
            else f"within the {acc.tolerance:.0%} tolerance."
        )
    )
    return Finding(
        component=fig.component,
        check=f"baseline: {fig.what}",
        status="regression" if bad else "ok",
        measured=fig.value,
        expected=acc.figure.value,
        unit=fig.unit,
        hosts=fig.hosts or ((fig.host,) if fig.host else ()),
        message=msg,
        extra={
            "basis": "baseline",
            "figure": fig.kind,
            "tolerance": acc.tolerance,
            **_where(fig),
            **({"device": fig.device} if fig.device else {}),
        },
    )


def _not_comparable(fig: Figure, why: str) -> Finding:
    where = f"{fig.host} " if fig.host else ""
    return Finding(
        component=fig.component,
        check=f"baseline: {fig.what}",
        status="no_reference",
        measured=fig.value,
        expected=None,
        unit=fig.unit,
        hosts=fig.hosts or ((fig.host,) if fig.host else ()),
        message=f"not comparable: {where}{fig.what}: {why}; not judged against the baseline.",
        extra={"basis": "baseline", "figure": fig.kind, "comparable": False, **_where(fig)},
    )


def _matched_none(baseline: Baseline, figs: list[Figure], whys: list[str]) -> Finding:
    """One finding for a baseline that matches no figure of the run (another host, another
    cluster, entries without a host): nothing was judged, and the reasons, once each."""
    named = baseline.file or f"run {baseline.run_id}"
    whose = {_host(f.host) for f in figs}
    of = f" of {figs[0].host}" if len(whose) == 1 and figs[0].host else ""
    reasons = list(dict.fromkeys(part for why in whys for part in why.split("; ")))
    said = "; ".join(reasons[:3]) + (f" (+{len(reasons) - 3} more)" if len(reasons) > 3 else "")
    hosts = tuple(sorted({h for f in figs for h in (f.hosts or ((f.host,) if f.host else ()))}))
    comps = {f.component for f in figs}
    return Finding(
        component=comps.pop() if len(comps) == 1 else "node",
        check="baseline: matches no figure",
        status="no_reference",
        measured=None,
        expected=None,
        unit="",
        hosts=hosts,
        message=(
            f"not comparable: the baseline {named} matches none of the {len(figs)} figure(s){of} measured here"
            + (f": {said}" if said else " (it has no figure of what was measured)")
            + "; nothing was judged against it (give this node's own baseline, taken by this stoker on the path checked)."
        ),
        extra={"basis": "baseline", "comparable": False, "matched_none": True},
    )


def judge(baseline: Baseline, figs: Iterable[Figure]) -> list[Finding]:
    """One finding per figure the baseline also has, measured alike: `regression` when it fell
    under the accepted value by more than the tolerance, else `ok`; `no_reference` ("not
    comparable: ...") when the baseline has the figure measured another way or elsewhere.
    Figures the baseline lacks are not judged here (the spec still judges them). When the run
    measured figures and not one met its entry, one finding says so (`matched_none`)."""
    figs = list(figs)
    compared: list[Finding] = []
    other: list[Finding] = []
    whys: list[str] = []
    for fig in figs:
        m = baseline.match(fig)
        if m.accepted is not None:
            compared.append(_compared(baseline, fig, m.accepted))
        elif m.why:
            whys.append(m.why)
            other.append(_not_comparable(fig, m.why))
    if figs and not compared:
        return [_matched_none(baseline, figs, whys)]
    judged = {_host(f.hosts[0]) for f in compared if f.hosts}
    for host, mine in _by_host(figs).items():  # a node none of whose figures met its entry
        if host and host not in judged:
            why = [m.why for m in (baseline.match(f) for f in mine) if m.why]
            other.append(_matched_none(baseline, mine, why))
    return compared + other


def _by_host(figs: Iterable[Figure]) -> dict[str, list[Figure]]:
    out: dict[str, list[Figure]] = {}
    for f in figs:
        if f.host:
            out.setdefault(_host(f.host), []).append(f)
    return out


def matched_none(findings: Iterable[Finding]) -> bool:
    """Whether a baseline was given and matched no figure the run measured."""
    return any(f.extra.get("matched_none") for f in findings)
