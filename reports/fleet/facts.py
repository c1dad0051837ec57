"""What a buyer signs on, per run of a comparison (pure): whether it passed and why not, how
many GPUs its storage feeds, which figures stand for more nodes than were measured, and the
command of the tool its files came from.

GPUs fed (MLPerf Storage's question, "the maximum number of accelerators at AU >= 90%", at the
workload's idle budget b instead of 10%): reads are prefetched, so the GPUs wait only for what
the storage cannot deliver, and a GPU waits at most b of its time while the storage delivers at
least (1 - b) of its demand. So

    GPUs fed = measured read rate / ((1 - b) x per-GPU demand)

with the per-GPU demand the starvation model's dataloader demand per node over the GPUs per node
(docs/model.md). Shared storage: the rate is the aggregate the run measured (all its nodes
together), a floor when fewer nodes measured it than the job has. Local storage: each node
feeds its own GPUs, so the figure is per node.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reports.evidence import Evidence
from reports.judging.storage import ckpt_save
from reports.judging.workload.needs import pick_io
from reports.shared.findings import FAILING, Judgement, ModelRow

# the tools whose files stoker imports (backend of their records) -> how to take the measurement
# again with that tool; {op} an op name, {g} GPUs per node, {n} ranks of two nodes
NET_TOOL = {
    "nccl-tests": {
        "intra-node": ("{op}_perf -b 8 -e 8G -f 2 -g {g}", "on one node"),
        "inter-node": ("mpirun -np {n} -N {g} {op}_perf -b 8 -e 8G -f 2 -g 1", "on two nodes"),
    },
}
IO_TOOL = {
    "fio": {
        "dataloader": "fio --name=dataloader --directory=DATASET_DIR --rw=randread --bs=1M --direct=1 "
        "--numjobs={g} --size=4G --runtime=60 --time_based --group_reporting --output-format=json",
        "checkpoint": "fio --name=checkpoint --directory=CHECKPOINT_DIR --rw=write --bs=4M --direct=1 "
        "--numjobs={g} --size=8G --group_reporting --output-format=json",
    },
}


@dataclass(frozen=True, kw_only=True, slots=True)
class Fed:
    """How many GPUs the dataloader's storage feeds at the idle budget."""

    gpus: float
    per_node: bool  # local storage: per node
    floor: bool  # shared storage measured from fewer nodes than the job has
    note: str
    job_gpus: int | None = None  # the workload's GPUs (per node for local storage): the bound
    per_node_gpus: int | None = None  # GPUs per node, the bound of a per-node figure

    @property
    def bound(self) -> int | None:
        return self.per_node_gpus if self.per_node else self.job_gpus

    @property
    def all_fed(self) -> bool:
        """The storage feeds every GPU the job has (a figure past that is headroom, not GPUs)."""
        return self.bound is not None and self.gpus >= self.bound

    @property
    def text(self) -> str:
        at_least = "≥ " if self.floor else ""
        if self.all_fed and self.bound:
            whose = "each node's" if self.per_node else "the job's"
            r = self.gpus / self.bound
            times = f"{r:,.0f}" if r >= 10 else f"{r:.2g}"
            return (
                f"all {self.bound:,} of {whose} GPUs: the reads keep up with {at_least}{times}x "
                f"their demand ({self.note})"
            )
        n = f"{self.gpus:,.0f}" if self.gpus >= 10 else f"{self.gpus:.2g}"
        of = f" of the job's {self.job_gpus:,}" if self.job_gpus and not self.per_node else ""
        return at_least + n + (" per node" if self.per_node else "") + of + f" ({self.note})"


@dataclass(frozen=True, kw_only=True, slots=True)
class Promise:
    """A promise the run did not keep, reconciled with the cost: how much of the step the
    workload's GPUs wait for that component (0 where the job does not wait on it)."""

    component: str
    check: str
    measured: float | None
    expected: float | None
    unit: str
    idle_share: float | None  # None: the workload does not use the component at all
    usd_per_day: float | None

    @property
    def text(self) -> str:
        head = f"{self.component}: {self.check}{_pct(self.measured, self.expected, self.unit)}"
        unit = ""
        if self.idle_share is None:
            return f"{head}{unit}: under the promise, but this workload does not use it: 0.0% idle"
        if self.idle_share <= 0:
            return f"{head}{unit}: under the promise, but this workload does not wait on it: 0.0% idle"
        usd = f", ${self.usd_per_day:,.0f} a day" if self.usd_per_day is not None else ""
        return (
            f"{head}{unit}: under the promise, and this workload waits on it: {self.idle_share:.1%} idle{usd}"
        )


