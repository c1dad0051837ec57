"""What `stoker check` and `stoker drain` may do to a node (pure): the rules, the scheduler's
answers read back, and the commands, as argument lists (never a shell string). docs/check.md,
"What stoker acts on".

An action touches only what a finding names: one plain node name (reports/shared/hostnames.py; the
short name for Slurm) that the scheduler confirms it knows, for a failing finding about that
node's own hardware (NODE_OWN), in a state stoker may change (STATE_KINDS). It undoes only
what stoker itself did: a drain reason and a taint value name the checks that found the fault
(TAGS: the check's steps, or `report` for `stoker drain`), and a node is resumed or untainted
only when every check named there ran again and passed. Anything else: no command, one line
saying why.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from launchers.actions.check_plan import STEPS
from reports.shared.hostnames import short_name, why_not_node

REASON_PREFIX = "stoker:"
TAINT_KEY = "stoker.dev/unhealthy"
LABEL_KEY = "stoker.dev/health"
MAX_REASON = 200  # Slurm keeps the reason whole; a long one is unreadable in `sinfo -R`
SINFO_FORMAT = "%N|%T|%E"  # name, long state, reason: the answer names the node it is about
_LABEL_VALUE = re.compile(r"[^A-Za-z0-9_.-]+")

# What a drain or taint names: a step of `stoker check` that measures it again, or `report`
# (`stoker drain DIR`: an acceptance report's finding, which no check reruns: resumed by hand).
TAGS: tuple[str, ...] = (*STEPS, "report")
_REASON_TAGS = re.compile(r"stoker: \[([a-z,]+)\] ")

# The components that are one node's own hardware: its GPUs, NICs, NVLink, PCIe links, local
# disk, and the per-node figures (its pair score, its intra-node plateau, its share of IO).
NODE_OWN = frozenset({"node", "gpu", "network port", "nvlink", "host link", "local storage"})
STORAGE_FIGURES = frozenset({"storage", "node-storage"})  # a node's own only on a local disk

StateKind = Literal["free", "drain", "other"]
# Slurm's long state names (sinfo %T), each part of a combined state (`mixed+drain`). A state
# not in the table is not stoker's to change.
STATE_KINDS: Mapping[str, StateKind] = {
    **dict.fromkeys(("idle", "mixed", "allocated", "alloc", "completing", "planned"), "free"),
    **dict.fromkeys(("drain", "drained", "draining"), "drain"),
    **dict.fromkeys(("down", "fail", "failing", "maint", "reboot_issued", "reboot_requested"), "other"),
}
# Slurm's state suffixes: `*` not responding, `~` `#` `!` `%` power saving, `-` planned, `+`
# more states; `$` a maintenance reservation, `@` a pending reboot, `^` rebooting: not ours.
SUFFIXES = "*~#!%$@^-+"
SUFFIX_KINDS: Mapping[str, StateKind] = {"$": "other", "@": "other", "^": "other"}


def slurm_name(host: str) -> tuple[str, str]:
    """(the short name sinfo and scontrol get, "") or ("", why stoker will not act on it):
    the name is checked as it is handed to them, after shortening (`ALL.cluster` is `ALL`)."""
    if why := why_not_node(host):
        return "", why
    return short_name(host), ""


def not_node_own(component: str, extra: Mapping[str, Any]) -> str:
    """Why a failing finding is not this one node's own fault ("" when it is): a scope-wide
    or shared-storage finding says nothing about which node to drain. A storage figure is
    the node's own only when the finding itself says its scope is `local` (a baseline finding
    carries its figure's scope; one without, from an older stoker, is not known to be)."""
    if component not in NODE_OWN:
        return f"a {component} finding is about more than one node"
    if extra.get("figure") in STORAGE_FIGURES and extra.get("scope") != "local":
        where = extra.get("path") or "storage"
        if extra.get("scope") == "shared":
            return f"{where} is shared storage, not this node's own disk"
        return "a storage figure not known to be the node's local disk"
    return ""


