"""Every option of `stoker run` checked by the phases' own rules before any phase runs.

`stoker run --ops bogus` (or `--iters 0`, `--ckpt-bytes 1`, `--workloads bogus`,
`--io-runtime 0`, `--min-bytes 1G --max-bytes 1K`) was refused only by the phase that got
it, minutes into the run, which then ended "incomplete" (exit 3). Here each phase's argv is
parsed by that command's own parser and validated by its own settings function — the same
code the phase runs, so the two can never disagree — and the first problem is one line,
exit 2, before anything is measured.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterable, Sequence

from reports.shared.errors import UsageError


def _stoker_args(argv: Sequence[str]) -> list[str] | None:
    """The arguments after `-m launchers.cli` (or the `stoker` executable); None otherwise."""
    argv = list(argv)
    if "launchers.cli" in argv:
        return argv[argv.index("launchers.cli") + 1 :]
    if argv and argv[0].endswith("stoker"):
        return argv[1:]
    return None


def check_argv(argv: Sequence[str]) -> None:
    """UsageError (one line) when the stoker command in `argv` would refuse its options."""
    from launchers.parser import OneLineParser

    args_list = _stoker_args(argv)
    if args_list is None or not args_list or args_list[0] not in ("net", "io"):
        return
    if args_list[0] == "net":
        from launchers.commands import net_cmd as command
    else:
        from iobench import cli as command  # type: ignore[no-redef]
    parser = OneLineParser(prog=f"stoker {args_list[0]}", description=command.HELP)
    command.add_arguments(parser)
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            args = parser.parse_args(args_list[1:])
    except SystemExit:
        line = err.getvalue().strip().splitlines()
        raise UsageError(
            line[-1].removeprefix("stoker net: error: ").removeprefix("stoker io: error: ")
            if line
            else f"bad options for stoker {args_list[0]}"
        ) from None
    if args_list[0] == "net":
        from netbench.cli import settings

        settings(args)
    else:
        from iobench.cli import settings_from_args

        settings_from_args(args)


def check_phases(argvs: Iterable[Sequence[str]]) -> None:
    for argv in argvs:
        check_argv(argv)
