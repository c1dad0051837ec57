"""Findings and the verdict (CONTRACT.md `verdict.json`)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

COMPONENTS = ("intra-node network", "inter-node network", "shared storage", "local storage", "node", "link")
STATUSES = ("ok", "below_spec", "starving", "no_reference", "suspect")
FAILING = ("below_spec", "starving")


@dataclass(frozen=True, kw_only=True, slots=True)
class Finding:
    component: str          # one of COMPONENTS
    check: str              # short name of what was compared
    status: str             # one of STATUSES
    measured: float | None
    expected: float | None
    unit: str
    hosts: tuple[str, ...]
    message: str            # one sentence a person can act on
    extra: dict[str, Any] = field(default_factory=dict)  # e.g. size used, idle share, $/day

    def __post_init__(self) -> None:
        assert self.component in COMPONENTS, self.component
        assert self.status in STATUSES, self.status

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "extra"}
        out["hosts"] = list(self.hosts)
        out.update({k: v for k, v in self.extra.items() if k not in out})
        return out


def verdict_of(findings: list[Finding]) -> str:
    """`fail` when any finding is below_spec or starving (CONTRACT.md)."""
    return "fail" if any(f.status in FAILING for f in findings) else "pass"


def verdict_json(run_id: str, findings: list[Finding], **extra: Any) -> dict[str, Any]:
    return {"verdict": verdict_of(findings), "run_id": run_id, "findings": [f.to_dict() for f in findings], **extra}
