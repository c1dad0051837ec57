"""What `stoker check` and `stoker drain` do to a node (pure): Slurm drain/resume and the
Kubernetes taint/label, as argument lists (never a shell string), decided from the node's
current state. docs/check.md.

Slurm: a failing node is drained with `Reason="stoker: <finding>"`; a passing node is resumed
only when it is drained with a reason stoker wrote (`stoker:` prefix), so an admin's drain for
another reason is never undone. Kubernetes: a failing node gets the taint
`stoker.dev/unhealthy=<check>:NoSchedule` and the label `stoker.dev/health=fail`; a passing one
loses the taint and gets `stoker.dev/health=pass`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

REASON_PREFIX = "stoker:"
TAINT_KEY = "stoker.dev/unhealthy"
LABEL_KEY = "stoker.dev/health"
MAX_REASON = 200  # Slurm keeps the reason whole; a long one is unreadable in `sinfo -R`
_LABEL_VALUE = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass(frozen=True, kw_only=True, slots=True)
class SlurmNode:
    """One node as `sinfo -h -N -n NODE -o '%T|%E'` prints it: state and reason."""

    name: str
    state: str  # e.g. idle, mixed, drained, draining, down
    reason: str  # "none" when there is none

    @property
    def drained(self) -> bool:
        return self.state.rstrip("*~#!%$@^-").lower() in ("drained", "draining", "drain")

    @property
    def ours(self) -> bool:
        return self.reason.startswith(REASON_PREFIX)


def parse_sinfo(name: str, text: str) -> SlurmNode:
    """`%T|%E`: the reason may itself hold '|'; only the first one separates."""
    line = next((ln for ln in text.splitlines() if ln.strip()), "")
    state, _, reason = line.partition("|")
    return SlurmNode(name=name, state=state.strip(), reason=reason.strip())


def sinfo_argv(node: str) -> list[str]:
    return ["sinfo", "-h", "-N", "-n", node, "-o", "%T|%E"]


def drain_reason(problems: list[str]) -> str:
    first = problems[0] if problems else "failed its check"
    more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
    return f"{REASON_PREFIX} {first}"[: MAX_REASON - len(more)] + more


def slurm_action(node: SlurmNode, problems: list[str]) -> list[str] | None:
    """The scontrol command for this node after a check: drain on problems (unless an admin
    already drained it: their reason stays), resume when it passes and stoker drained it."""
    if problems:
        if node.drained and not node.ours:
            return None  # drained by someone else: keep their reason
        return [
            "scontrol",
            "update",
            f"NodeName={node.name}",
            "State=DRAIN",
            f"Reason={drain_reason(problems)}",
        ]
    if node.drained and node.ours:
        return ["scontrol", "update", f"NodeName={node.name}", "State=RESUME"]
    return None


def label_value(text: str) -> str:
    """A Kubernetes label value: 63 characters of [A-Za-z0-9_.-], starting and ending alphanumeric."""
    v = _LABEL_VALUE.sub("-", text).strip("-_.")[:63].strip("-_.")
    return v or "failed"


def k8s_actions(node: str, failed_checks: list[str]) -> list[list[str]]:
    """kubectl commands: taint and label a failing node; untaint and label a passing one.
    `taint ... KEY-` of a taint that is absent fails in kubectl, so removal is idempotent only
    with the caller ignoring that exit; the label is overwritten either way."""
    if failed_checks:
        check = label_value(failed_checks[0])
        return [
            ["kubectl", "taint", "nodes", node, f"{TAINT_KEY}={check}:NoSchedule", "--overwrite"],
            ["kubectl", "label", "nodes", node, f"{LABEL_KEY}=fail", "--overwrite"],
        ]
    return [
        ["kubectl", "taint", "nodes", node, f"{TAINT_KEY}:NoSchedule-"],
        ["kubectl", "label", "nodes", node, f"{LABEL_KEY}=pass", "--overwrite"],
    ]
