"""Which check found what, for `stoker check`'s actions: each finding tagged with the step
that measures it again (pure), and what the check may drain or resume from them.

A drain or taint names these tags (launchers/actions/node_actions.py); a node is resumed only when
each named step ran cleanly in a passing check and judged something: the inventory always
judges what it reads; `net` and `io` judge only against a baseline figure (without one they
measure and export, and prove nothing about a regression).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from launchers.actions import check_plan as cp
from launchers.actions.node_actions import not_node_own
from reports.shared.findings import FAILING, Finding

# a baseline figure's kind -> the check step that measures it; a kind no step measures is
# tagged `report`, which no check resumes
FIGURE_STEP: Mapping[str, str] = {"node-intra": "net", "sweep": "net", "node-storage": "io", "storage": "io"}


def baseline_step(f: Finding) -> str:
    return FIGURE_STEP.get(str(f.extra.get("figure", "")), "report")


@dataclass(frozen=True, kw_only=True, slots=True)
class Plan:
    drain: tuple[tuple[str, str], ...]  # (tag, drain reason) of the node's own failing findings
    taint: tuple[tuple[str, str], ...]  # (tag, taint check name), the same findings
    passed: frozenset[str]  # steps that ran and passed: what may be resumed
    left: tuple[str, ...]  # failing findings not acted on, one line each


def plan(
    tagged: Sequence[tuple[str, Finding]],
    outcome: cp.Outcome,
    results: Sequence[cp.StepResult],
) -> Plan:
    """`tagged`: every finding of the check, in the order given to cp.outcome, with its step."""
    bad = [(t, f) for t, f in tagged if f.status in FAILING and not f.extra.get("unconfirmed")]
    drain, taint, left = [], [], []
    for (tag, f), why_short, name in zip(bad, outcome.reasons, outcome.failed_checks, strict=True):
        if why := not_node_own(f.component, f.extra):
            left.append(f"{f.check} ({f.component}): {why}: no action")
            continue
        drain.append((tag, why_short))
        taint.append((tag, name))
    passed: frozenset[str] = frozenset()
    if outcome.verdict == "pass":
        clean = {r.name for r in results if r.rc == 0}
        judged = {"inventory"} | {t for t, f in tagged if f.status == "ok"}
        passed = frozenset(clean & judged)
    return Plan(drain=tuple(drain), taint=tuple(taint), passed=passed, left=tuple(left))