@dataclass(frozen=True, kw_only=True, slots=True)
class SlurmNode:
    """One node as `sinfo -h -N -n NODE -o '%N|%T|%E'` prints it: name, state, reason."""

    name: str
    state: str  # e.g. idle, mixed, drained, draining, down*, mixed+drain
    reason: str  # "none" when there is none

    @property
    def kind(self) -> StateKind:
        kinds: list[StateKind] = []
        for part in self.state.lower().split("+"):
            if not part:
                continue
            kinds.append(STATE_KINDS.get(part.rstrip(SUFFIXES), "other"))
            kinds += [SUFFIX_KINDS[c] for c in part[len(part.rstrip(SUFFIXES)) :] if c in SUFFIX_KINDS]
        if not kinds or "other" in kinds:
            return "other"
        return "drain" if "drain" in kinds else "free"

    @property
    def ours(self) -> bool:
        return self.reason.startswith(REASON_PREFIX)


def sinfo_argv(node: str) -> list[str]:
    return ["sinfo", "-h", "-N", "-n", node, "-o", SINFO_FORMAT]


def parse_sinfo(name: str, text: str) -> SlurmNode | str:
    """The node from every line sinfo printed, or why the answer does not confirm exactly
    that one node. The reason may itself hold '|': only the first two separate."""
    rows = {tuple(p.strip() for p in ln.split("|", 2)) for ln in text.splitlines() if ln.strip()}
    if not rows:
        return f"sinfo knows no node {name}"
    names = sorted({r[0] for r in rows})
    if names != [name]:
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        return f"sinfo answered for {shown}, not for {name} alone"
    if len(rows) > 1 or len(next(iter(rows))) != 3:
        return f"sinfo's answer for {name} is not one line of name|state|reason"
    _, state, reason = next(iter(rows))
    return SlurmNode(name=name, state=state, reason=reason)


def tag_list(tags: frozenset[str] | set[str]) -> str:
    return ",".join(t for t in TAGS if t in tags)


def drain_reason(tags: frozenset[str], problems: Sequence[str]) -> str:
    first = problems[0] if problems else "failed its check"
    more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
    return f"{REASON_PREFIX} [{tag_list(tags)}] {first}"[: MAX_REASON - len(more)] + more


def reason_tags(reason: str) -> frozenset[str] | None:
    """The checks a stoker drain reason names, or None (not ours, or names none it knows)."""
    m = _REASON_TAGS.match(reason)
    tags = frozenset(m.group(1).split(",")) if m else frozenset()
    return tags if tags and tags <= set(TAGS) else None


@dataclass(frozen=True, kw_only=True, slots=True)
class Decision:
    argv: tuple[str, ...] | None  # the command to run, or None
    why: str  # what is left as it is and why ("" when there is nothing to say)


def _scontrol(node: str, *fields: str) -> tuple[str, ...]:
    return ("scontrol", "update", f"NodeName={node}", *fields)


def slurm_decision(node: SlurmNode, failing: Sequence[tuple[str, str]], passed: frozenset[str]) -> Decision:
    """After a check: drain for `failing` ((tag, reason) of the node's own failing findings),
    or, with none, resume stoker's drain when every check its reason names is in `passed`."""
    n = node.name
    if node.kind == "other":
        why = f"is {node.state} ({node.reason}): not stoker's to change" if failing else ""
        return Decision(argv=None, why=why)
    old = reason_tags(node.reason) if node.ours else None
    if failing:
        tags = frozenset(t for t, _ in failing)
        if node.kind == "drain" and not node.ours:
            return Decision(argv=None, why=f"already drained by someone else ({node.reason}); left as it is")
        if node.kind == "drain" and old is None:
            return Decision(
                argv=None,
                why=f"drained by stoker with a reason naming no checks ({node.reason}); left as it is",
            )
        if old is not None and tags <= old:
            return Decision(argv=None, why=f"already drained by stoker for [{tag_list(old)}]")
        tags |= old or frozenset()
        reason = drain_reason(tags, [r for _, r in failing])
        return Decision(argv=_scontrol(n, "State=DRAIN", f"Reason={reason}"), why="")
    if node.kind != "drain" or not node.ours:
        return Decision(argv=None, why="")  # nothing of stoker's to undo
    if old is None:
        return Decision(
            argv=None,
            why=f"drained by stoker with a reason naming no checks ({node.reason}); resume it by hand once fixed",
        )
    if not old <= passed:
        return Decision(
            argv=None,
            why=f"drained by stoker for [{tag_list(old)}]; only [{tag_list(passed)}] ran and passed here: left drained",
        )
    return Decision(argv=_scontrol(n, "State=RESUME"), why="")


