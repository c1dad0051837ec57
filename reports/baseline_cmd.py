"""`stoker baseline DIR --out FILE`: what an accepted run measured, as an editable YAML baseline
(docs/check.md) that `stoker report --baseline` and `stoker check --baseline` judge against.

The run is judged first, as `stoker report` would (its spec.yaml kept in DIR included): a run
that failed or is incomplete is not an acceptance, so it makes no baseline unless
`--allow-failed` says so. Exit 0 written, 2 bad input.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from reports.errors import UsageError

HELP = "write the accepted baseline (YAML) from the results in DIR"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dir", metavar="DIR", help="results directory of the accepted run")
    parser.add_argument("--out", metavar="FILE", required=True, help="baseline YAML to write")
    parser.add_argument("--spec", metavar="FILE", help="cluster spec the run is judged against first")
    parser.add_argument(
        "--tolerance",
        type=float,
        default=None,
        help="least tolerance of every figure, 0-0.5 (default 0.15; widened where the run was noisier)",
    )
    parser.add_argument(
        "--allow-failed", action="store_true", help="write a baseline even from a run that did not pass"
    )


def write_atomically(path: Path, text: str) -> None:
    """A temp file in the same directory, then rename: a reader never sees half a file."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def main(args: argparse.Namespace) -> int:
    from reports.baseline_file import to_yaml
    from reports.judging.baseline import DEFAULT_TOLERANCE, MAX_TOLERANCE, figures, make
    from reports.records import utc_now
    from reports.report_cmd import collect

    tol = DEFAULT_TOLERANCE if args.tolerance is None else args.tolerance
    if not 0 <= tol <= MAX_TOLERANCE:
        raise UsageError(f"--tolerance {tol:g}: give a share between 0 and {MAX_TOLERANCE}, e.g. 0.15")
    out = Path(args.out)
    if not out.parent.is_dir():
        raise UsageError(f"--out {out}: directory {out.parent} does not exist")
    c = collect(Path(args.dir), args.spec)
    verdict = c.verdict["verdict"]
    if verdict in ("fail", "incomplete") and not args.allow_failed:
        raise UsageError(
            f"{args.dir}: the run's verdict is {verdict}, not an acceptance; a baseline keeps what a good run "
            "measured (pass --allow-failed to keep it anyway)"
        )
    figs = figures(c.report.evidence)
    if not figs:
        raise UsageError(f"{args.dir}: no figure to keep (no sweep, storage, host-link or compute record)")
    base = make(str(c.verdict.get("run_id", "?")), utc_now(), figs, tol)
    write_atomically(out, to_yaml(base))
    kinds: dict[str, int] = {}
    for a in base.figures:
        kinds[a.figure.kind] = kinds.get(a.figure.kind, 0) + 1
    what = ", ".join(f"{n} {k}" for k, n in kinds.items())
    print(f"baseline: {len(base.figures)} figures ({what}) from run {base.run_id} ({verdict}) -> {out}")
    return 0
