"""Judgement: evidence + spec + workload (+ the phases that went missing) -> findings and
the verdict, decided here once (pure; reads no file).

judge() = the sweep plateaus against advertised figures (reports.judging.advertised), the node
and link culprits (reports.judging.network.localise, reports.judging.network.groups), the node inventory
(reports.judging.node.inventory) and the starvation model (reports.judging.workload.model) turned into
findings. Without a spec, the hardware the hosts detected stands in for one; with neither,
findings are `no_reference` (never a guessed figure).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Sequence
from typing import Any

from reports.evidence import Evidence
from reports.evidence.rails import untested_note
from reports.judging import confirm, cpu_path
from reports.judging.coverage import Scope, assess
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
from reports.shared.findings import DEFAULT_THRESHOLDS, Component, Finding, Judgement, ModelRow, verdict_of
from reports.shared.records import IoRecord
from reports.shared.runs import IMPORTED
from reports.shared.spec import Spec, given_scopes, match_storage
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
    """The judgement of one results directory; `missing` names the phases that should have
    produced records and did not (reports.shared.phases), `skipped` those left out on purpose, and
    `scope` what was under test (the whole cluster, or one node), `set_aside` the findings of
    the nodes the job's preflight left out (reports/shared/setaside.py): with the spec's promises
    not measured (reports.judging.coverage), the verdict is decided here once."""
    notes = _skipped_notes(ev.skipped)
    hardware = ev.hardware
    written = spec  # the spec as the user wrote it: its promises are what coverage holds
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
    if spec is not None and spec.detected:
        notes.append("from hardware detection: " + ", ".join(spec.detected))
    notes.extend(hardware.get("disagreements", []))
    if ev.wrong:
        notes.append(
            f"{ev.wrong} net record(s) failed the correctness check (#wrong > 0) and were left out of the bandwidth figures"
        )
    findings, expected = confirm.compare_network(  # a figure measured again judged by both
        ev.curves,
        ev.confirm_curves,
        spec,
        written=given_scopes(written),
        env=reference.run_env(ev.manifests),
    )
    if any(f.extra.get("basis") == "reference" for f in findings):
        notes.append(
            "no spec for the network: judged against what healthy systems of the detected kind reach "
            "(reports/judging/catalog/references.yaml; each finding names its source)"
        )
    io_findings, io_expected = confirm.compare_storage([*ev.io, *ev.io_again], spec)  # judged beside
    findings += io_findings
    notes += [iops_note(r) for r in ev.io if judged_by_iops(r)]  # small random I/O: its IOPS, unjudged
    expected.update(io_expected)
    located = localise(ev.pairs, ev.net.frame, ev.io, spec.inter_node_per_gpu_GBps if spec else None)
    located = confirm.confirm_nodes(located, ev.confirm_frame)  # a node's intra-node sweep measured again
    notes += ev.confirm_notes  # records marked as confirmations that confirm nothing: left out, named
    notes += [n for n in [untested_note(ev.pairs.untested)] if n]  # (host, rail)s no pair test measured
    named = name_nics(located + group_findings(ev.search), ev.host, ev.counters)  # (host, rail): its NIC
    findings += named + sweep_counter_findings(named, ev.host, ev.counters)  # a NIC erring on a fine rail
    findings += stability(ev.soak, ev.io, ev.counters)  # a soak's dips, drift, counters
    if baseline is not None:  # the accepted run's figures beside the spec's (--baseline)
        findings += judge_evidence(baseline, ev)
    inventory = judge_inventory(ev.host, spec)
    findings = explain(findings, inventory) + inventory
    notes += ports_not_counted(ev.host)  # unused and storage RDMA ports: listed, not judged
    # NCCL's own words: wrong data and errors first, then what contradicts the spec, and the
    # cause its lines show beside each failing network figure (reports/judging/network/diagnosis.py)
    findings = [
        *diagnosis.correctness_findings(ev.sweeps, ev.manifests),
        *diagnosis.misconfigured_findings(ev.manifests, written, nodes, ev.host),
        *diagnosis.collapse_findings(ev.curves),
        *diagnosis.explain(findings, ev.manifests),
    ]
    findings += compute_findings(ev.compute)  # slow GPUs, the fleet against its peak
    notes += compute_notes(ev.compute)  # the measured appetite, judged or not
    rows: list[ModelRow] = []
    summary: dict[str, Any] = {}
    if workload is not None:
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
        rows, summary = model.starvation(workload, spec, measured)
        if "why" in summary:
            notes.append(f"workload {workload.name}: {summary['why']}")
        price = spec.price_per_gpu_hour if spec else None
        spread = spread_of(save.record) if save and save.record else None
        findings += [
            _in_spread(_model_finding(r, workload.name, workload.idle_budget, price), spread)
            if r.part == "checkpoint" and spread is not None
            else _model_finding(r, workload.name, workload.idle_budget, price)
            for r in rows
        ]
    findings += cov.findings
    no_gpu = cpu_path.cpu_path(ev.cpu_ranks, ev.host, hardware, ev.manifests)
    if no_gpu and cpu_path.promises_gpus(written):  # an H100 spec on a CPU machine: one mismatch
        assert written is not None
        hosts = tuple(sorted({str(r.get("host")) for r in ev.host if r.get("host")}))
        findings = [cpu_path.mismatch(written, hosts), *(cpu_path.not_compared(f) for f in findings)]
        expected = {k: v for k, v in expected.items() if k not in cpu_path.NETWORK}  # not drawn against
    findings = [*set_aside, *findings]  # the nodes left out first: the rest was judged without them
    unmeasured = [*missing, *(ln.sentence for ln in cov.unmeasured)]
    return Judgement(
        run_id=",".join(ev.run_ids),
        verdict=verdict_of(findings, unmeasured),
        findings=findings,
        missing=unmeasured,
        missing_phases=list(missing),
        not_covered=[f"{ln.what}: {ln.why}" for ln in cov.not_covered],
        coverage=cov.verdict_fields(),
        expected=expected,
        thresholds=dict(spec.thresholds) if spec else dict(DEFAULT_THRESHOLDS),
        model=rows,
        model_summary=summary,
        spec_name=written.name
        if written
        else None,  # the user's spec; a run judged on detected hardware keeps its directory's name
        workload_name=workload.name if workload is not None else None,
        notes=notes,
        hardware=hardware,
        cpu_path=no_gpu,
    )
