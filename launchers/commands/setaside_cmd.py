"""`stoker set-aside DIR NODES`: reports/shared/setaside.py's decision, with this interpreter's stoker
as the job's. The batch host (the Slurm job's first node, torchrun.sh's node 0, mpirun.sh's
head) runs the job's stoker, so a node whose preflight passed with another one is set aside
with that reason instead of stopping the job (launchers/commands/fingerprint.py says which is which)."""

from __future__ import annotations

import argparse
from pathlib import Path

from launchers.commands.fingerprint import digest
from reports.shared import setaside

HELP = setaside.HELP
add_arguments = setaside.add_arguments


def main(args: argparse.Namespace) -> int:
    args.digest = digest(Path(__file__).resolve().parents[2])
    return setaside.main(args)
