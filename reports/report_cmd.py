"""judge the records in DIR: report.md, report.html, verdict.json (placeholder until its issue lands)."""
from __future__ import annotations

import argparse

from reports.errors import UsageError

HELP = "judge the records in DIR: report.md, report.html, verdict.json"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("rest", nargs=argparse.REMAINDER)


def main(args: argparse.Namespace) -> int:
    raise UsageError("not implemented yet")
