"""One results directory reduced to what a buyer compares across trials (pure).

Per directory: each (scope, op) busbw curve with its ranks per node and per-size
iteration spread, each storage figure with its block size and procs, the verdict and the
findings that decide it, and — under a workload — where the GPUs wait (idle share by
component) and what the work costs:

    cost per useful GPU-hour = price per GPU-hour / (1 - idle share)
    wall time of one step    = compute time / (1 - idle share)
    $ per step               = price x GPUs x wall time of one step / 3600
    $ per billion tokens     = $ per step x 1e9 / tokens per step

A component the workload needs but that was not measured is *unmeasured*, never 0% idle:
the cluster gets no cost and says which measurement would give it one
(reports.fleet.ranking leaves it out of the ranking).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from reports.evidence import Evidence
from reports.evidence.sweeps import Sweep
from reports.shared.findings import FAILING, PARTS, Judgement
from reports.shared.records import IoRecord, procs_per_node

# the parts of a training job the GPUs can wait for, in the order a buyer reads them
COMPONENTS = PARTS
DECIDING = 3  # failing findings named per cluster


def finite(x: Any) -> TypeGuard[float]:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


@dataclass(frozen=True, kw_only=True, slots=True)
class IoFigure:
    """The best bandwidth of one storage workload measured one way: its tool, block size,
    processes (all nodes together) and nodes."""

    scope: str
    workload: str
    direction: str
    block: int
    procs: int
    bw: float
    path: str
    procs_per_node: int  # checkpoint writers or dataloader workers per node, as its record says
    backend: str = ""  # the tool: fio, torch.save, torch.dcp ("": not recorded)
    nodes: int = 1


@dataclass(frozen=True, kw_only=True, slots=True)
class ClusterSummary:
    name: str  # the spec's name, else the directory's
    run: str  # the directory (several runs of one cluster share a name)
    verdict: str
    failing: int
    findings: int
    deciding: tuple[str, ...] = ()  # messages of the findings that decide a fail
    accelerator: str | None = None
    curves: dict[tuple[str, str], Sweep] = field(default_factory=dict)  # as judged
    advertised: dict[str, float] = field(default_factory=dict)  # component -> GB/s the judgement used
    storage: tuple[IoFigure, ...] = ()
    price_per_gpu_hour: float | None = None
    workload: str | None = None
    gpus: int | None = None
    tokens_per_step: float | None = None
    compute_s: float | None = None
    appetite: str = ""  # the compute figure the model used (measured TFLOPS, catalog peak, compute_s)
    idle_share: float | None = None  # None: a needed component is unmeasured
    idle_by_component: dict[str, float | None] = field(
        default_factory=dict
    )  # parts of idle_share; None = unmeasured
    lacks: tuple[str, ...] = ()  # "what is missing: the command that measures it"
    problems: tuple[str, ...] = ()  # why this run cannot be ranked (lacks, price, spec)
    identity: str = ""  # which run this is (run_identity); "" when unknown: never a copy of another

    @property
    def cost_per_useful_gpu_hour(self) -> float | None:
        return cost_per_useful(self.price_per_gpu_hour, self.idle_share)

    @property
    def step_wall_s(self) -> float | None:
        if self.compute_s is None or self.idle_share is None or not 0 <= self.idle_share < 1:
            return None
        return _finite_or_none(self.compute_s / (1 - self.idle_share))

    @property
    def usd_per_step(self) -> float | None:
        w = self.step_wall_s
        if w is None or self.price_per_gpu_hour is None or not self.gpus:
            return None
        return _finite_or_none(self.price_per_gpu_hour * self.gpus * w / 3600)

    @property
    def usd_per_billion_tokens(self) -> float | None:
        s = self.usd_per_step
        return (
            None if s is None or not self.tokens_per_step else _finite_or_none(s * 1e9 / self.tokens_per_step)
        )

    @property
    def billion_tokens_per_day(self) -> float | None:
        w = self.step_wall_s
        return (
            None
            if w is None or not self.tokens_per_step
            else _finite_or_none(self.tokens_per_step * 86400 / w / 1e9)
        )

    @property
    def usd_per_day(self) -> float | None:
        if self.price_per_gpu_hour is None or not self.gpus:
            return None
        return _finite_or_none(self.price_per_gpu_hour * self.gpus * 24)


def _finite_or_none(x: float) -> float | None:
    return x if finite(x) else None


def run_identity(ev: Evidence) -> str:
    """What tells one run from another, whatever directory holds it: its run ids and a digest
    of its records' figures. A copy of a results directory has both of the original; two runs
    that reused one run id (STOKER_RUN_ID set to the same name each time) differ in figures."""
    import hashlib

    import pandas as pd

    h = hashlib.sha256("\n".join(sorted(ev.run_ids)).encode())
    f = ev.net.frame
    if len(f):
        part = f[["op", "scope", "host", "bytes", "ranks", "time_s", "busbw_GBps", "wrong"]]
        part = part.astype({c: str for c in ("op", "scope", "host")})  # categories differ by read path
        h.update(pd.util.hash_pandas_object(part, index=False).to_numpy().tobytes())
    for r in ev.io:
        h.update(repr((r.hosts, r.workload, r.direction, r.path, r.bytes, r.bw_GBps, r.runtime_s)).encode())
    return h.hexdigest()[:16]


def cost_per_useful(price: float | None, idle_share: float | None) -> float | None:
    """price / (1 - idle share); None when either is unknown, the GPUs never work, or it overflows."""
    if price is None or idle_share is None or not 0 <= idle_share < 1:
        return None
    return _finite_or_none(price / (1.0 - idle_share))


def io_figures(io: Sequence[IoRecord]) -> tuple[IoFigure, ...]:
    """Best bandwidth per (scope, workload, direction, block, procs, tool, nodes); failed,
    page-cache and non-finite results are left out (they say nothing about the storage)."""
    best: dict[tuple[str, str, str, int, int, str, int], IoRecord] = {}
    for r in io:
        if (
            r.failed
            or r.cache_suspect
            or r.bytes <= 0
            or r.workload == "metadata"
            or not finite(r.bw_GBps)
            or r.bw_GBps < 0
        ):
            continue
        key = (r.scope, r.workload, r.direction, r.block_size, r.procs, r.backend, r.nodes)
        if key not in best or r.bw_GBps > best[key].bw_GBps:
            best[key] = r
    return tuple(
        IoFigure(
            scope=k[0],
            workload=k[1],
            direction=k[2],
            block=k[3],
            procs=k[4],
            procs_per_node=procs_per_node(r),
            bw=r.bw_GBps,
            path=r.path,
            backend=k[5],
            nodes=k[6],
        )
        for k, r in sorted(best.items())
    )


def lack_line(component: str, row: Any) -> str:
    """Which measurement a model row lacks and the command that takes it."""
    scope = "inter-node" if str(row.component).startswith("inter") else "intra-node"
    if component == "tensor parallel":
        return "an intra-node all_reduce sweep (tensor parallel): run `stoker net --scopes intra-node --ops all_reduce`"
    if component == "data parallel":
        ops = "all_gather,reduce_scatter" if str(row.check).startswith("FSDP") else "all_reduce"
        ops = ",".join(row.extra.get("ops") or ()) or ops  # only the ops that are missing
        return f"an {scope} {ops.replace(',', ' + ')} sweep (data parallel): run `stoker net --scopes {scope} --ops {ops}`"
    if component == "dataloader":
        return "a dataloader_read measurement: run `stoker io --path DATASET_DIR --workloads dataloader`"
    return "a checkpoint_write measurement: run `stoker io --path CHECKPOINT_DIR --workloads checkpoint`"


def idle_parts(rows: Sequence[Any], summary: Mapping[str, Any]) -> tuple[dict[str, float | None], list[str]]:
    """Each component's part of the total idle share, so that the parts add up to it.

    The model (reports.judging.workload.model) sums the exposed seconds of network and dataloader
    over one step (busy = sum e / (base + sum e)) and multiplies in the checkpoint stall:
    total = 1 - (1 - busy)(1 - ck). Component i's part is e_i / (base + sum e) and the
    checkpoint's is ck x (1 - busy). A row the records could not feed is None (unmeasured),
    and then only the unmeasured parts are returned: a split with a hole in it is no split."""
    parts: dict[str, float | None] = {}
    lacks: list[str] = []
    step_rows = [r for r in rows if r.part != "checkpoint"]
    measured = [
        r
        for r in step_rows
        if r.status != "no_reference" and finite(r.idle_share) and finite(r.extra.get("exposed_s", 0.0))
    ]
    dl = next((r for r in step_rows if r.part == "dataloader"), None)
    base = (
        summary.get("compute_s")
        if finite(summary.get("compute_s"))
        else (dl.extra.get("base_s") if dl else None)
    )
    total_e = sum(float(r.extra.get("exposed_s", 0.0)) for r in measured)
    busy = total_e / (base + total_e) if finite(base) and base + total_e > 0 else 0.0
    for r in rows:
        comp = r.part
        ok = (
            r.status != "no_reference" and finite(r.idle_share) and (r.achieved is None or finite(r.achieved))
        )
        if not ok:
            parts[comp] = None
            lacks.append(lack_line(comp, r))
        elif comp == "checkpoint":
            parts[comp] = float(r.idle_share) * (1 - busy)
        else:
            e = float(r.extra.get("exposed_s", 0.0))
            parts[comp] = e / (base + total_e) if finite(base) and base + total_e > 0 else 0.0
    if lacks:
        # the split only where it is whole: with a part unmeasured the others are not
        # parts of anything (one cluster's checkpoint part shrank under its measured 97% tensor
        # parallel idle while another's unmeasured tensor parallel counted as nothing); only the
        # missing parts stay, as unmeasured, and `lacks` says which measurement gives them
        parts = {c: v for c, v in parts.items() if v is None}
    return parts, lacks


MIN_PRICE = 0.01  # $ per GPU-hour: a cent; less is a typo or a unit slip, never a price


def summarise(
    name: str, run: str, ev: Evidence, judgement: Judgement, spec: Any = None, workload: Any = None
) -> ClusterSummary:
    """One directory's summary; `problems` says why it cannot be ranked."""
    problems: list[str] = []
    price = getattr(spec, "price_per_gpu_hour", None)
    if spec is None:
        problems.append(
            "no spec.yaml in its directory (price and accelerator unknown): put the cluster's spec there"
        )
    elif price is None:
        problems.append("no price_per_gpu_hour in its spec")
    elif not finite(price) or price <= 0:
        problems.append(f"price_per_gpu_hour {price} is not a positive price")
        price = None
    elif price < MIN_PRICE:
        problems.append(
            f"price_per_gpu_hour {price:g} is under a cent per GPU-hour: not a price (give $ per GPU-hour)"
        )
        price = None
    summary: Mapping[str, Any] = judgement.model_summary or {}
    parts: dict[str, float | None] = {}
    lacks: list[str] = []
    idle: float | None = None
    if workload is not None:
        if judgement.model:
            parts, lacks = idle_parts(judgement.model, summary)
        if "why" in summary or not judgement.model:
            lacks.append(f"a model of {judgement.workload_name}: {summary.get('why', 'nothing to model')}")
        idle_total = summary.get("idle_share")
        if not lacks and finite(idle_total) and 0 <= idle_total < 1:
            idle = float(idle_total)
        problems += [f"lacks {x}" for x in lacks]
    acc = getattr(getattr(spec, "accelerator", None), "name", None)
    tokens = getattr(workload, "global_batch_tokens", None)
    compute = summary.get("compute_s")
    s = ClusterSummary(
        name=name,
        run=run,
        verdict=judgement.verdict,
        failing=sum(f.status in FAILING for f in judgement.findings),
        findings=len(judgement.findings),
        deciding=tuple(
            f.message
            for f in sorted(judgement.findings, key=lambda f: (f.status != "below_spec", f.component))
            if f.status in FAILING
        )[:DECIDING],
        accelerator=acc,
        curves=dict(sorted(ev.curves.items())),
        advertised=dict(judgement.expected),
        storage=io_figures(ev.io),
        price_per_gpu_hour=float(price) if price is not None else None,
        workload=judgement.workload_name,
        gpus=summary.get("gpus") if workload is not None else None,
        tokens_per_step=float(tokens) if finite(tokens) else None,
        compute_s=float(compute) if finite(compute) else None,
        appetite=appetite_words(summary),
        idle_share=idle,
        idle_by_component=parts,
        lacks=tuple(lacks),
        problems=tuple(problems),
        identity=run_identity(ev),
    )
    if workload is not None and not s.problems and s.cost_per_useful_gpu_hour is None:
        return _with_problem(s, f"price_per_gpu_hour {price:g} gives no finite cost")
    if workload is not None and not s.problems and s.tokens_per_step and s.usd_per_billion_tokens is None:
        return _with_problem(s, f"price_per_gpu_hour {price:g} gives no finite cost")
    return s


def appetite_words(summary: Mapping[str, Any]) -> str:
    """The model's compute figure in words: what the ranking's cost of work rests on."""
    figure = summary.get("compute_figure")
    return f"{figure}: {summary.get('compute_from', '')}" if figure else ""


def _with_problem(s: ClusterSummary, why: str) -> ClusterSummary:
    from dataclasses import replace

    return replace(s, problems=(*s.problems, why))
