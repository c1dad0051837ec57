"""Judgement: records + spec + workload -> findings and the verdict (pure).

judge() = the sweep plateaus against advertised figures (reports.judging.compare), the node and
link culprits (reports.judging.localise), and the starvation model (reports.judging.model) turned into
findings. Without a spec, what reports.judging.detect put in the manifests stands in for one;
with neither, findings are `no_reference` (never a guessed figure).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from reports.columns import net_columns
from reports.findings import Finding, verdict_of
from reports.judging import compare, detect, model
from reports.judging.compute import appetite, compute_findings, compute_notes
from reports.judging.inventory import explain, host_link_figures, judge_inventory
from reports.judging.localise import localise
from reports.judging.localise_groups import group_findings
from reports.judging.model import ModelRow
from reports.judging.spec import Spec, fill_from_hardware
from reports.judging.workload import Workload
from reports.records import IoRecord, RecordSet


@dataclass(frozen=True, kw_only=True, slots=True)
class Judgement:
    run_id: str
    verdict: str
    findings: list[Finding]
    expected: dict[str, float] = field(default_factory=dict)  # component -> advertised GB/s used
    thresholds: dict[str, float] = field(default_factory=dict)  # "network" / "storage" -> share
    model: list[ModelRow] = field(default_factory=list)
    model_summary: dict[str, Any] = field(default_factory=dict)
    spec_name: str | None = None
    workload_name: str | None = None
    notes: list[str] = field(default_factory=list)
    hardware: dict[str, Any] = field(default_factory=dict)  # what detection found (summarised)


_FIX = {
    "inter-node network": "fix below-spec links first, or keep more parallelism inside the node so fewer bytes cross nodes",
    "intra-node network": "check the intra-node links (nvidia-smi topo -m) or lower the tensor-parallel degree",
    "dataloader": "stage the dataset on local NVMe, add storage bandwidth, or add dataloader workers",
    "checkpoint": "checkpoint asynchronously, less often, or to faster storage",
}


# A checkpoint is a torch.save / DCP call, not fio: buffered, one writer, serialisation
# included. These ran at half fio's O_DIRECT figure on an H100 node's disk (issue 13), so
# the model's checkpoint stall trusts them whenever they were measured.
REAL_SAVE_BACKENDS = ("torch.save", "torch.dcp")


def _pick_io(io: Sequence[IoRecord], workload: str, path: str | None, spec: Spec | None) -> IoRecord | None:
    """The best record of `workload`: on `path` if the workload names one, else on shared
    storage if any, else anywhere; for checkpoint_write a real save's record if any."""
    recs = [r for r in io if r.workload == workload and not r.failed]
    if path:
        recs = [r for r in recs if r.path == path or r.path.startswith(path.rstrip("/") + "/")]
    else:

        def kind(r: IoRecord) -> str:
            e = compare.match_storage(r.path, spec.storage) if spec else None
            return e.kind if e else r.scope

        shared = [r for r in recs if kind(r) == "shared"]
        recs = shared or recs
    if workload == "checkpoint_write":  # after the place is chosen: a real save elsewhere does not count here
        recs = [r for r in recs if r.backend in REAL_SAVE_BACKENDS] or recs
    return max(recs, key=lambda r: r.bw_GBps, default=None)


def _component(r: IoRecord | None, spec: Spec | None) -> str:
    if r is None:
        return "shared storage"
    e = compare.match_storage(r.path, spec.storage) if spec else None
    return "local storage" if (e.kind if e else r.scope) == "local" else "shared storage"


def _num(x: float) -> str:
    """3 significant figures without exponents for the sizes people read: 1302 -> '1,302'."""
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}" if x >= 0.001 else f"{x:.2e}"


def _model_finding(row: ModelRow, wname: str, budget: float, price: float | None) -> Finding:
    share, unit = row.idle_share, row.unit
    key = (
        "dataloader"
        if row.check.startswith("dataloader")
        else "checkpoint"
        if row.check.startswith("checkpoint")
        else row.component
    )
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


