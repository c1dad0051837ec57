"""False alarms and misses per run, per finding kind: a skeleton on the local run bed.

A healthy bed run K times should fail nothing: every failing finding (below_spec, starving,
unstable, regression) there is a false alarm. A faulty bed run K times should fail the kind of
finding its fault makes each time: every run without it is a miss. This skeleton runs the local
bed only (`stoker run --profile quick` on this machine, taken as healthy) and prints, per finding
kind ("component: check"), the false alarms per run; `--faulty-dir` tallies misses over result
directories a faulty bed left (each with its verdict.json), against `--expect KIND`.
The namespaced 3-node bed and the throttled disk are not run here (they need root and minutes
each); their result directories can be tallied the same way.

    .venv/bin/python benchmarks/false_alarm_bench.py --runs 5
    .venv/bin/python benchmarks/false_alarm_bench.py --runs 0 --faulty-dir DIR... --expect "local storage: checkpoint_write write bandwidth"
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
FAILING = ("below_spec", "starving", "unstable", "regression")


@dataclass(frozen=True, kw_only=True, slots=True)
class Row:
    kind: str  # "component: check"
    runs: int
    alarms: int  # runs of a healthy bed in which this kind failed
    misses: int  # runs of a faulty bed in which this expected kind did not fail

    @property
    def per_run(self) -> float:
        return (self.alarms + self.misses) / self.runs if self.runs else 0.0


def failing_kinds(verdict: Mapping[str, Any]) -> set[str]:
    """The finding kinds that failed in one verdict.json (each counted once per run)."""
    return {
        f"{f.get('component')}: {f.get('check')}"
        for f in verdict.get("findings", ())
        if isinstance(f, Mapping) and f.get("status") in FAILING
    }


def judged_findings(verdict: Mapping[str, Any]) -> int:
    """Findings set against something (ok or failing): a run that judged none cannot raise an alarm."""
    return sum(
        1
        for f in verdict.get("findings", ())
        if isinstance(f, Mapping) and (f.get("status") == "ok" or f.get("status") in FAILING)
    )


def tally(
    healthy: Sequence[Mapping[str, Any]], faulty: Sequence[Mapping[str, Any]], expect: Iterable[str]
) -> list[Row]:
    """Rows per kind: false alarms over the healthy runs, misses of each expected kind over the faulty runs."""
    alarms = Counter(k for v in healthy for k in failing_kinds(v))
    expected = sorted(set(expect))
    misses = {k: sum(k not in failing_kinds(v) for v in faulty) for k in expected}
    rows = [Row(kind=k, runs=len(healthy), alarms=n, misses=0) for k, n in sorted(alarms.items())]
    rows += [Row(kind=k, runs=len(faulty), alarms=0, misses=misses[k]) for k in expected]
    return rows


def run_local(out: Path) -> dict[str, Any]:
    """One `stoker run --profile quick` on this machine; its verdict.json."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    argv = [sys.executable, "-m", "launchers.cli", "run", "--profile", "quick", "--out", str(out)]
    subprocess.run(argv, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    doc: dict[str, Any] = json.loads((out / "verdict.json").read_text())
    return doc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5, help="K: local healthy runs")
    ap.add_argument("--faulty-dir", nargs="*", default=[], type=Path, help="results of a faulty bed")
    ap.add_argument("--expect", action="append", default=[], help="the kind a faulty run should fail")
    args = ap.parse_args()
    healthy = []
    with tempfile.TemporaryDirectory(prefix="false-alarm-") as tmp:
        for i in range(args.runs):
            v = run_local(Path(tmp) / f"run{i}")
            healthy.append(v)
            print(
                f"run {i + 1}/{args.runs}: {v.get('verdict')} ({', '.join(sorted(failing_kinds(v))) or 'nothing failed'})"
            )
    faulty = [json.loads((d / "verdict.json").read_text()) for d in args.faulty_dir]
    print("| bed | finding kind | runs | false alarms | misses | per run |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in tally(healthy, faulty, args.expect):
        bed = "local (healthy)" if r.alarms else "faulty"
        print(f"| {bed} | {r.kind} | {r.runs} | {r.alarms} | {r.misses} | {r.per_run:.2f} |")
    verdicts = Counter(v.get("verdict") for v in healthy)
    judged = sum(judged_findings(v) for v in healthy)
    print(
        f"local verdicts over {len(healthy)} runs: {dict(sorted(verdicts.items()))}; findings judged "
        f"(ok or failing) per run: {judged / max(1, len(healthy)):.1f} (0: nothing could raise an alarm)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