# a finding about one part of a network (a node's links, a pair's path, a port) costs what the
# model's row of that network costs; a storage finding of one workload costs that workload's row
WHOSE_NETWORK = {
    "link": "inter-node network",
    "network port": "inter-node network",
    "nvlink": "intra-node network",
}
STORAGE_PART = {"checkpoint": "checkpoint", "dataloader": "dataloader"}


def _costs(component: str, check: str, row: ModelRow) -> bool:
    """Whether the model row `row` waits on what the finding (component, check) is about."""
    if component == "node":
        component = "intra-node network" if "intra-node" in check else "inter-node network"
    component = WHOSE_NETWORK.get(component, component)
    if row.component != component:
        return False
    part = next((p for k, p in STORAGE_PART.items() if check.startswith(k)), None)
    return part is None or row.part == part


def promises(j: Judgement) -> tuple[Promise, ...]:
    """Each below-spec promise (one per component and check) with the idle its component causes in
    the workload's model (the model rows of that component, summed)."""
    out: dict[tuple[str, str], Promise] = {}
    for f in j.findings:
        if f.status != "below_spec" or (f.component, f.check) in out:
            continue
        rows = [r for r in j.model if r.status != "no_reference" and _costs(f.component, f.check, r)]
        idle = sum(r.idle_share for r in rows) if rows else None
        usd = [r.usd_per_day for r in rows if r.usd_per_day is not None]
        out[(f.component, f.check)] = Promise(
            component=f.component,
            check=f.check,
            measured=f.measured,
            expected=f.expected,
            unit=f.unit,
            idle_share=idle,
            usd_per_day=sum(usd) if usd else None,
        )
    return tuple(out.values())


@dataclass(frozen=True, kw_only=True, slots=True)
class RunFacts:
    run: str
    verdict: str
    why_not_pass: str  # "" when it passed
    fed: Fed | None
    extrapolated: tuple[str, ...]
    advice: tuple[str, ...]  # the command of the tool the run's files came from, per lacking measurement
    promises: tuple[Promise, ...] = ()  # each failing promise and what it costs this workload


def _pct(measured: float | None, expected: float | None, unit: str = "") -> str:
    """ " at 72% of 50 GB/s": the share of the promise, with the promise's unit."""
    if measured is None or expected is None or not expected > 0 or not math.isfinite(measured / expected):
        return ""
    return f" at {measured / expected:.0%} of {expected:.4g}" + (f" {unit}" if unit else "")


def why_not_pass(j: Judgement) -> str:
    """One clause: why the verdict is not pass ("" when it is)."""
    if j.verdict == "pass":
        return ""
    if j.verdict == "fail":
        bad = [f for f in j.findings if f.status in FAILING]
        bad.sort(key=lambda f: (f.status != "below_spec", f.component))
        first = bad[0] if bad else None
        head = f"{len(bad)} failing finding{'s' if len(bad) != 1 else ''}"
        return head + (
            f", first {first.status} {first.component}: {first.check}{_pct(first.measured, first.expected, first.unit)}"
            if first
            else ""
        )
    if j.verdict == "incomplete":
        more = f" (and {len(j.missing) - 1} more)" if len(j.missing) > 1 else ""
        return f"incomplete: {j.missing[0]}{more}" if j.missing else "incomplete"
    return "unjudged: nothing could be compared with a reference"


def job_nodes(summary: Mapping[str, Any]) -> int | None:
    gpus, g = summary.get("gpus"), summary.get("gpus_per_node")
    if not isinstance(gpus, int) or not isinstance(g, int) or g <= 0:
        return None
    return ckpt_save.job_nodes(gpus, g)


