"""The accepted baseline (docs/check.md): what an accepted run measured, and the judging of a
later run against it (pure; reading and writing the YAML is at the edges, `load`/`dump`).

A baseline is a list of figures, each one number a later run can measure again under the same
key: a sweep's plateau per scope and op, each node's intra-node plateau, each node's best pair
(its own link), each storage path per workload and direction (all nodes, and per node), each
GPU's pinned host-link copies, each device's matmul TFLOPS per dtype (stoker compute). Beside the accepted value it keeps the spread seen (the lowest
and highest repeat) and a tolerance: a later figure under `accepted x (1 - tolerance)` is a
`regression`, a failing finding named by component and host. The tolerance starts at
DEFAULT_TOLERANCE, widened to twice the relative spread seen when the run itself was noisier,
and a person may edit it in the file.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reports.evidence import Evidence
from reports.findings import Component, Finding

VERSION = 1
DEFAULT_TOLERANCE = 0.15  # a healthy rerun on a quiet node stays within 15% of its plateau
# storage shares its disks and servers with whatever else runs: a looser start
STORAGE_TOLERANCE = 0.25
MAX_TOLERANCE = 0.5
_KEY_FIELDS = ("kind", "scope", "op", "host", "device", "path", "workload", "direction")
KINDS = ("sweep", "node-intra", "node-pair", "storage", "node-storage", "host-link", "compute")


@dataclass(frozen=True, kw_only=True, slots=True)
class Figure:
    """One figure of a run, keyed so that a later run's same figure meets it."""

    kind: str  # one of KINDS
    component: Component  # a reports.findings component
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

    def __post_init__(self) -> None:
        assert self.kind in KINDS, self.kind

    @property
    def key(self) -> tuple[str, ...]:
        return tuple(str(getattr(self, f)) for f in _KEY_FIELDS)


@dataclass(frozen=True, kw_only=True, slots=True)
class Accepted:
    figure: Figure
    tolerance: float


@dataclass(frozen=True, kw_only=True, slots=True)
class Baseline:
    run_id: str
    created: str
    figures: tuple[Accepted, ...]
    file: str = ""

    def find(self, fig: Figure) -> Accepted | None:
        exact = {a.figure.key: a for a in self.figures}.get(fig.key)
        if exact is not None or fig.kind not in ("storage", "node-storage"):
            return exact
        # a check tests its own scratch dir: the same workload and direction on this node's
        # only accepted path of that scope stands in for the path
        same = [
            a
            for a in self.figures
            if dataclasses.replace(a.figure, path="").key == dataclasses.replace(fig, path="").key
        ]
        return same[0] if len(same) == 1 else None

    def size_for(self, host: str, op: str = "all_reduce") -> int:
        """The message size the accepted run's intra-node plateau of `host` was at (0: none)."""
        for a in self.figures:
            if a.figure.kind == "node-intra" and a.figure.op == op and a.figure.host in (host, ""):
                return a.figure.bytes
        return next((a.figure.bytes for a in self.figures if a.figure.kind == "node-intra"), 0)


# -- figures of a run -------------------------------------------------------------------
def _spread(rows: Any) -> list[float]:
    """busbw of each repeat at the figure's size (the run's spread; one record: none)."""
    return [float(v) for v in rows["busbw_GBps"]]


def _sweeps(ev: Evidence) -> list[Figure]:
    curves, df = ev.curves, ev.net.frame
    out = []
    for (scope, op), c in curves.items():
        if scope == "intra-node" and len(c.hosts) <= 1:
            continue  # one node's sweep: its node-intra figure says it
        size, bw = c.plateau()
        comp: Component = "intra-node network" if scope == "intra-node" else "inter-node network"
        at = df[(df["op"] == op) & (df["bytes"] == size) & (df["wrong"] == 0)]
        vals = _spread(at) or [bw]
        out.append(
            Figure(
                kind="sweep",
                component=comp,
                what=f"{scope} {op} busbw",
                value=bw,
                low=min(vals),
                high=max(vals),
                scope=scope,
                op=op,
                bytes=size,
                hosts=c.hosts,
            )
        )
    return out


def _node_intra(ev: Evidence) -> list[Figure]:
    """Each node's own intra-node plateau: records on one host (an `intra-node` sweep, or a
    `world` sweep of one node, as `stoker check` and `stoker run` take)."""
    df = ev.net.frame
    if df.empty:
        return []
    rows = df[(df["n_hosts"] == 1) & (df["wrong"] == 0) & (df["ranks"] >= 2) & (df["time_s"] > 0)]
    rows = rows[rows["scope"].isin(("intra-node", "world"))]
    out = []
    for (host, op), part in rows.groupby([rows["host"].astype(str), rows["op"].astype(str)], sort=True):
        size = int(part["bytes"].max())
        at = part[part["bytes"] == size]
        best = float(at["busbw_GBps"].max())
        vals = _spread(at)
        out.append(
            Figure(
                kind="node-intra",
                component="node",
                what=f"intra-node {op} busbw",
                value=best,
                low=min(vals),
                high=max(vals),
                op=op,
                host=host,
                bytes=size,
                hosts=(host,),
            )
        )
    return out


def _node_pairs(ev: Evidence) -> list[Figure]:
    scores = ev.pairs.scores
    return [
        Figure(
            kind="node-pair",
            component="node",
            what="best pair busbw (its own link)",
            value=v,
            scope="pair",
            host=h,
            hosts=(h,),
        )
        for h, v in sorted(scores.items())
    ]


