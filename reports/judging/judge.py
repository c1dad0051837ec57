"""Judgement: evidence + spec + workload (+ the phases that went missing) -> findings and
the verdict, decided here once (pure; reads no file).

judge() builds one Context and runs the judges of JUDGES over it, in order — the sweep plateaus
against advertised figures (reports.judging.advertised, through reports.judging.confirm), the
node and link culprits (reports.judging.network.localise, reports.judging.network.groups), the
node inventory (reports.judging.node.inventory), NCCL's own words
(reports.judging.network.diagnosis), the starvation model (reports.judging.workload.model) and
coverage — then decides the verdict over their findings. Without a spec, the hardware the hosts
detected stands in for one; with neither, findings are `no_reference` (never a guessed figure).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Sequence
from typing import Any

from reports.evidence import Evidence
from reports.evidence.rails import untested_note
from reports.judging import confirm, cpu_path
from reports.judging.coverage import Coverage, Scope, assess
from reports.judging.fleet.baseline import Baseline
from reports.judging.fleet.baseline_figures import judge_evidence
from reports.judging.fleet.stability import stability
from reports.judging.network import diagnosis, reference
from reports.judging.network.groups import group_findings
from reports.judging.network.localise import localise
from reports.judging.network.nic_counters import sweep_counter_findings
from reports.judging.network.rail_nic import name_nics
from reports.judging.node.compute import appetite, compute_findings, compute_notes
from reports.judging.node.inventory import explain, host_link_figures, judge_inventory
from reports.judging.node.port_roles import ports_not_counted
from reports.judging.storage import savepath
from reports.judging.workload import model
from reports.judging.workload.needs import need_lines, pick_io, place, runs_on
from reports.judging.workload.workload import Workload
from reports.shared.findings import Component, Finding, Judgement, ModelRow, verdict_of
from reports.shared.records import IoRecord
from reports.shared.runs import IMPORTED
from reports.shared.spec import Spec, given_scopes, match_storage, thresholds_of
from reports.shared.spread import Spread, spread_of, threshold_note
from reports.shared.storage_rule import iops_note, judged_by_iops
from reports.table.read import SkippedLine

_FIX = {
    "inter-node network": "fix below-spec links first, or keep more parallelism inside the node so fewer bytes cross nodes",
    "intra-node network": "check the intra-node links (nvidia-smi topo -m) or lower the tensor-parallel degree",
    "dataloader": "stage the dataset on local NVMe, add storage bandwidth, or add dataloader workers",
    "checkpoint": "checkpoint asynchronously, less often, or to faster storage",
}


def _component(r: IoRecord | None, spec: Spec | None) -> Component:
    if r is None:
        return "shared storage"
    e = match_storage(r.path, spec.storage) if spec else None
    return "local storage" if (e.kind if e else r.scope) == "local" else "shared storage"


def _num(x: float) -> str:
    """3 significant figures without exponents for the sizes people read: 1302 -> '1,302'."""
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}" if x >= 0.001 else f"{x:.2e}"


def _model_finding(row: ModelRow, wname: str, budget: float, price: float | None) -> Finding:
    share, unit = row.idle_share, row.unit
    key = row.part if row.part in ("dataloader", "checkpoint") else row.component
    if row.status == "no_reference":
        msg = f"{row.check} cannot be modelled: {row.extra.get('why', 'nothing measured')}; measure it to judge the workload."
    else:
        assert row.required is not None and row.achieved is not None
        head = f"{wname}: {row.check} needs {_num(row.required)} {unit} and gets {_num(row.achieved)}"
        if row.status == "starving":
            cost = (
                f", about ${row.usd_per_day:,.0f} a day at ${price:g}/GPU-hour"
                if row.usd_per_day is not None and price
                else ""
            )
            msg = f"{head}: the GPUs would wait {share:.0%} of the time (budget {budget:.0%}){cost}; {_FIX[key]}."
        else:
            msg = f"{head}: the GPUs would wait {share:.1%} of the time, within the {budget:.0%} budget."
        if row.extra.get("floor"):  # storage measured from fewer nodes than the job writes from
            msg = f"{msg[:-1]} ({row.extra['floor']})."
    return Finding(
        component=row.component,
        check=f"workload {wname}: {row.check}",
        status=row.status,
        measured=row.achieved,
        expected=row.required,
        unit=unit,
        hosts=(),
        message=msg,
        extra={
            "idle_share": round(share, 4),
            "usd_per_day": row.usd_per_day,
            "note": row.extra.get("note", ""),
        },
    )


def _in_spread(f: Finding, spread: Spread) -> Finding:
    """The checkpoint finding, saying so when its threshold lies inside the saves' spread."""
    if f.measured is None or f.expected is None:
        return f
    note = threshold_note(spread, f.measured, f.expected, f.unit)
    if not note:
        return f
    extra = {**f.extra, "threshold_in_spread": True, "spread": spread.text()}
    return dataclasses.replace(f, message=f"{f.message[:-1]}; {note}.", extra=extra)


