"""render launchers/slurm/acceptance.sbatch for this cluster and submit it (placeholder until its issue lands)."""
from __future__ import annotations

import argparse

from reports.errors import UsageError

HELP = "render launchers/slurm/acceptance.sbatch for this cluster and submit it"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("rest", nargs=argparse.REMAINDER)


def main(args: argparse.Namespace) -> int:
    raise UsageError("not implemented yet")
