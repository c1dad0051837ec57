"""turn nccl-tests logs/JSON and fio JSON into stoker records (placeholder until its issue lands)."""
from __future__ import annotations

import argparse

from reports.errors import UsageError

HELP = "turn nccl-tests logs/JSON and fio JSON into stoker records"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("rest", nargs=argparse.REMAINDER)


def main(args: argparse.Namespace) -> int:
    raise UsageError("not implemented yet")
