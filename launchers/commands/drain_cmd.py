"""`stoker drain DIR`: drain, in Slurm, the nodes an acceptance or soak report found faulty
(DIR/verdict.json), under the rules of launchers/actions/node_actions.py (docs/check.md, "What stoker
acts on"): a failing finding about one node's own hardware, naming one plain host that stoker
itself measured, drained with `Reason="stoker: [report] <finding>"`; never a scope-wide or
shared-storage finding, a placeholder or an imported host; a node an admin drained, downed or
put in maintenance is left as it is. stoker check never resumes a `[report]` drain.

verdict.json is read whole and checked before anything runs, and only when stoker wrote it:
the outputs ledger (reports/shared/safe_write.py) vouches for its bytes, and the records it was judged
from (its `inputs`) are in DIR unchanged; a hand-written or edited verdict, or records changed
since: one line, exit 2. A host is drained only when stoker's own records in DIR name it
(`measured_hosts`) and no imported file does (`imported_hosts`); a verdict that is not `fail`
drains nothing. --dry-run runs no scheduler command and prints the ones it would run.
Exit 0; 2 bad input; 4 (ACTION_FAILED) when a command failed.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reports.shared.errors import UsageError

HELP = "drain in Slurm the culprit nodes a report named (DIR/verdict.json)"
WHO = "stoker drain"
MAX_VERDICT_BYTES = 64 << 20
TAG = "report"  # no check step measures an acceptance finding again: resumed by hand

_TEXT = ("component", "check", "status", "unit", "message", "device", "scope", "path", "figure")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "dir", metavar="DIR", help="results directory with verdict.json (run `stoker report DIR`)"
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="run no scheduler command; print the ones it would run"
    )


def _shape(doc: Any) -> str:
    """Why `doc` is not a verdict.json drain can read ("" when it is)."""
    from reports.shared.findings import COMPONENTS, STATUSES

    if not isinstance(doc, dict):
        return "is not a JSON object"
    imported = doc.get("imported", [])
    if not isinstance(imported, list) or not all(isinstance(x, str) for x in imported):
        return "imported is not a list of file names"
    findings = doc.get("findings")
    if not isinstance(findings, list):
        return "findings is not a list"
    for i, f in enumerate(findings):
        at = f"findings[{i}]"
        if not isinstance(f, dict):
            return f"{at} is not an object"
        for key in _TEXT:
            if key in f and not isinstance(f[key], str):
                return f"{at}.{key} is not a string"
        if f.get("component") not in COMPONENTS or f.get("status") not in STATUSES:
            return f"{at} has no known component and status"
        hosts = f.get("hosts", [])
        if not isinstance(hosts, list) or not all(isinstance(h, str) for h in hosts):
            return f"{at}.hosts is not a list of host names"
        for key in ("measured", "expected"):
            v = f.get(key)
            if v is not None and (
                isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v)
            ):
                return f"{at}.{key} is not a finite number"
    return ""


def _origins_shape(doc: dict[str, Any]) -> str:
    """Why the verdict's origin fields (what it was judged from, whose hosts) are not there."""
    inputs = doc.get("inputs")
    if not isinstance(inputs, dict) or not inputs:
        return "names no records it was judged from (`inputs`; an older stoker wrote it?)"
    if not all(isinstance(k, str) and isinstance(v, str) and "/" not in k for k, v in inputs.items()):
        return "inputs is not a map of file names to SHA-256 digests"
    for key in ("measured_hosts", "imported_hosts"):
        hosts = doc.get(key)
        if not isinstance(hosts, list) or not all(isinstance(h, str) for h in hosts):
            return f"{key} is not a list of host names"
    if not isinstance(doc.get("verdict"), str):
        return "verdict is not a string"
    return ""


def _inputs_changed(directory: Path, inputs: Mapping[str, str]) -> str:
    """Why the records a verdict was judged from are not those in DIR now ("" when they are:
    each present with its digest, and no record file added since)."""
    from reports.pipeline import input_digests, record_inputs

    now = input_digests(directory, [n for n in inputs if n not in record_inputs()])
    for name, digest in sorted(inputs.items()):
        if name not in now:
            return f"{name}, which it was judged from, is gone"
        if now[name] != digest:
            return f"{name} changed since it was judged"
    added = sorted(set(now) - set(inputs))
    return f"{added[0]} was added since it was judged" if added else ""


