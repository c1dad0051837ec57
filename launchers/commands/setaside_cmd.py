"""`stoker set-aside DIR NODES`: reports/shared/setaside.py's decision, with this interpreter's stoker
as the job's. The batch host (the Slurm job's first node, torchrun.sh's node 0, mpirun.sh's
head) runs the job's stoker, so a node whose preflight passed with another one is set aside
with that reason instead of stopping the job (launchers/commands/fingerprint.py says which is which).
With `--phase NAME`, after a multi-node phase: the nodes that phase lost are set aside
(launchers/local/lost_nodes.py) and the rest printed."""

from __future__ import annotations

import argparse
from pathlib import Path

from launchers.commands.fingerprint import digest
from launchers.local import lost_nodes
from reports.shared import setaside

HELP = setaside.HELP


def add_arguments(parser: argparse.ArgumentParser) -> None:
    setaside.add_arguments(parser)
    lost_nodes.add_arguments(parser)


def main(args: argparse.Namespace) -> int:
    if getattr(args, "phase", None):
        return lost_nodes.main(args)
    args.digest = digest(Path(__file__).resolve().parents[2])
    return setaside.main(args)
