"""`stoker drain DIR`: drain, in Slurm, the culprit nodes an acceptance or soak report named
(DIR/verdict.json: failing findings whose component is a node, or that name one host), with
`Reason="stoker: <finding>"` (docs/check.md). --dry-run prints the scontrol commands.
A node already drained by someone else keeps its reason. Exit 0, 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from reports.errors import UsageError

HELP = "drain in Slurm the culprit nodes a report named (DIR/verdict.json)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "dir", metavar="DIR", help="results directory with verdict.json (run `stoker report DIR`)"
    )
    parser.add_argument("--dry-run", action="store_true", help="print the scontrol commands instead")


def culprits(verdict: dict[str, Any]) -> dict[str, list[str]]:
    """{host: [drain reasons]} from the failing findings that name one host each (pure)."""
    from launchers.check_plan import reason
    from reports.findings import FAILING, Finding

    out: dict[str, list[str]] = {}
    for f in verdict.get("findings", []):
        hosts = f.get("hosts") or []
        if f.get("status") not in FAILING or len(hosts) != 1:
            continue  # a scope-wide finding names no one node to drain
        known = {
            k: f[k]
            for k in ("component", "check", "status", "measured", "expected", "unit", "message")
            if k in f
        }
        finding = Finding(**{**known, "hosts": tuple(hosts)}, extra={"device": f.get("device", "")})
        out.setdefault(hosts[0], []).append(reason(finding))
    return out


def main(args: argparse.Namespace) -> int:
    from launchers.check_cmd import TOOL_TIMEOUT_S, slurm_act

    path = Path(args.dir) / "verdict.json"
    try:
        verdict = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: cannot read it ({exc}); run `stoker report {args.dir}` first") from None
    named = culprits(verdict)
    if not named:
        print(f"stoker drain: {path} names no culprit node; nothing to drain")
        return 0
    for host, problems in sorted(named.items()):
        slurm_act(host, problems, args.dry_run, time.monotonic() + 2 * TOOL_TIMEOUT_S)
    return 0
