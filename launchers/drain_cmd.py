"""`stoker drain DIR`: drain, in Slurm, the nodes an acceptance or soak report found faulty
(DIR/verdict.json), under the rules of launchers/node_actions.py (docs/check.md, "What stoker
acts on"): a failing finding about one node's own hardware, naming one plain host that stoker
itself measured, drained with `Reason="stoker: [report] <finding>"`; never a scope-wide or
shared-storage finding, a placeholder or an imported host; a node an admin drained, downed or
put in maintenance is left as it is. stoker check never resumes a `[report]` drain.

verdict.json is read whole and checked before anything runs (a hand-edited file: one line,
exit 2). --dry-run runs no scheduler command and prints the ones it would run.
Exit 0; 2 bad input; 4 (ACTION_FAILED) when a command failed.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reports.errors import UsageError

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
    from reports.findings import COMPONENTS, STATUSES

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


def read_verdict(path: Path) -> dict[str, Any]:
    """verdict.json through the safe reader, its shape checked whole (UsageError otherwise)."""
    from reports.safe_read import loads_line, read_text

    hint = f"run `stoker report {path.parent}` to write it again"
    text = read_text(path, "verdict", MAX_VERDICT_BYTES)
    doc, why = loads_line(text)
    if why or (why := _shape(doc)):
        raise UsageError(f"{path}: {why}; {hint}")
    return dict(doc)


def own_hosts(directory: Path) -> set[str]:
    """The hosts stoker's own inventory read in DIR (host.jsonl; imports never write it)."""
    from reports.safe_read import iter_lines, loads_line

    path = directory / "host.jsonl"
    if not path.is_file():
        return set()
    out = set()
    for _, line in iter_lines(path, "inventory records"):
        rec, _why = loads_line(line)
        if isinstance(rec, dict) and isinstance(rec.get("host"), str):
            out.add(rec["host"])
    return out


@dataclass(frozen=True, kw_only=True, slots=True)
class Culprits:
    hosts: dict[str, list[str]]  # host -> drain reasons, in the findings' order
    left: list[str]  # one line per failing finding not acted on, saying why


def culprits(verdict: Mapping[str, Any], measured: set[str] | None = None) -> Culprits:
    """The nodes to drain from a checked verdict (pure). `measured`: with imports in the
    run, only the hosts stoker's own inventory read (an imported name is not acted on)."""
    from launchers.check_plan import reason
    from launchers.node_actions import not_node_own
    from reports.findings import FAILING, Finding
    from reports.hostnames import why_not_node

    hosts: dict[str, list[str]] = {}
    left: list[str] = []
    imported = bool(verdict.get("imported"))
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
        elif imported and host not in (measured or set()):
            left.append(
                f"{what}: host {host!a} comes from an imported file, not stoker's own inventory: not drained"
            )
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
    from launchers.action_io import ACTION_FAILED, Actor, slurm

    directory = Path(args.dir)
    verdict = read_verdict(directory / "verdict.json")  # all of it checked before any action
    named = culprits(verdict, own_hosts(directory) if verdict.get("imported") else None)
    actor = Actor(WHO, args.dry_run)
    for line in named.left:
        actor.say(line)
    if not named.hosts:
        actor.say(f"{directory / 'verdict.json'} names no node to drain; nothing to do")
        return 0
    for host, problems in sorted(named.hosts.items()):
        slurm(actor, host, [(TAG, p) for p in problems], frozenset())
    return ACTION_FAILED if actor.failed else 0