def _storage(ev: Evidence) -> list[Figure]:
    best: dict[tuple[str, ...], list[float]] = {}
    per_host: dict[tuple[str, ...], list[float]] = {}
    single: set[tuple[str, ...]] = set()
    for r in ev.io:
        if r.failed or r.bw_GBps <= 0 or r.cache_suspect:
            continue  # a cached figure measured memory, not the storage: no baseline
        if len(r.per_host_bw_GBps) <= 1:
            single.add((r.scope, r.path, r.workload, r.direction))
        best.setdefault((r.scope, r.path, r.workload, r.direction), []).append(r.bw_GBps)
        for h, v in r.per_host_bw_GBps.items():
            per_host.setdefault((r.scope, r.path, r.workload, r.direction, h), []).append(v)
    aggregate = [
        _storage_figure(key, vals) for key, vals in sorted(best.items()) if key not in single
    ]  # a key in `single` is one node's record: its node-storage figure says it
    return aggregate + [_storage_figure(key[:4], vals, host=key[4]) for key, vals in sorted(per_host.items())]


def _storage_figure(key: tuple[str, ...], vals: list[float], host: str | None = None) -> Figure:
    """A storage figure (the aggregate, or one host's share with `host`), at its best repeat."""
    scope, path, wl, d = key
    return Figure(
        kind="storage" if host is None else "node-storage",
        component=("local storage" if scope == "local" else "shared storage") if host is None else "node",
        what=f"{wl} {d} on {path}",
        value=max(vals),
        low=min(vals),
        high=max(vals),
        scope=scope,
        path=path,
        workload=wl,
        direction=d,
        host=host or "",
        hosts=() if host is None else (host,),
    )


def _host_links(host_records: Sequence[Mapping[str, Any]]) -> list[Figure]:
    out = []
    for r in host_records:
        if r.get("component") != "host link":
            continue
        for field in ("h2d_pinned_GBps", "d2h_pinned_GBps"):
            v = r.get(field)
            if isinstance(v, (int, float)) and v > 0:
                host, dev = str(r.get("host", "")), str(r.get("device", ""))
                out.append(
                    Figure(
                        kind="host-link",
                        component="host link",
                        what=f"{field.split('_')[0]} pinned copy",
                        value=float(v),
                        op=field.split("_")[0],
                        host=host,
                        device=dev,
                        hosts=(host,),
                    )
                )
    return out


def _compute(records: Sequence[Mapping[str, Any]]) -> list[Figure]:
    """Each device's best-shape median TFLOPS per dtype (the statistic judging/compute.py
    judges), keyed by host, device slot and dtype: a GPU swapped into the slot is held to what
    the slot gave at acceptance. The spread is the best shape's median and maximum."""
    from reports.judging.compute import devices

    out = []
    for d in devices(records):
        slot = f"gpu{d.gpu}" if d.gpu is not None else f"cpu{d.proc}"
        high = d.max_tflops if isinstance(d.max_tflops, (int, float)) and d.max_tflops >= d.tflops else None
        out.append(
            Figure(
                kind="compute",
                component="gpu",
                what=f"{d.dtype} matmul TFLOPS",
                value=d.tflops,
                unit="TFLOPS",
                low=d.tflops,
                high=None if high is None else float(high),
                op=d.dtype,
                host=d.host,
                device=slot,
                hosts=(d.host,),
            )
        )
    return out


def figures(ev: Evidence) -> list[Figure]:
    """Every figure of a run that a baseline keeps and a later run is judged on."""
    return [
        *_sweeps(ev),
        *_node_intra(ev),
        *_node_pairs(ev),
        *_storage(ev),
        *_host_links(ev.host),
        *_compute(ev.compute),
    ]


def tolerance_for(fig: Figure, default: float = DEFAULT_TOLERANCE) -> float:
    """The default (storage: at least STORAGE_TOLERANCE), or twice the relative spread the
    accepted run itself showed."""
    if fig.kind in ("storage", "node-storage"):
        default = max(default, STORAGE_TOLERANCE)
    spread = (fig.value - fig.low) / fig.value if fig.low is not None and fig.value > 0 else 0.0
    return round(min(MAX_TOLERANCE, max(default, 2 * spread)), 3)


def make(run_id: str, created: str, figs: Iterable[Figure], default: float = DEFAULT_TOLERANCE) -> Baseline:
    return Baseline(
        run_id=run_id,
        created=created,
        figures=tuple(Accepted(figure=f, tolerance=tolerance_for(f, default)) for f in figs),
    )


# -- judging ------------------------------------------------------------------------------
def _fmt(x: float) -> str:
    return f"{x:.3g}"


def judge(baseline: Baseline, figs: Iterable[Figure]) -> list[Finding]:
    """One finding per figure the baseline also has: `regression` when it fell under the
    accepted value by more than the tolerance, else `ok`. Figures the baseline lacks are
    not judged here (the spec still judges them)."""
    out = []
    for fig in figs:
        acc = baseline.find(fig)
        if acc is None:
            continue
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
        out.append(
            Finding(
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
                    **({"device": fig.device} if fig.device else {}),
                },
            )
        )
    return out


def judge_evidence(baseline: Baseline, ev: Evidence) -> list[Finding]:
    """The one call the judgement makes with --baseline: this run's figures against the baseline."""
    return judge(baseline, figures(ev))
