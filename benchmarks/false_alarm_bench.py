"""False alarms and misses per run, per finding kind, on beds run healthy and with a planted fault.

Each bed (benchmarks/false_alarm_beds.py: the namespaced 3-node cluster, the throttled loop
device, the local `stoker run --profile quick`) is run K times healthy and K times with its fault,
alternately, and judged against a spec stating the bed's real limits. A failing finding
(reports.shared.findings.FAILING) on a healthy run is a false alarm; a faulty run in which a planted
fault's finding kind did not fail (naming its host, where one is expected) is a miss; a failing
finding on a faulty run that is not the planted fault is a wrong name. Prints one line per run
(verdict, seconds, the 1-minute load average before and after) and a markdown table per finding
kind and bed. Root only; exit 0 whatever the figures (2: no root, or a spec disagrees with its bed).

    .venv/bin/python benchmarks/false_alarm_bench.py --runs 5 --lock /tmp/stoker-heavy.lock
    .venv/bin/python benchmarks/false_alarm_bench.py --beds disk --runs 1 --json out.json
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import fcntl
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from reports.shared.findings import FAILING, PASSED  # noqa: E402

CONDITIONS = ("healthy", "faulty")


@dataclass(frozen=True, kw_only=True, slots=True)
class Run:
    bed: str
    faulty: bool
    findings: tuple[tuple[str, str, tuple[str, ...]], ...] = ()  # (kind, status, hosts)
    verdict: str = ""
    error: str = ""  # the bed could not be run: the run counts for nothing
    seconds: float = 0.0
    load: tuple[float, float] = (0.0, 0.0)  # 1-minute load average before, after


@dataclass(frozen=True, kw_only=True, slots=True)
class Row:
    bed: str
    kind: str  # "component: check"
    healthy: int  # healthy runs (errors left out)
    judged: int  # healthy runs in which the kind was judged (passed or failed)
    alarms: int  # healthy runs in which it failed
    transients: int  # healthy runs in which it dipped and recovered when measured again
    faulty: int  # faulty runs (errors left out)
    misses: int | None  # faulty runs without this planted fault (None: not a planted fault)
    wrong: int  # faulty runs in which it failed without being the planted fault
    notes: tuple[str, ...] = field(default=())


def findings_of(verdict: Mapping[str, Any]) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """(kind, status, hosts) of every finding in a verdict.json."""
    return tuple(
        (f"{f.get('component')}: {f.get('check')}", str(f.get("status")), tuple(f.get("hosts") or ()))
        for f in verdict.get("findings", ())
        if isinstance(f, Mapping)
    )


def _fails(run: Run, kind: str, host: str | None = None) -> bool:
    return any(k == kind and s in FAILING and (host is None or host in h) for k, s, h in run.findings)


def _planted(kind: str, hosts: Sequence[str], expect: Sequence[tuple[str, str | None]]) -> bool:
    return any(kind == k and (h is None or h in hosts) for k, h in expect)


def tally(bed: str, runs: Sequence[Run], expect: Sequence[tuple[str, str | None]]) -> list[Row]:
    """One row per finding kind judged on the bed or planted in it."""
    done = [r for r in runs if r.bed == bed and not r.error]
    healthy = [r for r in done if not r.faulty]
    faulty = [r for r in done if r.faulty]
    kinds = {k for r in done for k, s, _ in r.findings if s in FAILING or s in PASSED}
    kinds |= {k for k, _ in expect}
    rows = []
    for kind in sorted(kinds):
        want = [(k, h) for k, h in expect if k == kind]
        rows.append(
            Row(
                bed=bed,
                kind=kind,
                healthy=len(healthy),
                judged=sum(
                    any(k == kind and (s in FAILING or s in PASSED) for k, s, _ in r.findings)
                    for r in healthy
                ),
                alarms=sum(_fails(r, kind) for r in healthy),
                transients=sum(
                    any(k == kind and s == "transient" for k, s, _ in r.findings) for r in healthy
                ),
                faulty=len(faulty),
                misses=sum(not all(_fails(r, k, h) for k, h in want) for r in faulty) if want else None,
                wrong=sum(
                    any(k == kind and s in FAILING and not _planted(k, h, expect) for k, s, h in r.findings)
                    for r in faulty
                ),
            )
        )
    return rows


def _per(n: int, k: int) -> str:
    return f"{n / k:.2f} ({n}/{k})" if k else "—"


def table(rows: Sequence[Row]) -> list[str]:
    out = [
        "| bed | finding kind | judged on healthy | false alarms / run | transients / run | misses / run "
        "| wrong names / run |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        miss = _per(r.misses, r.faulty) if r.misses is not None else "— (not planted)"
        out.append(
            f"| {r.bed} | {r.kind} | {r.judged}/{r.healthy} | {_per(r.alarms, r.healthy)} "
            f"| {_per(r.transients, r.healthy)} | {miss} | {_per(r.wrong, r.faulty)} |"
        )
    return out


@contextlib.contextmanager
def _locked(path: Path | None) -> Iterator[None]:
    """Hold an exclusive flock on `path` (None: nothing), so that heavy beds of other users of
    the same lock file never run beside one run of this benchmark."""
    if path is None:
        yield
        return
    with path.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _one(bed: Any, faulty: bool, out: Path, lock: Path | None) -> Run:
    with _locked(lock):
        return _timed(bed, faulty, out)


def _timed(bed: Any, faulty: bool, out: Path) -> Run:
    before, t0 = os.getloadavg()[0], time.monotonic()
    try:
        v = bed.run(faulty, out)
        kw: dict[str, Any] = {"findings": findings_of(v), "verdict": str(v.get("verdict"))}
    except Exception as e:  # a bed that could not run is reported, not counted
        kw = {"error": f"{type(e).__name__}: {e}"[:300]}
    load = (round(before, 2), round(os.getloadavg()[0], 2))
    return Run(bed=bed.name, faulty=faulty, seconds=round(time.monotonic() - t0, 1), load=load, **kw)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--beds", default="netns,disk,local", help="comma list of netns, disk, local")
    ap.add_argument("--runs", type=int, default=5, help="K: runs per bed and condition (default 5)")
    ap.add_argument("--json", type=Path, help="also write every run and row here")
    ap.add_argument("--lock", type=Path, help="flock this file around each run (e.g. /tmp/stoker-heavy.lock)")
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("false_alarm_bench: needs root (namespaces, tc, loop devices)", file=sys.stderr)
        return 2
    from benchmarks.false_alarm_beds import BEDS, spec_figures_agree

    if bad := spec_figures_agree():
        print(f"false_alarm_bench: a spec disagrees with its bed: {'; '.join(bad)}", file=sys.stderr)
        return 2
    names = [b for b in args.beds.split(",") if b]
    if unknown := [b for b in names if b not in BEDS]:
        print(f"false_alarm_bench: unknown bed {unknown}: use {', '.join(BEDS)}", file=sys.stderr)
        return 2
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"# {started} on {platform.node()} ({os.cpu_count()} CPUs), K = {args.runs} per bed and condition")
    runs: list[Run] = []
    with tempfile.TemporaryDirectory(prefix="false-alarm-") as tmp:
        for name in names:
            for k in range(args.runs):
                for faulty in (False, True):  # alternately: drift in the load hits both alike
                    r = _one(BEDS[name], faulty, Path(tmp) / f"{name}-{CONDITIONS[faulty]}-{k}", args.lock)
                    runs.append(r)
                    failed = sorted({f"{kd} {list(h)}" for kd, s, h in r.findings if s in FAILING})
                    print(
                        f"{name} {CONDITIONS[faulty]} {k + 1}/{args.runs}: {r.verdict or 'ERROR ' + r.error} "
                        f"in {r.seconds:.0f} s, load {r.load[0]:.1f}->{r.load[1]:.1f}; failing: "
                        f"{', '.join(failed) or 'none'}",
                        flush=True,
                    )
    rows = [row for name in names for row in tally(name, runs, BEDS[name].expect)]
    print("\n".join(table(rows)))
    for name in names:
        mine = [r for r in runs if r.bed == name]
        loads = [x for r in mine for x in r.load]
        errors = sum(bool(r.error) for r in mine)
        print(
            f"# {name}: fault = {BEDS[name].fault}; {len(mine)} runs, {errors} errors, "
            f"{sum(r.seconds for r in mine):.0f} s; 1-min load {min(loads):.1f}-{max(loads):.1f}"
        )
    if args.json:
        doc = {"started": started, "runs": [asdict(r) for r in runs], "rows": [asdict(r) for r in rows]}
        args.json.write_text(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
