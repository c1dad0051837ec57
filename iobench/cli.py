"""fio-driven checkpoint, dataloader and metadata tests on one or more paths (placeholder until its issue lands)."""
from __future__ import annotations

import argparse

from reports.errors import UsageError

HELP = "fio-driven checkpoint, dataloader and metadata tests on one or more paths"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("rest", nargs=argparse.REMAINDER)


def main(args: argparse.Namespace) -> int:
    raise UsageError("not implemented yet")
