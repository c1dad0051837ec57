"""The nodes an acceptance job set aside, and `DIR/setaside.jsonl`, the line each leaves there.

Before any multi-node sweep every node runs its preflight (`stoker preflight`, which prints
one last line: `stoker preflight: NODE passed`, or why not). Each node's output is kept as
DIR/preflight/NODE.log; `stoker set-aside` on the batch host reads them back, writes one
line per node that did not pass (its name and its reason: the last line of its output), and
prints the nodes that go on. Given the job's own stoker digest (launchers/commands/fingerprint.py), a
node that passed but runs another stoker (its preflight's `stoker fingerprint:` line) is set
aside too, rather than stopping the job. The report reads the lines: each is a finding (component node,
a failing status), so the verdict is fail (the spec promised every node) while the
remaining nodes' records are still judged. Line format (docs/contract.md): one JSON object
per line, `host` and `reason`, and `stage` when the node was not set aside by its preflight:
`start` (it never reached the job's start barrier: `--never-started`) or `phase` (it stopped
answering during the multi-node phase named by `phase`, and the phases after it ran without it:
launchers/local/lost_nodes.py decides which). The report's finding of a node set aside by its
preflight also says where that node's preflight output is: in the results dir, or only on the
node (a results dir per node whose output never reached node 0). Pure but for `read`,
`logs_in`, `gather` and `record`; `stoker set-aside` is launchers/commands/setaside_cmd.py.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

from reports.shared.findings import Finding
from reports.shared.hostnames import is_plain_host, why_not_plain

SETASIDE_FILE = "setaside.jsonl"
PREFLIGHT_DIR = "preflight"  # DIR/preflight/NODE.log: each node's preflight output
NO_ANSWER = (
    "never started: no preflight output from this node within the preflight's limit "
    "(it did not start, or cannot write the results dir)"
)
FINGERPRINT = (
    "stoker fingerprint: "  # the preflight's line: HOST DIGEST PYTHON (launchers/commands/fingerprint.py)
)


# when a node was set aside: before the preflight (it never reached the start barrier), by its
# preflight, or during a multi-node phase (it stopped answering there)
Stage = Literal["start", "preflight", "phase"]


@dataclass(frozen=True, slots=True)
class StageKind:
    check: str  # the finding's `check`
    message: str  # the finding's message: {host}, {reason}, {phase}
    headline: str  # report.md's line before anything else: {hosts}


STAGES: dict[Stage, StageKind] = {
    "start": StageKind(
        "start",
        "{host} never started: it did not reach the job's start barrier in time and was left out of "
        "every multi-node phase: {reason}. Find why it started late or not at all and run the acceptance again.",
        "Never started, left out of the whole acceptance: {hosts}.",
    ),
    "preflight": StageKind(
        "preflight",
        "{host} was set aside by the preflight and left out of every multi-node phase: {reason}. "
        "Repair or replace it and run the acceptance again.",
        "Set aside by the preflight, left out of the whole acceptance: {hosts}.",
    ),
    "phase": StageKind(
        "node-lost",
        "{host} stopped answering during phase {phase} and was left out of the phases after it: {reason}. "
        "Find why it died (its kernel log, its scheduler's log), repair or replace it and run the "
        "acceptance again.",
        "Lost mid-phase, left out of the phases after it: {hosts}.",
    ),
}
assert set(STAGES) == set(get_args(Stage))


@dataclass(frozen=True, slots=True)
class SetAside:
    host: str
    reason: str
    stage: Stage = "preflight"
    phase: str | None = None  # stage "phase": the phase the node stopped in


def passed_line(node: str) -> str:
    """The last line of a node's preflight that passed (launchers/commands/preflight.py prints it)."""
    return f"stoker preflight: {node} passed"


