"""`stoker baseline DIR --out FILE`: what an accepted run measured, as an editable YAML baseline
(docs/check.md) that `stoker report --baseline` and `stoker check --baseline` judge against.

The run is judged first, as `stoker report` would (its spec.yaml kept in DIR included), and
the verdict its own report recorded (DIR/verdict.json, judged maybe with a spec not kept) counts
too: a run that failed or is incomplete is not an acceptance, so it makes no baseline unless
`--allow-failed` says so. The file is written by the one writer (reports.shared.safe_write): never over
a file stoker did not write there (a baseline edited by hand included). Exit 0 written, 2 bad
input.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from reports.shared.errors import UsageError

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


def recorded_verdict(directory: Path) -> str:
    """The verdict DIR/verdict.json holds ("" when there is none or it cannot be read: the
    fresh judgement stands alone then)."""
    from reports.shared.safe_read import read_text

    try:
        doc = json.loads(read_text(directory / "verdict.json", "verdict.json", 64 << 20))
    except (UsageError, ValueError):
        return ""
    v = doc.get("verdict") if isinstance(doc, dict) else None
    return v if isinstance(v, str) else ""


def main(args: argparse.Namespace) -> int:
    from reports.judging.fleet.baseline import DEFAULT_TOLERANCE, MAX_TOLERANCE, make, unjudged_warning
    from reports.judging.fleet.baseline_figures import figures
    from reports.judging.fleet.baseline_file import to_yaml
    from reports.pipeline import collect
    from reports.shared.records import utc_now
    from reports.shared.safe_write import write_outputs

    tol = DEFAULT_TOLERANCE if args.tolerance is None else args.tolerance
    if not 0 <= tol <= MAX_TOLERANCE:
        raise UsageError(f"--tolerance {tol:g}: give a share between 0 and {MAX_TOLERANCE}, e.g. 0.15")
    out = Path(args.out)
    if out.is_dir():
        raise UsageError(f"--out {out}: is a directory; give a file name, e.g. {out / 'baseline.yaml'}")
    if not out.parent.is_dir():
        raise UsageError(f"--out {out}: directory {out.parent} does not exist")
    c = collect(Path(args.dir), args.spec)
    verdict = c.verdict["verdict"]
    earlier = recorded_verdict(Path(args.dir))
    bad = next((v for v in (verdict, earlier) if v in ("fail", "incomplete")), "")
    if bad and not args.allow_failed:
        said = f"the run's verdict is {verdict}" if bad == verdict else f"its verdict.json says {earlier}"
        raise UsageError(
            f"{args.dir}: {said}, not an acceptance; a baseline keeps what a good run "
            "measured (pass --allow-failed to keep it anyway)"
        )
    figs = figures(c.report.evidence)
    if not figs:
        raise UsageError(f"{args.dir}: no figure to keep (no sweep, storage, host-link or compute record)")
    run_id = str(c.verdict.get("run_id", "?"))
    unjudged = "unjudged" in (verdict, earlier)
    base = make(run_id, utc_now(), figs, tol, warning=unjudged_warning(run_id) if unjudged else "")
    write_outputs(out.parent, {out.name: to_yaml(base)}, hint="give another --out")
    if base.warning:
        print(f"stoker baseline: warning: {base.warning}", file=sys.stderr)
    kinds: dict[str, int] = {}
    for a in base.figures:
        kinds[a.figure.kind] = kinds.get(a.figure.kind, 0) + 1
    what = ", ".join(f"{n} {k}" for k, n in kinds.items())
    print(f"baseline: {len(base.figures)} figures ({what}) from run {base.run_id} ({verdict}) -> {out}")
    return 0