def _appetite(ev: Evidence, workload: Workload, spec: Spec | None) -> dict[str, Any]:
    """The matmul ceiling measured on the accelerator the workload runs on (never another's)."""
    a = appetite(ev.compute, workload.dtype, runs_on(workload, spec))
    return {} if a is None else {"compute_tflops": a.tflops, "compute_desc": a.desc}


def _ranks_in_node(frame: Any) -> dict[str, int]:
    """The most ranks a sweep inside one node ran on each host (intra-node and one-node world
    sweeps of GPU ranks; the pair and groups tests use two ranks by design, a CPU run no GPU)."""
    inside = frame[
        (frame["nodes"] == 1)
        & frame["scope"].isin(("intra-node", "world"))
        & (frame["n_hosts"] >= 1)
        & (frame["device"].astype(str) != "cpu")
    ]
    if inside.empty:
        return {}
    most = inside.groupby(inside["host"].astype(str), observed=True)["ranks"].max()
    return {str(h): int(r) for h, r in most.items()}


def _skipped_notes(skipped: Sequence[SkippedLine]) -> list[str]:
    if not skipped:
        return []
    shown = "; ".join(f"{s.file}:{s.line} {s.reason}" for s in skipped[:5])
    more = f" (and {len(skipped) - 5} more)" if len(skipped) > 5 else ""
    return [f"{len(skipped)} unreadable line(s) skipped: {shown}{more}"]


@dataclasses.dataclass(kw_only=True, slots=True)
class Context:
    """What every judge reads, built once (`context()`), and what the judges add beside their
    findings: notes for the report, the advertised figures charted, the starvation model."""

    ev: Evidence
    written: Spec | None  # the spec as the user wrote it: its promises are what coverage holds
    spec: Spec | None  # the spec with the detected hardware filled in (confirm.judged_spec)
    workload: Workload | None
    baseline: Baseline | None
    set_aside: Sequence[Finding]
    nodes: int
    coverage: Coverage
    notes: list[str] = dataclasses.field(default_factory=list)
    expected: dict[str, float] = dataclasses.field(default_factory=dict)
    model: list[ModelRow] = dataclasses.field(default_factory=list)
    summary: dict[str, Any] = dataclasses.field(default_factory=dict)
    cpu_path: bool = False  # every collective ran on CPU ranks of a machine that showed no GPU


# a judge: the context and the findings so far -> the findings after it (most add theirs at
# the end; some explain or order what came before)
JudgeFn = Callable[[Context, list[Finding]], list[Finding]]


def judge_network(c: Context, findings: list[Finding]) -> list[Finding]:
    """The sweeps' plateaus against the spec, or against what healthy systems reach; a figure
    measured again judged by both."""
    ev = c.ev
    found, expected = confirm.compare_network(
        ev.curves,
        ev.confirm_curves,
        c.spec,
        written=given_scopes(c.written),
        env=reference.run_env(ev.manifests),
    )
    c.expected.update(expected)
    if any(f.extra.get("basis") == "reference" for f in found):
        c.notes.append(
            "no spec for the network: judged against what healthy systems of the detected kind reach "
            "(reports/judging/catalog/references.yaml; each finding names its source)"
        )
    return [*findings, *found]


def judge_storage(c: Context, findings: list[Finding]) -> list[Finding]:
    """Each storage figure against the spec's, a figure measured again judged beside it; small
    random I/O is named by its IOPS, unjudged."""
    found, expected = confirm.compare_storage([*c.ev.io, *c.ev.io_again], c.spec)
    c.notes += [iops_note(r) for r in c.ev.io if judged_by_iops(r)]
    c.expected.update(expected)
    return [*findings, *found]


def judge_culprits(c: Context, findings: list[Finding]) -> list[Finding]:
    """The slow node or link, confirmed where it was measured again, and the NIC behind a slow
    rail; a NIC whose counters rose on a fine rail."""
    ev, spec = c.ev, c.spec
    located = localise(ev.pairs, ev.net.frame, ev.io, spec.inter_node_per_gpu_GBps if spec else None)
    located = confirm.confirm_nodes(located, ev.confirm_frame)  # a node's intra-node sweep measured again
    located = confirm.confirm_storage_nodes(located, ev.io_again)  # a node's storage test measured again
    c.notes += ev.confirm_notes  # records marked as confirmations that confirm nothing: left out, named
    c.notes += [n for n in [untested_note(ev.pairs.untested)] if n]  # (host, rail)s no pair test measured
    named = name_nics(located + group_findings(ev.search), ev.host, ev.counters)  # (host, rail): its NIC
    return [*findings, *named, *sweep_counter_findings(named, ev.host, ev.counters)]


