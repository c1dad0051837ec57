"""Judgement: records + spec + workload -> findings and the verdict (pure).
Placeholder with the final types; the reports issue fills it in."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from reports.findings import Finding, verdict_of
from reports.records import RecordSet


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelRow:
    """One line of the starvation model: what the workload needs of a component."""

    component: str               # a findings.COMPONENTS name, or "checkpoint" / "dataloader" spelled via check
    check: str
    required: float | None
    achieved: float | None
    unit: str
    idle_share: float            # share of step time the accelerators wait for this component
    usd_per_day: float | None    # idle share x GPUs x price x 24
    status: str                  # ok | starving | no_reference


@dataclass(frozen=True, kw_only=True, slots=True)
class Judgement:
    run_id: str
    verdict: str
    findings: list[Finding]
    expected: dict[str, float] = field(default_factory=dict)      # component -> advertised GB/s used
    thresholds: dict[str, float] = field(default_factory=dict)    # "network" / "storage" -> share
    model: list[ModelRow] = field(default_factory=list)
    model_summary: dict[str, Any] = field(default_factory=dict)
    spec_name: str | None = None
    workload_name: str | None = None
    notes: list[str] = field(default_factory=list)


def judge(records: RecordSet, spec: Any = None, workload: Any = None) -> Judgement:
    run_ids = sorted({r.run_id for r in [*records.net, *records.io]})
    findings: list[Finding] = []
    return Judgement(run_id=",".join(run_ids), verdict=verdict_of(findings), findings=findings)