def _appetite(records: RecordSet, workload: Workload) -> dict[str, Any]:
    a = appetite(records.compute, workload.dtype)
    return {} if a is None else {"compute_tflops": a.tflops, "compute_desc": a.desc}


def _skipped_notes(records: RecordSet) -> list[str]:
    if not records.skipped:
        return []
    shown = "; ".join(f"{s.file}:{s.line} {s.reason}" for s in records.skipped[:5])
    more = f" (and {len(records.skipped) - 5} more)" if len(records.skipped) > 5 else ""
    return [f"{len(records.skipped)} unreadable line(s) skipped: {shown}{more}"]


def judge(records: RecordSet, spec: Spec | None = None, workload: Workload | None = None) -> Judgement:

    run_ids = sorted(
        {str(x) for x in net_columns(records.net)["run_id"].unique()} | {r.run_id for r in records.io}
    )
    notes = _skipped_notes(records)
    hardware = detect.summarise(
        [m["hardware"] for m in records.manifests if isinstance(m.get("hardware"), dict)]
    )
    spec = fill_from_hardware(spec, hardware) if hardware else spec
    if spec is not None and spec.detected:
        notes.append("from hardware detection: " + ", ".join(spec.detected))
    notes.extend(hardware.get("disagreements", []))
    curves, wrong = compare.build_curves(records.net)
    if wrong:
        notes.append(
            f"{wrong} net record(s) failed the correctness check (#wrong > 0) and were left out of the bandwidth figures"
        )
    findings, expected = compare.compare_network(curves, spec)
    io_findings, io_expected = compare.compare_storage(records.io, spec)
    findings += io_findings
    expected.update(io_expected)
    findings += localise(records.net, records.io, spec.inter_node_per_gpu_GBps if spec else None)
    findings += group_findings(records.net)
    inventory = judge_inventory(records.host, spec)
    findings = explain(findings, inventory) + inventory
    findings += compute_findings(records.compute)  # issue 27: slow GPUs, the fleet against its peak
    notes += compute_notes(records.compute)  # issue 27: the measured appetite, judged or not
    rows: list[ModelRow] = []
    summary: dict[str, Any] = {}
    if workload is not None:
        dl_path = workload.dataloader.path if workload.dataloader else None
        ck_path = workload.checkpoint.path if workload.checkpoint else None
        rd = _pick_io(records.io, "dataloader_read", dl_path, spec)
        wr = _pick_io(records.io, "checkpoint_write", ck_path, spec)
        measured = model.Measured(
            curves=curves,
            read_GBps_per_node=rd.bw_GBps / max(1, rd.nodes) if rd else None,
            read_component=_component(rd, spec),
            write_GBps=wr.bw_GBps if wr else None,
            write_component=_component(wr, spec),
            write_backend=wr.backend if wr else "fio",
            # gloo on CPU ranks shares the cores with compute; NCCL on GPUs does not
            cpu_ranks=bool(records.net) and bool((net_columns(records.net)["device"] == "cpu").all()),
            **host_link_figures(records.host),
            **_appetite(records, workload),  # issue 27: the measured matmul ceiling
        )
        rows, summary = model.starvation(workload, spec, measured)
        if "why" in summary:
            notes.append(f"workload {workload.name}: {summary['why']}")
        price = spec.price_per_gpu_hour if spec else None
        findings += [_model_finding(r, workload.name, workload.idle_budget, price) for r in rows]
    return Judgement(
        run_id=",".join(run_ids),
        verdict=verdict_of(findings),
        findings=findings,
        expected=expected,
        thresholds=dict(spec.thresholds) if spec else {"network": 0.80, "storage": 0.80},
        model=rows,
        model_summary=summary,
        spec_name=spec.name if spec else None,
        workload_name=workload.name if workload is not None else None,
        notes=notes,
        hardware=hardware,
    )