def read_verdict(path: Path) -> dict[str, Any]:
    """verdict.json through the safe reader, its shape checked whole (UsageError otherwise),
    and only when stoker wrote it (the outputs ledger vouches for its bytes) and the records
    it was judged from are in DIR unchanged."""
    from reports.shared.safe_read import loads_line, read_text
    from reports.shared.safe_write import why_not_vouched

    hint = f"run `stoker report {path.parent}` to write it again"
    if why := why_not_vouched(path.parent, path.name):
        raise UsageError(f"{path}: {why}; stoker acts only on a verdict it wrote: {hint}")
    text = read_text(path, "verdict", MAX_VERDICT_BYTES)
    doc, why = loads_line(text)
    if why or (why := _shape(doc)) or (why := _origins_shape(doc)):
        raise UsageError(f"{path}: {why}; {hint}")
    if why := _inputs_changed(path.parent, doc["inputs"]):
        raise UsageError(f"{path}: {why}; {hint}")
    return dict(doc)


@dataclass(frozen=True, kw_only=True, slots=True)
class Culprits:
    hosts: dict[str, list[str]]  # host -> drain reasons, in the findings' order
    left: list[str]  # one line per failing finding not acted on, saying why


def culprits(verdict: Mapping[str, Any]) -> Culprits:
    """The nodes to drain from a checked verdict (pure): only hosts of stoker's own records
    (`measured_hosts`), never one an imported file names (`imported_hosts`), and nothing
    from a verdict that is not `fail`."""
    from launchers.actions.check_plan import reason
    from launchers.actions.node_actions import not_node_own
    from reports.shared.findings import FAILING, Finding
    from reports.shared.hostnames import host_key, why_not_node

    hosts: dict[str, list[str]] = {}
    left: list[str] = []
    measured = {host_key(h) for h in verdict.get("measured_hosts", ())}
    imported = {host_key(h) for h in verdict.get("imported_hosts", ())}
    if verdict.get("verdict", "fail") != "fail":
        return Culprits(
            hosts={}, left=[f"the verdict is {verdict['verdict']!a}: nothing failed, nothing drained"]
        )
    for f in verdict["findings"]:
        if f["status"] not in FAILING:
            continue
        names = f.get("hosts", [])
        what = f"{f.get('check', f['component'])!a} ({f['component']})"
        if len(names) != 1:
            left.append(f"{what} names {len(names)} hosts, not one node: not drained")
            continue
        host = names[0]
        if why := not_node_own(f["component"], f):
            left.append(f"{what} on {host!a}: {why}: not drained")
        elif why := why_not_node(host):  # on exactly the name scontrol would get
            left.append(f"{what}: host {host!a} {why}: not drained")
        elif host_key(host) in imported:
            left.append(
                f"{what}: host {host!a} comes from an imported file, not stoker's own records: not drained"
            )
        elif host_key(host) not in measured:
            left.append(f"{what}: host {host!a} is in none of stoker's own records in DIR: not drained")
        else:
            known = {
                k: f[k]
                for k in ("component", "check", "status", "measured", "expected", "unit", "message")
                if k in f
            }
            finding = Finding(
                **{"check": "", "unit": "", "message": "", "measured": None, "expected": None, **known},
                hosts=(host,),
                extra={"device": f.get("device", "")},
            )
            hosts.setdefault(host, []).append(reason(finding))
    return Culprits(hosts=hosts, left=left)


def main(args: argparse.Namespace) -> int:
    from launchers.actions.action_io import ACTION_FAILED, Actor, slurm

    directory = Path(args.dir)
    verdict = read_verdict(directory / "verdict.json")  # all of it checked before any action
    named = culprits(verdict)
    actor = Actor(WHO, args.dry_run)
    for line in named.left:
        actor.say(line)
    if not named.hosts:
        actor.say(f"{directory / 'verdict.json'} names no node to drain; nothing to do")
        return 0
    for host, problems in sorted(named.hosts.items()):
        slurm(actor, host, [(TAG, p) for p in problems], frozenset())
    return ACTION_FAILED if actor.failed else 0
