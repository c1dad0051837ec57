"""The `stoker` command: a thin dispatcher to one module per subcommand.

Each subcommand module exposes `HELP` (one line), `add_arguments(parser)` and
`main(args) -> int`. Modules are named as strings and imported on use, so that
`launchers` does not depend on netbench or iobench (docs/architecture.md), and so that
`stoker --help` stays fast: these modules must not import torch at import time.
"""

from __future__ import annotations

import importlib
import os
import sys
import tempfile
import traceback
from collections.abc import Sequence
from types import ModuleType

from launchers.parser import OneLineParser
from reports.shared.errors import StokerError

# An unexpected exception (a bug in stoker, not bad input and not a verdict): sysexits'
# EX_SOFTWARE, so no CI pipeline reads a crash as "fail" (1) or "pass" (0).
CRASHED = 70

COMMANDS: dict[str, str] = {
    "run": "launchers.commands.run_cmd",
    "soak": "launchers.commands.soak_cmd",
    "net": "launchers.commands.net_cmd",
    "io": "iobench.cli",
    "inventory": "netbench.inventory.cli",
    "compute": "netbench.compute.cli",
    "report": "reports.commands.report_cmd",
    "submit": "launchers.slurm.submit",
    "compare": "reports.fleet.cmd",
    "import": "reports.commands.import_cmd",
    "baseline": "reports.commands.baseline_cmd",
    "check": "launchers.commands.check_cmd",
    "drain": "launchers.commands.drain_cmd",
}
# the launchers' own plumbing, left out of `stoker --help`: the sbatch job records each
# phase with it, checks that every node runs the same stoker, and sets aside the nodes whose
# preflight failed (docs/launchers.md)
INTERNAL: dict[str, str] = {
    "phase-record": "launchers.commands.phase_record_cmd",
    "fingerprint": "launchers.commands.fingerprint",
    "preflight": "launchers.commands.preflight",  # each node before the sweeps; set-aside gathers them
    "set-aside": "launchers.commands.setaside_cmd",
}


def _module(name: str) -> ModuleType:
    return importlib.import_module(COMMANDS.get(name) or INTERNAL[name])


def build_parser(only: str | None = None) -> OneLineParser:
    """The whole parser; with `only` (a subcommand named on the command line), that
    subcommand's arguments alone: the others' modules are not imported (a report of a
    1,000-node run should not pay for importing the netbench and launcher modules)."""
    parser = OneLineParser(
        prog="stoker",
        description="Will this cluster's network and storage starve its accelerators? "
        "Run with no arguments for the local default (`stoker run`).",
    )
    parser.add_argument("--version", action="version", version=f"stoker {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)
    for name in (*COMMANDS, *INTERNAL):
        if only is not None and name != only:
            sub.add_parser(name)  # known, so that argparse's choices stay whole; not imported
            continue
        mod = _module(name)
        listed = {"help": mod.HELP} if name in COMMANDS else {}  # argparse lists only those given help=
        p = sub.add_parser(name, description=mod.HELP, **listed)
        mod.add_arguments(p)
    return parser


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("stoker")
    except Exception:  # running from a source tree without installing
        return "0+unknown"


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if not args_list or args_list[0].startswith("-") and args_list[0] not in ("-h", "--help", "--version"):
        args_list = ["run", *args_list]  # `stoker` alone is `stoker run`
    command = ""  # known once parsed; a crash while building the parser is still one line
    try:
        first = args_list[0]
        only = first if first in COMMANDS or first in INTERNAL else None
        args = build_parser(only).parse_args(args_list)
        command = args.command
        return int(_module(command).main(args) or 0)
    except StokerError as exc:
        sys.stderr.write(f"{_who(command)}: {exc}\n")
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write(f"{_who(command)}: interrupted\n")
        return 3
    except Exception as exc:  # noqa: BLE001 - the last line of defence: one line and a file
        where = _write_traceback(command or "cli")
        summary = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
        sys.stderr.write(
            f"{_who(command)}: internal error ({summary}); the full traceback is in {where}; "
            f"please report it (exit {CRASHED})\n"
        )
        return CRASHED


def _who(command: str) -> str:
    return f"stoker {command}" if command else "stoker"


def _write_traceback(command: str) -> str:
    """The current exception's traceback in a new file of the temp dir; its path."""
    text = traceback.format_exc()
    try:
        fd, path = tempfile.mkstemp(prefix=f"stoker-{command}-crash-", suffix=".txt")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        return path
    except OSError:
        sys.stderr.write(text)  # nowhere to write it: the traceback itself, rather than nothing
        return "the lines above"


if __name__ == "__main__":
    raise SystemExit(main())
