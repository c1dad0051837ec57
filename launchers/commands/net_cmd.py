"""`stoker net`: netbench's collective sweeps, given the report's rule for what a sweep measures
again before it fails (reports.judging.confirm.net_to_confirm). The wiring lives here, at the
top, so that netbench imports only the floor of reports (docs/architecture.md). The rule is
imported when rank 0 asks for it, at the end of the phase: the judgement's imports (pandas)
cost no rank, and no other command, anything."""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from typing import Any

from netbench.cli import HELP, add_arguments
from netbench.cli import main as net_main
from reports.shared.records import NetRecord
from reports.shared.spec import Spec

__all__ = ["HELP", "add_arguments", "main", "report_rule"]


def report_rule(
    recs: Sequence[NetRecord], spec: Spec | None, manifests: Sequence[Mapping[str, Any]]
) -> list[tuple[str, str]]:
    from reports.judging.confirm import net_to_confirm

    return net_to_confirm(recs, spec, manifests)


def main(args: argparse.Namespace) -> int:
    args.confirm_rule = report_rule
    return net_main(args)
