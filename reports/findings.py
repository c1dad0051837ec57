"""Findings and the verdict (docs/contract.md `verdict.json`): pass, fail, incomplete, unjudged."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

COMPONENTS = (
    "intra-node network",
    "inter-node network",
    "shared storage",
    "local storage",
    "node",
    "link",
    "host link",
    "network port",
    "nvlink",
    "gpu",
)  # the last four: node inventory (host.jsonl)
# regression: under the accepted baseline by more than its tolerance (reports.judging.baseline)
STATUSES = ("ok", "below_spec", "starving", "no_reference", "suspect", "regression")
FAILING = ("below_spec", "starving", "regression")


@dataclass(frozen=True, kw_only=True, slots=True)
class Finding:
    component: str  # one of COMPONENTS
    check: str  # short name of what was compared
    status: str  # one of STATUSES
    measured: float | None
    expected: float | None
    unit: str
    hosts: tuple[str, ...]
    message: str  # one sentence a person can act on
    extra: dict[str, Any] = field(default_factory=dict)  # e.g. size used, idle share, $/day

    def __post_init__(self) -> None:
        assert self.component in COMPONENTS, self.component
        assert self.status in STATUSES, self.status

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "extra"}
        out["hosts"] = list(self.hosts)
        out.update({k: v for k, v in self.extra.items() if k not in out})
        return out


VERDICTS = ("pass", "fail", "incomplete", "unjudged")
# the process exit for each verdict (docs/contract.md): an unjudged exploratory run is not an
# error; the acceptance job turns it into one unless told otherwise (`--allow-unjudged`)
EXIT_CODES = {"pass": 0, "fail": 1, "incomplete": 3, "unjudged": 0}


def verdict_of(findings: Sequence[Finding], missing: Sequence[str] = ()) -> str:
    """docs/contract.md's order: `fail` when any finding is below_spec, starving or a
    regression; else
    `incomplete` when a phase that should have produced records did not (`missing`: one
    line per such phase); else `unjudged` when nothing was judged: no finding is `ok`, or one
    is `suspect` (a result the hardware cannot physically give: the measurement cannot vouch
    for it); else `pass`."""
    if any(f.status in FAILING for f in findings):
        return "fail"
    if missing:
        return "incomplete"
    if not any(f.status == "ok" for f in findings) or any(f.status == "suspect" for f in findings):
        return "unjudged"
    return "pass"


def headline(verdict: str, findings: Sequence[Finding], missing: Sequence[str] = ()) -> str:
    """The verdict in words, one line; "PASS" only for `pass`."""
    if verdict == "fail":
        counts = Counter(f.status for f in findings if f.status in FAILING)
        n = sum(counts.values())
        what = ", ".join(f"{k} {s}" for s, k in sorted(counts.items()))
        return f"FAIL — {n} finding{'s' if n != 1 else ''} to act on ({what})."
    if verdict == "incomplete":
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        return f"INCOMPLETE — {missing[0] if missing else 'a phase produced no records'}{more}."
    if verdict == "unjudged":
        suspect = sum(f.status == "suspect" for f in findings)
        if suspect:
            return (
                f"UNJUDGED — {suspect} finding{'s are' if suspect != 1 else ' is'} suspect (above what the "
                "hardware can do: page cache or a wrong spec), so the measurement cannot vouch for the hardware."
            )
        n = sum(f.status == "no_reference" for f in findings)
        return (
            f"UNJUDGED — nothing was judged: {n} check{'s' if n != 1 else ''} had no reference — give --spec "
            "(or put spec.yaml in the results directory)."
        )
    return "PASS — no finding is below spec or starving."


def verdict_json(
    run_id: str, findings: list[Finding], missing: Sequence[str] = (), **extra: Any
) -> dict[str, Any]:
    verdict = verdict_of(findings, missing)
    return {
        "verdict": verdict,
        "headline": headline(verdict, findings, missing),
        "run_id": run_id,
        "findings": [f.to_dict() for f in findings],
        **extra,
    }