def last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def fingerprint_of(text: str) -> tuple[str, str] | None:
    """(digest, python) from a preflight's last `stoker fingerprint:` line, or None."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip().startswith(FINGERPRINT)]
    parts = lines[-1][len(FINGERPRINT) :].split(" ", 2) if lines else []
    return (parts[1], parts[2]) if len(parts) == 3 else None


def other_stoker(text: str, digest: str) -> str:
    """Why a node that passed runs another stoker than the job's `digest` ('' when the same)."""
    fp = fingerprint_of(text)
    if fp is not None and fp[0] == digest:
        return ""
    theirs = f"stoker {fp[0]} at {fp[1]}" if fp else "a stoker that prints no fingerprint"
    return (
        f"runs another stoker than the job's ({theirs}; the job runs {digest}): install the same "
        "stoker on every node, or on a file system every node sees"
    )


def decide(nodes: Sequence[str], logs: Mapping[str, str | None], digest: str | None = None) -> list[SetAside]:
    """The nodes whose preflight output (None: none) does not end in their pass line, and,
    given the job's stoker `digest`, those that passed with another stoker."""
    out = []
    for node in nodes:
        text = logs.get(node) or ""
        last = last_line(text)
        if last != passed_line(node):
            out.append(SetAside(node, (last or NO_ANSWER)[:300]))
        elif digest and (why := other_stoker(text, digest)):
            out.append(SetAside(node, why[:300]))
    return out


def headlines(found: Sequence[Finding]) -> list[str]:
    """report.md's first lines: the nodes set aside, one line per stage (a lost node with its phase)."""
    out = []
    for stage, kind in STAGES.items():
        hosts = sorted(
            {
                h + (f" (phase {f.extra['phase']})" if f.extra.get("phase") else "")
                for f in found
                if f.extra.get("set_aside") and f.extra.get("stage", "preflight") == stage
                for h in f.hosts
            }
        )
        if hosts:
            out.append(kind.headline.format(hosts=", ".join(hosts)))
    return out


def never_started_name(rank: int) -> str:
    """The name a node that never reached the start barrier goes by when it never said its
    host name (torchrun.sh knows such a node only by its node rank)."""
    return f"node-rank-{rank}"


def never_started(nodes: Sequence[str], limit_s: int) -> list[SetAside]:
    """One set-aside per node that did not reach the job's start barrier within `limit_s`."""
    return [
        SetAside(n, f"never started: it did not reach the start barrier within {limit_s} s", "start")
        for n in nodes
    ]


def line(s: SetAside) -> str:
    obj: dict[str, str] = {"host": s.host, "reason": s.reason}
    if s.stage != "preflight":  # a preflight's line keeps the two keys it has always had
        obj["stage"] = s.stage
    if s.phase:
        obj["phase"] = s.phase
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False) + "\n"


def read(directory: Path) -> list[SetAside]:
    """The set-aside lines of DIR that can be read (read_all says which cannot)."""
    return read_all(directory)[0]


def read_all(directory: Path) -> tuple[list[SetAside], list[str]]:
    """The set-aside lines of DIR, and one line per line that cannot be read as one node set
    aside (cut short, not JSON, no plain host name, no reason): the report fails closed on
    those, for the node it would have named was left out of the whole acceptance."""
    from reports.shared.records import iter_jsonl

    path = directory / SETASIDE_FILE
    if not path.is_file():
        return [], []
    out, bad = [], []
    for n, obj, why in iter_jsonl(path):
        host = obj.get("host") if isinstance(obj, dict) else None
        if obj is None:
            problem = why or "not a JSON object"
        elif not isinstance(obj, dict):
            problem = "not a JSON object"
        elif not is_plain_host(host):
            problem = f"host {str(host)[:40]!a} {why_not_plain(host) or 'is missing'}"
        elif not isinstance(obj.get("reason"), str) or not obj["reason"].strip():
            problem = "no reason given"
        elif (stage := obj.get("stage", "preflight")) not in STAGES:
            problem = f"stage {str(stage)[:40]!a} is not one of {', '.join(STAGES)}"
        elif stage == "phase" and not (isinstance(obj.get("phase"), str) and obj["phase"].strip()):
            problem = "stage phase names no phase"
        else:
            phase = str(obj["phase"])[:60] if stage == "phase" else None
            out.append(SetAside(str(host), str(obj["reason"])[:300], stage, phase))
            continue
        bad.append(
            f"{SETASIDE_FILE} line {n} cannot be read ({problem}): a node set aside may be unnamed; "
            "rewrite it with `stoker set-aside` or fix the line"
        )
    return out, bad


