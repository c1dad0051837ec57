"""`stoker set-aside DIR NODES`: reports/shared/setaside.py's decision, with this interpreter's stoker
as the job's. The batch host (the Slurm job's first node, torchrun.sh's node 0, mpirun.sh's
head) runs the job's stoker, so a node whose preflight passed with another one is set aside
with that reason instead of stopping the job (launchers/commands/fingerprint.py says which is which).
With `--phase NAME`, after a multi-node phase: the nodes that phase lost are set aside and the
rest printed; torchrun.sh's from the nodes' heartbeats and end files (launchers/local/lost_nodes.py),
the sbatch job's, with `--step-log FILE`, from srun's output of the step (launchers/slurm/lost_step.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from launchers.commands.fingerprint import digest
from launchers.local import lost_nodes
from launchers.slurm import lost_step
from reports.shared import setaside
from reports.shared.errors import UsageError
from reports.shared.hostnames import is_plain_host, why_not_plain

HELP = "after the preflight: write DIR/setaside.jsonl and print the nodes that go on (the sbatch job)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out", type=Path, help="the results dir")
    parser.add_argument("nodes", help="the job's nodes, comma-separated plain names")
    parser.add_argument("--min-nodes", type=int, default=1, help="fewer nodes left than this: exit 3")
    parser.add_argument(
        "--never-started",
        default="",
        metavar="NAMES",
        help="the nodes that did not reach the start barrier (comma-separated; not in NODES): set aside first",
    )
    parser.add_argument(
        "--start-limit", type=int, default=0, metavar="S", help="the start barrier's limit, for their reason"
    )
    lost_nodes.add_arguments(parser)
    lost_step.add_arguments(parser)


def plain_nodes(args: argparse.Namespace) -> list[str]:
    """NODES as names, each a plain host name, else a one-line error."""
    nodes = [n for n in str(args.nodes).split(",") if n]
    bad = next((n for n in nodes if not is_plain_host(n)), None)
    if not nodes or bad is not None:
        raise UsageError(f"node {bad!r} {why_not_plain(bad)}; pass the job's nodes as plain names")
    return nodes


def set_aside(args: argparse.Namespace) -> int:
    """Set aside the nodes whose preflight did not pass (and those that never started): DIR/setaside.jsonl
    written, the nodes that go on printed (exit 0), or exit 3 with fewer than --min-nodes left."""
    nodes = plain_nodes(args)
    late = [n for n in str(getattr(args, "never_started", "") or "").split(",") if n]
    bad = next((n for n in late if not is_plain_host(n) or n in nodes), None)
    if bad is not None:
        raise UsageError(
            f"--never-started {bad!r}: "
            f"{why_not_plain(bad) or 'is in NODES too'}; pass the nodes that never started as plain names"
        )
    out: Path = args.out
    aside = setaside.never_started(late, int(getattr(args, "start_limit", 0) or 0))
    aside += setaside.gather(out, nodes, getattr(args, "digest", None))
    named = {s.host for s in aside}
    return setaside.record(
        out, aside, [n for n in nodes if n not in named], args.min_nodes, "passed the preflight"
    )


def main(args: argparse.Namespace) -> int:
    if getattr(args, "step_log", None) and not getattr(args, "phase", None):
        raise UsageError("--step-log needs --phase NAME: the phase whose step wrote it")
    if getattr(args, "phase", None) and getattr(args, "step_log", None):
        plain_nodes(args)
        return lost_step.main(args)
    if getattr(args, "phase", None):
        return lost_nodes.main(args)
    args.digest = digest(Path(__file__).resolve().parents[2])
    return set_aside(args)
