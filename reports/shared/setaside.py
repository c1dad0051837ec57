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
per line, `host` and `reason`. The report's finding also says where that node's preflight output
is: in the results dir, or only on the node (a results dir per node whose output never reached
node 0). Pure but for `read`, `logs_in`, `gather` and `main`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from reports.shared.errors import UsageError
from reports.shared.findings import Finding
from reports.shared.hostnames import is_plain_host, why_not_plain

SETASIDE_FILE = "setaside.jsonl"
PREFLIGHT_DIR = "preflight"  # DIR/preflight/NODE.log: each node's preflight output
NO_ANSWER = "no preflight output from this node (it did not start, or cannot write the results dir)"
FINGERPRINT = (
    "stoker fingerprint: "  # the preflight's line: HOST DIGEST PYTHON (launchers/commands/fingerprint.py)
)


@dataclass(frozen=True, slots=True)
class SetAside:
    host: str
    reason: str


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


def line(s: SetAside) -> str:
    return json.dumps({"host": s.host, "reason": s.reason}, separators=(",", ":"), ensure_ascii=False) + "\n"


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
        else:
            out.append(SetAside(str(host), str(obj["reason"])[:300]))
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
    """One failing finding per set-aside node: the spec promised it, the job ran without it.
    Given `here` (logs_in: the hosts whose preflight output is in the results dir), each also
    says where that node's output is (extra `preflight_log`: its path in DIR, or None)."""
    out = []
    for s in items:
        where, extra = "", {"set_aside": True, "reason": s.reason}
        if here is not None:
            where = " " + where_output(s.host, here)
            extra["preflight_log"] = f"{PREFLIGHT_DIR}/{s.host}.log" if s.host in here else None
        out.append(
            Finding(
                component="node",
                check="preflight",
                status="below_spec",
                measured=None,
                expected=None,
                unit="",
                hosts=(s.host,),
                message=f"{s.host} was set aside by the preflight and left out of every multi-node phase: "
                f"{s.reason}. Repair or replace it and run the acceptance again.{where}",
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


HELP = "after the preflight: write DIR/setaside.jsonl and print the nodes that go on (the sbatch job)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out", type=Path, help="the results dir")
    parser.add_argument("nodes", help="the job's nodes, comma-separated plain names")
    parser.add_argument("--min-nodes", type=int, default=1, help="fewer nodes left than this: exit 3")


def main(args: argparse.Namespace) -> int:
    nodes = [n for n in str(args.nodes).split(",") if n]
    bad = next((n for n in nodes if not is_plain_host(n)), None)
    if not nodes or bad is not None:
        raise UsageError(f"node {bad!r} {why_not_plain(bad)}; pass the job's nodes as plain names")
    out: Path = args.out
    aside = gather(out, nodes, getattr(args, "digest", None))
    try:
        with open(out / SETASIDE_FILE, "a", encoding="utf-8") as fh:
            fh.writelines(line(s) for s in aside)
    except OSError as exc:
        print(f"stoker: cannot write {out / SETASIDE_FILE}: {exc}", file=sys.stderr)
        return 3
    named = {s.host for s in aside}
    good = [n for n in nodes if n not in named]
    for s in aside:
        print(f"stoker: {s.host} set aside: {s.reason}", file=sys.stderr)
    if len(good) < args.min_nodes:
        print(
            f"stoker: {len(good)} of {len(nodes)} nodes passed the preflight, fewer than --min-nodes "
            f"{args.min_nodes}; set aside: {','.join(s.host for s in aside)}",
            file=sys.stderr,
        )
        return 3
    print(",".join(good))
    return 0