def where_output(host: str, here: Collection[str]) -> str:
    """Where a set-aside node's preflight output is, said from the results dir of the report:
    here (a shared dir, or node 0's, which the preflight relay fills), or not."""
    log = f"{PREFLIGHT_DIR}/{host}.log"
    if host in here:
        return f"Its preflight output: {log}."
    return (
        f"Its preflight output did not reach this results dir: look for {log} in that node's own "
        "results dir, or in the job's log."
    )


def logs_in(directory: Path, items: Sequence[SetAside]) -> set[str]:
    """The set-aside hosts whose DIR/preflight/HOST.log is here (a regular file)."""
    paths = {s.host: directory / PREFLIGHT_DIR / f"{s.host}.log" for s in items}
    return {h for h, p in paths.items() if p.is_file() and not p.is_symlink()}


def findings(items: Sequence[SetAside], here: Collection[str] | None = None) -> list[Finding]:
    """One failing finding per set-aside node: the spec promised it, the job ran without it
    (from its start, or from the phase it stopped in). Given `here` (logs_in: the hosts whose
    preflight output is in the results dir), a node set aside by its preflight also says where
    that output is (extra `preflight_log`: its path in DIR, or None)."""
    out = []
    for s in items:
        kind = STAGES[s.stage]
        where, extra = "", dict[str, object](set_aside=True, reason=s.reason, stage=s.stage)
        if s.phase:
            extra["phase"] = s.phase
        if here is not None and s.stage == "preflight":
            where = " " + where_output(s.host, here)
            extra["preflight_log"] = f"{PREFLIGHT_DIR}/{s.host}.log" if s.host in here else None
        out.append(
            Finding(
                component="node",
                check=kind.check,
                status="below_spec",
                measured=None,
                expected=None,
                unit="",
                hosts=(s.host,),
                message=kind.message.format(host=s.host, reason=s.reason, phase=s.phase or "?") + where,
                extra=extra,
            )
        )
    return out


def gather(out: Path, nodes: Sequence[str], digest: str | None = None) -> list[SetAside]:
    """Read each node's DIR/preflight/NODE.log (a regular file only) and decide."""
    from reports.shared.safe_read import read_text

    logs: dict[str, str | None] = {}
    for node in nodes:
        p = out / PREFLIGHT_DIR / f"{node}.log"
        logs[node] = read_text(p) if p.is_file() and not p.is_symlink() else None
    return decide(nodes, logs, digest)


def record(out: Path, aside: Sequence[SetAside], good: Sequence[str], min_nodes: int, how: str) -> int:
    """Append the set-aside lines to DIR/setaside.jsonl, name each on stderr, and print the
    nodes that go on (exit 0), or say that fewer than `min_nodes` are left (exit 3); `how`
    says what the nodes that go on did."""
    try:
        with open(out / SETASIDE_FILE, "a", encoding="utf-8") as fh:
            fh.writelines(line(s) for s in aside)
    except OSError as exc:
        print(f"stoker: cannot write {out / SETASIDE_FILE}: {exc}", file=sys.stderr)
        return 3
    for s in aside:
        print(f"stoker: {s.host} set aside: {s.reason}", file=sys.stderr)
    if len(good) < min_nodes:
        total = len(good) + len({s.host for s in aside})
        print(
            f"stoker: {len(good)} of {total} nodes {how}, fewer than --min-nodes "
            f"{min_nodes}; set aside: {','.join(s.host for s in aside)}",
            file=sys.stderr,
        )
        return 3
    print(",".join(good))
    return 0
