"""`stoker net`: netbench's collective sweeps, given the report's rule for what a sweep measures
again before it fails (reports.judging.confirm.net_to_confirm). The wiring lives here, at the
top, so that netbench imports only the floor of reports (docs/architecture.md)."""

from __future__ import annotations

import argparse

from netbench.cli import HELP, add_arguments
from netbench.cli import main as net_main
from reports.judging.confirm import net_to_confirm

__all__ = ["HELP", "add_arguments", "main"]


def main(args: argparse.Namespace) -> int:
    args.confirm_rule = net_to_confirm
    return net_main(args)
