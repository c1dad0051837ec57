"""`stoker phase-record DIR NAME RC SECONDS [--log FILE] [--error LINE]`: one phase's line in
DIR/phases.jsonl (reports/shared/phases.py writes it), for the shell launchers' phase runner
(launchers/common.sh runs this module directly: it imports the floor's phases module alone, so
a node whose other stoker modules are broken still records its phases)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from reports.shared.phases import append, line

HELP = "append one phase's line to DIR/phases.jsonl (the shell launchers' phase runner)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out", type=Path, help="the results dir")
    parser.add_argument("phase")
    parser.add_argument("rc", type=int)
    parser.add_argument("elapsed_s", type=int, help="whole seconds, as the shell counts them")
    parser.add_argument("--log", help="the file in DIR holding the phase's output")
    parser.add_argument("--error", help="a failed phase's reason: its last line that says why")


def main(args: argparse.Namespace) -> int:
    """`stoker phase-record ...` (the sbatch job) and `python -m
    launchers.commands.phase_record_cmd ...` (launchers/common.sh)."""
    try:
        error = (args.error or "")[:300] or None
        append(args.out, line(args.phase, args.rc, args.elapsed_s, log=args.log, error=error))
    except OSError as exc:
        sys.stderr.write(f"stoker: cannot record phase {args.phase} in {args.out}: {exc.strerror}\n")
        return 2
    return 0


if __name__ == "__main__":
    _p = argparse.ArgumentParser(prog="python -m launchers.commands.phase_record_cmd", description=HELP)
    add_arguments(_p)
    raise SystemExit(main(_p.parse_args()))
