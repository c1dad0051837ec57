"""the embedded default: network sweep, storage tests and the report on this machine (placeholder until its issue lands)."""
from __future__ import annotations

import argparse

from reports.errors import UsageError

HELP = "the embedded default: network sweep, storage tests and the report on this machine"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("rest", nargs=argparse.REMAINDER)


def main(args: argparse.Namespace) -> int:
    raise UsageError("not implemented yet")