def gpus_fed(ev: Evidence, j: Judgement, spec: Any, workload: Any) -> Fed | None:
    """The module docstring's GPUs fed, from the model's dataloader row and its record."""
    dl = getattr(workload, "dataloader", None)
    row = next((r for r in j.model if r.part == "dataloader" and r.status != "no_reference"), None)
    if dl is None or row is None or not row.required or row.achieved is None:
        return None
    g = int(row.extra.get("gpus_per_node") or 1)
    rec = pick_io(ev.io, "dataloader_read", dl.path, spec)
    if rec is None:
        return None
    budget = float(workload.idle_budget)
    per_gpu = row.required / g
    local = row.component == "local storage"
    nodes = max(1, rec.nodes)
    rate = row.achieved if local else row.achieved * nodes
    fed = rate / ((1 - budget) * per_gpu)
    if not math.isfinite(fed):
        return None
    job = job_nodes(j.model_summary)
    floor = not local and job is not None and nodes < job
    where = f"{row.component} {rec.path}"
    note = (
        f"{where}, per node: {rate:.3g} GB/s / ((1 − {budget:g}) × {per_gpu:.3g} GB/s per GPU)"
        if local
        else f"{where}, {rate:.3g} GB/s from {nodes} node{'s' if nodes != 1 else ''} / "
        f"((1 − {budget:g}) × {per_gpu:.3g} GB/s per GPU)"
        + (f"; a floor: the job has {job} nodes" if floor else "")
    )
    gpus = j.model_summary.get("gpus")
    return Fed(
        gpus=fed,
        per_node=local,
        floor=floor,
        note=note,
        job_gpus=gpus if isinstance(gpus, int) else None,
        per_node_gpus=g,
    )


def extrapolated(ev: Evidence, j: Judgement) -> tuple[str, ...]:
    """Figures the model takes for the whole job from fewer nodes than it has."""
    job = job_nodes(j.model_summary)
    if job is None or job <= 1:
        return ()
    out = []
    inter = [c.nodes for (sc, _), c in ev.curves.items() if sc == "inter-node"]
    if inter and max(inter) < job:
        out.append(f"inter-node network measured on {max(inter)} of the job's {job} nodes")
    for wl, what in (("dataloader_read", "dataloader reads"), ("checkpoint_write", "checkpoint writes")):
        recs = [r for r in ev.io if r.workload == wl and not r.failed]
        if recs:
            n = max(r.nodes for r in recs)
            if n < job:
                out.append(f"{what} measured on {n} of the job's {job} nodes")
    return tuple(out)


def tool_advice(ev: Evidence, j: Judgement) -> tuple[str, ...]:
    """For each measurement the model lacks, the command of the tool the run's files came from."""
    net_tools = set(ev.net.frame["backend"]) if len(ev.net) else set()
    io_tools = {r.backend for r in ev.io}
    g = j.model_summary.get("gpus_per_node") or 8
    out = []
    for r in j.model:
        if r.status != "no_reference":
            continue
        if r.part in ("dataloader", "checkpoint"):
            for tool in sorted(io_tools & set(IO_TOOL)):
                out.append(f"with {tool}, as this run's files were: `{IO_TOOL[tool][r.part].format(g=g)}`")
            continue
        scope = "inter-node" if str(r.component).startswith("inter") else "intra-node"
        ops = r.extra.get("ops") or (
            ["all_gather", "reduce_scatter"] if str(r.check).startswith("FSDP") else ["all_reduce"]
        )
        for tool in sorted(net_tools & set(NET_TOOL)):
            cmd, where = NET_TOOL[tool][scope]
            cmds = " and ".join(f"`{cmd.format(op=op, g=g, n=2 * g)}`" for op in ops)
            out.append(f"with {tool}, as this run's files were: {cmds} {where}")
    return tuple(dict.fromkeys(out))


def run_facts(run: str, ev: Evidence, j: Judgement, spec: Any, workload: Any) -> RunFacts:
    return RunFacts(
        run=run,
        verdict=j.verdict,
        why_not_pass=why_not_pass(j),
        fed=gpus_fed(ev, j, spec, workload) if workload is not None else None,
        extrapolated=extrapolated(ev, j) if workload is not None else (),
        advice=tool_advice(ev, j) if workload is not None else (),
        promises=promises(j) if workload is not None else (),
    )


def merged_fed(facts: Sequence[RunFacts]) -> Fed | None:
    """The median over runs of the GPUs fed (None when a run has none)."""
    feds = [f.fed for f in facts]
    if not feds or any(f is None for f in feds):
        return None
    have = [f for f in feds if f is not None]
    med = statistics.median(f.gpus for f in have)
    first = have[0]
    note = first.note if len(have) == 1 else f"median over {len(have)} runs; {first.note}"
    return Fed(
        gpus=med,
        per_node=first.per_node,
        floor=any(f.floor for f in have),
        note=note,
        job_gpus=first.job_gpus,
        per_node_gpus=first.per_node_gpus,
    )
