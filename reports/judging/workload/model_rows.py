"""The starvation model's measured inputs and its row constructors (pure): one row per
component, its idle share judged against the budget (reports/judging/workload/model.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from reports.evidence.sweeps import Sweep
from reports.judging.storage.savepath import SaveRates
from reports.shared.findings import Component, ModelRow, Part, Status


@dataclass(frozen=True, kw_only=True, slots=True)
class Measured:
    """What the records say, reduced to what the model needs."""

    curves: dict[tuple[str, str], Sweep] = field(default_factory=dict)
    read_GBps_per_node: float | None = None  # dataloader reads, one node's share
    read_component: Component = "shared storage"
    # the save the workload makes, per process, per node and all measured nodes (savepath.pick)
    save: SaveRates | None = None
    write_GBps: float | None = None  # without `save`: the job's checkpoint bandwidth, stated directly
    write_component: Component = "shared storage"
    cpu_ranks: bool = False  # the collectives ran on CPU ranks (gloo): the CPU-only terms apply
    host_h2d_GBps: float | None = None  # measured host link per GPU (host.jsonl), slowest GPU
    host_d2h_GBps: float | None = None
    host_link_desc: str = ""
    # the measured matmul ceiling per device in the workload's dtype (judging/compute.py)
    compute_tflops: float | None = None
    compute_desc: str = ""


def idle_share_of(exposed: float, base: float) -> float:
    return exposed / (base + exposed) if base + exposed > 0 else 0.0


def row(
    part: Part,
    component: Component,
    check: str,
    required: float | None,
    achieved: float | None,
    unit: str,
    exposed: float,
    base: float,
    budget: float,
    usd_per_share: float | None,
    **extra: Any,
) -> ModelRow:
    share = idle_share_of(exposed, base)
    # a derived figure that overflowed is refused, never judged "ok"
    from reports.shared.errors import UsageError
    from reports.shared.plausible import derived_why

    if why := derived_why(f"{check}: demand", required) or derived_why(f"{check}: idle share", share):
        raise UsageError(why)
    status: Status = "no_reference" if achieved is None else ("starving" if share > budget else "ok")
    return ModelRow(
        part=part,
        component=component,
        check=check,
        required=required,
        achieved=achieved,
        unit=unit,
        idle_share=share,
        usd_per_day=None if usd_per_share is None else share * usd_per_share,
        status=status,
        extra={**extra, "exposed_s": exposed, "base_s": base},
    )


def missing(part: Part, component: Component, check: str, unit: str, why: str) -> ModelRow:
    return ModelRow(
        part=part,
        component=component,
        check=check,
        required=None,
        achieved=None,
        unit=unit,
        idle_share=0.0,
        usd_per_day=None,
        status="no_reference",
        extra={"why": why},
    )