def judge_stability(c: Context, findings: list[Finding]) -> list[Finding]:
    """A soak's dips, drift and counters."""
    return [*findings, *stability(c.ev.soak, c.ev.io, c.ev.counters)]


def judge_baseline(c: Context, findings: list[Finding]) -> list[Finding]:
    """The accepted run's figures beside the spec's (--baseline)."""
    return [*findings, *judge_evidence(c.baseline, c.ev)] if c.baseline is not None else findings


def judge_node(c: Context, findings: list[Finding]) -> list[Finding]:
    """The inventory's findings, and the inventory's explanation of the figures before them;
    unused and storage RDMA ports listed, not judged."""
    inventory = judge_inventory(c.ev.host, c.spec)
    c.notes += ports_not_counted(c.ev.host)
    return [*explain(findings, inventory), *inventory]


def judge_nccl_words(c: Context, findings: list[Finding]) -> list[Finding]:
    """NCCL's own words: wrong data and errors first, then what contradicts the spec, and the
    cause its lines show beside each failing network figure (reports/judging/network/diagnosis.py)."""
    ev = c.ev
    return [
        *diagnosis.correctness_findings(ev.sweeps, ev.manifests),
        *diagnosis.misconfigured_findings(ev.manifests, c.written, c.nodes, ev.host),
        *diagnosis.collapse_findings(ev.curves),
        *diagnosis.explain(findings, ev.manifests),
    ]


def judge_compute(c: Context, findings: list[Finding]) -> list[Finding]:
    """Slow GPUs, the fleet against its peak; the measured appetite, judged or not."""
    c.notes += compute_notes(c.ev.compute)
    return [*findings, *compute_findings(c.ev.compute)]


def judge_workload(c: Context, findings: list[Finding]) -> list[Finding]:
    """The starvation model of the workload (--workload): how long its accelerators would wait
    for each component, one finding per part of the step."""
    ev, spec, workload = c.ev, c.spec, c.workload
    if workload is None:
        return findings
    dl_path = workload.dataloader.path if workload.dataloader else None
    ck_path = workload.checkpoint.path if workload.checkpoint else None
    rd = pick_io(ev.io, "dataloader_read", dl_path, spec)
    # the save the workload makes, at its place (never the faster of two)
    ck_fmt = workload.checkpoint.format if workload.checkpoint else "torch.save"
    save = savepath.pick(place(ev.io, "checkpoint_write", ck_path, spec), ck_fmt)
    wr = save.record if save else None
    measured = model.Measured(
        curves=ev.curves,
        read_GBps_per_node=rd.bw_GBps / max(1, rd.nodes) if rd else None,
        read_component=_component(rd, spec),
        save=save,
        write_component=_component(wr, spec),
        # gloo on CPU ranks shares the cores with compute; NCCL on GPUs does not
        cpu_ranks=ev.cpu_ranks,
        **host_link_figures(ev.host),
        **_appetite(ev, workload, spec),  # the measured matmul ceiling
    )
    c.model, c.summary = model.starvation(workload, spec, measured)
    if "why" in c.summary:
        c.notes.append(f"workload {workload.name}: {c.summary['why']}")
    price = spec.price_per_gpu_hour if spec else None
    spread = spread_of(save.record) if save and save.record else None
    return [
        *findings,
        *(
            _in_spread(_model_finding(r, workload.name, workload.idle_budget, price), spread)
            if r.part == "checkpoint" and spread is not None
            else _model_finding(r, workload.name, workload.idle_budget, price)
            for r in c.model
        ),
    ]


def judge_coverage(c: Context, findings: list[Finding]) -> list[Finding]:
    """Every promise of the spec and need of the workload that was not measured, or not met."""
    return [*findings, *c.coverage.findings]


def judge_hardware_found(c: Context, findings: list[Finding]) -> list[Finding]:
    """A spec that promises GPUs to a machine that showed none (an H100 spec on a CPU machine):
    one mismatch finding, the figures shown but not compared (reports/judging/cpu_path.py)."""
    ev = c.ev
    c.cpu_path = cpu_path.cpu_path(ev.cpu_ranks, ev.host, ev.hardware, ev.manifests)
    if not (c.cpu_path and cpu_path.promises_gpus(c.written)):
        return findings
    assert c.written is not None
    hosts = tuple(sorted({str(r.get("host")) for r in ev.host if r.get("host")}))
    for k in [k for k in c.expected if k in cpu_path.NETWORK]:
        del c.expected[k]  # not drawn against
    return [cpu_path.mismatch(c.written, hosts), *(cpu_path.not_compared(f) for f in findings)]