# -- Kubernetes --------------------------------------------------------------------------
def label_value(text: str) -> str:
    """A Kubernetes label value: 63 characters of [A-Za-z0-9_.-], starting and ending alphanumeric."""
    v = _LABEL_VALUE.sub("-", text).strip("-_.")[:63].strip("-_.")
    return v or "failed"


def taint_value(tags: frozenset[str], first_check: str) -> str:
    """`<tags joined by _>.<first failing check>`: the checks first, so a cut keeps them."""
    return label_value(f"{'_'.join(t for t in TAGS if t in tags)}.{label_value(first_check)}")


def taint_tags(value: str) -> frozenset[str] | None:
    tags = frozenset(value.split(".", 1)[0].split("_")) if "." in value else frozenset()
    return tags if tags and tags <= set(TAGS) else None


@dataclass(frozen=True, kw_only=True, slots=True)
class K8sNode:
    name: str
    taint: str | None  # the value of stoker's NoSchedule taint, None when it has none
    health: str | None  # stoker's label


def k8s_get_argv(node: str) -> list[str]:
    return ["kubectl", "get", "nodes", node, "-o", "json"]


def parse_k8s_node(name: str, text: str) -> K8sNode | str:
    """The node from `kubectl get nodes NAME -o json`, or why it does not confirm that one node."""
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None
    if not isinstance(doc, dict) or doc.get("kind") != "Node":
        return f"kubectl answered no node {name}"
    meta, spec = doc.get("metadata") or {}, doc.get("spec") or {}
    if not isinstance(meta, dict) or meta.get("name") != name:
        return f"kubectl answered for another node than {name}"
    taints = spec.get("taints") if isinstance(spec, dict) else None
    ours = [
        t
        for t in (taints if isinstance(taints, list) else [])
        if isinstance(t, dict) and t.get("key") == TAINT_KEY and t.get("effect") == "NoSchedule"
    ]
    got = meta.get("labels")
    labels: dict[str, Any] = got if isinstance(got, dict) else {}
    return K8sNode(
        name=name,
        taint=str(ours[0].get("value", "")) if ours else None,
        health=str(labels[LABEL_KEY]) if LABEL_KEY in labels else None,
    )


def _kubectl(verb: str, node: str, *rest: str) -> tuple[str, ...]:
    return ("kubectl", verb, "nodes", node, *rest)


def k8s_decisions(
    node: K8sNode, failing: Sequence[tuple[str, str]], passed: frozenset[str]
) -> list[Decision]:
    """Taint and label for `failing` ((tag, check) of the node's own failing findings); with
    none, remove stoker's taint when every check its value names is in `passed`, and label
    the node `pass` once it carries no stoker taint."""
    n, out = node.name, []
    old = taint_tags(node.taint) if node.taint is not None else None
    if failing:
        tags = frozenset(t for t, _ in failing)
        if node.taint is not None and old is None:
            out.append(
                Decision(argv=None, why=f"has stoker's taint {node.taint!r} naming no checks; left as it is")
            )
        elif old is not None and tags <= old:
            out.append(Decision(argv=None, why=f"already tainted by stoker for [{tag_list(old)}]"))
        else:
            value = taint_value(tags | (old or frozenset()), failing[0][1])
            out.append(
                Decision(argv=_kubectl("taint", n, f"{TAINT_KEY}={value}:NoSchedule", "--overwrite"), why="")
            )
        if node.health != "fail":
            out.append(Decision(argv=_kubectl("label", n, f"{LABEL_KEY}=fail", "--overwrite"), why=""))
        return out
    if node.taint is not None:
        if old is None:
            return [
                Decision(
                    argv=None,
                    why=f"stoker's taint {node.taint!r} names no checks; remove it by hand once fixed",
                )
            ]
        if not old <= passed:
            return [
                Decision(
                    argv=None,
                    why=f"tainted by stoker for [{tag_list(old)}]; only [{tag_list(passed)}] ran and passed here: left tainted",
                )
            ]
        out.append(Decision(argv=_kubectl("taint", n, f"{TAINT_KEY}:NoSchedule-"), why=""))
    if node.health != "pass":
        out.append(Decision(argv=_kubectl("label", n, f"{LABEL_KEY}=pass", "--overwrite"), why=""))
    return out
