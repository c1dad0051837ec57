"""`python -m launchers.local.summary OUT REPORT_RC [ABORTED_PHASE ...]`: one machine-readable
line for the log of the node that wrote the report, so that `kubectl logs`, `sky logs` or
`dstack logs` give the answer even when no volume holds the results:

    stoker-summary {"verdict": "fail", "exit": 1, "run_id": ..., "aborted": [], "findings": {"ok": 7, ...}, "hosts": [...]}

Reads OUT/verdict.json (the contract's); without it the verdict is null."""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from launchers.local.phases import exit_code

PREFIX = "stoker-summary "


def summary(verdict: dict[str, Any] | None, report_rc: int, aborted: Sequence[str]) -> dict[str, Any]:
    """Pure: the summary of a verdict.json (or of none) and the phases that aborted."""
    findings = (verdict or {}).get("findings", [])
    return {
        "verdict": (verdict or {}).get("verdict"),
        "exit": exit_code(report_rc, verdict is not None, bool(aborted)),
        "run_id": (verdict or {}).get("run_id"),
        "aborted": list(aborted),
        "findings": dict(sorted(Counter(str(f.get("status")) for f in findings).items())),
        "hosts": sorted({h for f in findings for h in f.get("hosts") or []}),
    }


def main(argv: Sequence[str]) -> int:
    if len(argv) < 2 or not argv[1].lstrip("-").isdigit():
        sys.stderr.write("usage: python -m launchers.local.summary OUT REPORT_RC [ABORTED_PHASE ...]\n")
        return 2
    try:
        verdict = json.loads((Path(argv[0]) / "verdict.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        verdict = None
    print(PREFIX + json.dumps(summary(verdict, int(argv[1]), argv[2:])), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