def judge_set_aside(c: Context, findings: list[Finding]) -> list[Finding]:
    """The nodes the job's preflight left out, first: the rest was judged without them."""
    return [*c.set_aside, *findings]


# The judges, in order: adding a judge is adding a function and a row.
JUDGES: tuple[tuple[str, JudgeFn], ...] = (
    ("network", judge_network),
    ("storage", judge_storage),
    ("culprits", judge_culprits),
    ("stability", judge_stability),
    ("baseline", judge_baseline),
    ("node", judge_node),
    ("NCCL's words", judge_nccl_words),
    ("compute", judge_compute),
    ("workload", judge_workload),
    ("coverage", judge_coverage),
    ("hardware found", judge_hardware_found),
    ("set aside", judge_set_aside),
)


def context(
    ev: Evidence,
    spec: Spec | None,
    workload: Workload | None,
    *,
    scope: Scope,
    skipped: Collection[str],
    baseline: Baseline | None,
    set_aside: Sequence[Finding],
) -> Context:
    """What every judge reads: the spec as written and with the detected hardware filled in,
    the workload's needs and the spec's promises against what the run measured (coverage)."""
    hardware = ev.hardware
    written = spec
    # what the hosts showed, else the devices an imported log's ranks named: a fresh cluster's
    # links are then judged against what healthy systems reach on them (reports.judging.network.reference)
    spec = confirm.judged_spec(spec, hardware, ev.manifests)
    scopes = {sc for sc, _ in ev.curves}
    nodes = int(ev.net.frame["nodes"].max()) if len(ev.net) else 0
    needs = (
        need_lines(
            workload,
            spec,
            scopes=scopes,
            nodes=nodes,
            io=ev.io,
            compute=ev.compute,
            skipped=skipped,
            scope=scope,
        )
        if workload is not None
        else []
    )
    cov = assess(
        written,
        scopes,
        nodes,
        ev.io,
        ev.hardware,
        manifests=ev.manifests,
        scope=scope,
        skipped=skipped,
        needs=needs,
        imported=not ev.host and not ev.compute and all(r.startswith(IMPORTED) for r in ev.run_ids),
        ranks_on=_ranks_in_node(ev.net.frame) if len(ev.net) else {},
    )
    notes = _skipped_notes(ev.skipped)
    if spec is not None and spec.detected:
        notes.append("from hardware detection: " + ", ".join(spec.detected))
    notes.extend(hardware.get("disagreements", []))
    if ev.wrong:
        notes.append(
            f"{ev.wrong} net record(s) failed the correctness check (#wrong > 0) and were left out of the bandwidth figures"
        )
    return Context(
        ev=ev,
        written=written,
        spec=spec,
        workload=workload,
        baseline=baseline,
        set_aside=set_aside,
        nodes=nodes,
        coverage=cov,
        notes=notes,
    )


def judge(
    ev: Evidence,
    spec: Spec | None = None,
    workload: Workload | None = None,
    missing: Sequence[str] = (),
    *,
    scope: Scope = "cluster",
    skipped: Collection[str] = (),
    baseline: Baseline | None = None,
    set_aside: Sequence[Finding] = (),
) -> Judgement:
    """The judgement of one results directory: the judges of JUDGES over one context, the
    verdict over their findings. `missing` names the phases that should have produced records
    and did not (reports.shared.phases), `skipped` those left out on purpose, and `scope` what
    was under test (the whole cluster, or one node), `set_aside` the findings of the nodes the
    job's preflight left out (reports/shared/setaside.py): with the spec's promises not measured
    (reports.judging.coverage), the verdict is decided here once."""
    c = context(ev, spec, workload, scope=scope, skipped=skipped, baseline=baseline, set_aside=set_aside)
    findings: list[Finding] = []
    for _, judge_fn in JUDGES:
        findings = judge_fn(c, findings)
    unmeasured = [*missing, *(ln.sentence for ln in c.coverage.unmeasured)]
    written = c.written
    return Judgement(
        run_id=",".join(ev.run_ids),
        verdict=verdict_of(findings, unmeasured),
        findings=findings,
        missing=unmeasured,
        missing_phases=list(missing),
        not_covered=[f"{ln.what}: {ln.why}" for ln in c.coverage.not_covered],
        coverage=c.coverage.verdict_fields(),
        expected=c.expected,
        thresholds=thresholds_of(c.spec),
        model=c.model,
        model_summary=c.summary,
        spec_name=written.name
        if written
        else None,  # the user's spec; a run judged on detected hardware keeps its directory's name
        workload_name=workload.name if workload is not None else None,
        notes=c.notes,
        hardware=ev.hardware,
        cpu_path=c.cpu_path,
    )
