"""How often `stoker check --baseline` calls an unchanged machine a regression (goal: never).

Takes a baseline the way a person would on a fresh machine (`stoker run --out R`, then `stoker
baseline R --out b.yaml`; or reuses `--baseline FILE`), then runs `stoker check --baseline`
K times on the same, unchanged machine and counts the checks that would drain it: exit 1 with
a `regression` line. A transient (a dip measured again and passing) is counted apart: it drains
nothing. Exit 0 when no check regressed.

    .venv/bin/python benchmarks/check_false_regression.py [-k 10] [--baseline FILE] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STOKER = (sys.executable, "-m", "launchers.cli")


def _run(argv: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*STOKER, *argv], capture_output=True, text=True, timeout=timeout)


def baseline(work: Path) -> Path:
    """The default run (quick on a CPU machine) and its baseline, as a person takes them."""
    r = _run(["run", "--out", str(work / "R")], timeout=900)
    print(f"stoker run: exit {r.returncode}; {(r.stdout.strip().splitlines() or ['?'])[-1]}")
    b = _run(["baseline", str(work / "R"), "--out", str(work / "b.yaml")], timeout=300)
    print(f"stoker baseline: exit {b.returncode}: {(b.stdout + b.stderr).strip()[:300]}")
    if b.returncode != 0:
        raise SystemExit(2)
    return work / "b.yaml"


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("-k", type=int, default=10, help="checks to run (at least 10)")
    ap.add_argument("--baseline", help="an existing baseline (default: take one with stoker run)")
    ap.add_argument("--keep", help="directory for the run and the baseline (default: a temp dir)")
    args = ap.parse_args()
    if args.k < 10:
        print(f"-k {args.k}: give at least 10 checks", file=sys.stderr)
        return 2
    work = Path(args.keep or tempfile.mkdtemp(prefix="stoker-false-regression-"))
    work.mkdir(parents=True, exist_ok=True)
    base = Path(args.baseline) if args.baseline else baseline(work)
    counts = {"pass": 0, "regression": 0, "incomplete": 0, "other": 0}
    transients = 0
    for i in range(args.k):
        t = time.monotonic()
        c = _run(["check", "--baseline", str(base), "-v"], timeout=120)
        lines = [ln for ln in c.stdout.splitlines() if ln.strip()]
        transients += sum(" transient: " in ln for ln in lines)
        kind = {
            0: "pass",
            1: "regression" if any(" regression: " in ln for ln in lines) else "other",
            3: "incomplete",
        }
        what = kind.get(c.returncode, "other")
        counts[what] += 1
        said = [ln for ln in lines if " regression: " in ln or " transient: " in ln]
        load = os.getloadavg()[0]  # others' work on the machine: the figures move with it
        print(
            f"check {i + 1}: exit {c.returncode} ({what}), {time.monotonic() - t:.1f} s, load {load:.1f}"
            + "".join(f"\n  {s}" for s in said),
            flush=True,
        )
    print(
        f"false regressions: {counts['regression']} of {args.k} checks on the unchanged machine "
        f"(pass {counts['pass']}, incomplete {counts['incomplete']}, other {counts['other']}; "
        f"{transients} transient dip(s) measured again and passed)"
    )
    return 0 if counts["regression"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
