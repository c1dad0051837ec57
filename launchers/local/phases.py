"""Run a sequence of phases as child processes, with progress, time limits and a record
of how each ended (`DIR/phases.jsonl`, whose lines reports/shared/phases.py writes for every
launcher).

The only IO of `stoker run`: each phase is an argument list from the builders, started in
its own session so that a phase past its limit is ended with all its ranks.

A caller that holds `StopSignals` (`stoker soak`) is never interrupted mid-step: SIGTERM and
SIGINT are counted, and the phase running hears them as its `on_stop` says (ON_STOP).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, Literal, TextIO

from reports.shared import phases as phase_lines

KILL_AFTER_S = 15  # TERM at the limit, KILL this much later, as `timeout --kill-after`
POLL_S = 0.2  # how often a phase run under StopSignals looks for a stop

OnStop = Literal["end", "tell", "wait"]
Act = Literal["end", "term", "kill", "note"]
# What a phase hears at the 1st, 2nd, ... stop signal that arrives while it runs (the last
# entry repeats): `end` ends its process group (TERM, KILL after KILL_AFTER_S); `tell` sends
# TERM once and lets it finish what it does (a soak's pass in flight), a second signal KILLs
# it; `wait` lets it finish (the report the run promises), a second signal ends it.
ON_STOP: dict[OnStop, tuple[Act, ...]] = {
    "end": ("end",),
    "tell": ("term", "kill"),
    "wait": ("note", "end"),
}
_SAID: dict[Act, str] = {
    "end": "stopping it",
    "term": "it finishes the pass in flight, then stops (again to end it now)",
    "kill": "ending it now",
    "note": "it finishes first (again to end it now)",
}


@dataclass(frozen=True, kw_only=True, slots=True)
class Phase:
    name: str  # a phase of reports.shared.phases, or a chunk of a soak ("network 3..", "checkpoint")
    argv: tuple[str, ...]
    limit_s: int
    on_stop: OnStop = "end"


class StopSignals:
    """SIGTERM (scancel, timeout, Kubernetes) and SIGINT (Ctrl-C) counted, never raised, while
    installed: a stop can land anywhere, and the caller acts on it between its steps."""

    def __init__(self) -> None:
        self.count = 0
        self.name = ""  # the first signal's name
        self._old: dict[int, Any] = {}

    def __enter__(self) -> StopSignals:
        for sig in (signal.SIGTERM, signal.SIGINT):
            self._old[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        self.count += 1
        self.name = self.name or signal.Signals(signum).name

    def __exit__(self, *exc: object) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)


@dataclass(frozen=True, kw_only=True, slots=True)
class PhaseResult:
    name: str  # a phase of reports.shared.phases, or a chunk of a soak ("network 3..", "checkpoint")
    rc: int  # the child's exit code; 124 when it ran past its limit (as timeout(1))
    elapsed_s: float
    last_line: str = ""  # its last line of output: the report names it when the phase failed
    interrupted: bool = False  # a stop signal arrived while it ran (StopSignals)

    @property
    def ok(self) -> bool:
        return self.rc == 0


def _clock(seconds: float) -> str:
    return f"{int(seconds) // 60:d}:{int(seconds) % 60:02d}"


def _pump(src: TextIO, prefix: str, sink: TextIO, last: list[str]) -> None:
    for line in src:
        if line.strip():
            last[:] = [line.strip()]
        sink.write(f"{prefix}{line}" if line.endswith("\n") else f"{prefix}{line}\n")
        sink.flush()


def end_group(proc: subprocess.Popen[str], grace_s: float = KILL_AFTER_S, kill_wait_s: float = 5) -> None:
    """TERM a child's whole process group (a phase's ranks, a check's tool), KILL what is
    left after `grace_s`, and wait up to `kill_wait_s` for it to go."""
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, kill_wait_s)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


def _act(proc: subprocess.Popen[str], act: Act) -> None:
    if act == "end":
        end_group(proc)
    elif act != "note":
        try:
            os.killpg(proc.pid, signal.SIGTERM if act == "term" else signal.SIGKILL)
        except ProcessLookupError:
            pass


def _wait(
    proc: subprocess.Popen[str], phase: Phase, stop: StopSignals, say: TextIO, where: str, seen: int
) -> int:
    """The child's exit code, acting on each stop signal that arrives meanwhile (past the `seen`
    ones, counted before the child started); TimeoutExpired past the phase's limit."""
    deadline = time.monotonic() + phase.limit_s
    acted = 0
    while True:
        try:
            rc = proc.wait(timeout=POLL_S)
        except subprocess.TimeoutExpired:
            if time.monotonic() > deadline:
                raise
        else:
            if stop.count > seen + acted:  # it ended as the stop arrived: say so, nothing to act on
                say.write(f"{where} {phase.name}: {stop.name or 'stop'} asked; it had finished\n")
                say.flush()
            return rc
        while acted < stop.count - seen:
            acts = ON_STOP[phase.on_stop]
            act = acts[min(acted, len(acts) - 1)]
            acted += 1
            say.write(f"{where} {phase.name}: {stop.name or 'stop'} asked; {_SAID[act]}\n")
            say.flush()
            _act(proc, act)


def run_phase(
    phase: Phase,
    index: int,
    total: int,
    env: Mapping[str, str],
    sink: TextIO = sys.stdout,
    stop: StopSignals | None = None,
) -> PhaseResult:
    start = time.monotonic()
    where = f"[{index}/{total}]" if total else f"[{index}]"  # total 0: not known ahead (a soak)
    sink.write(f"{where} {phase.name}: started (limit {_clock(phase.limit_s)})\n")
    sink.flush()
    asked = stop.count if stop else 0  # before the child starts: a stop from then on is its to hear
    proc = subprocess.Popen(
        list(phase.argv),
        env=dict(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        start_new_session=True,
    )
    assert proc.stdout is not None
    last: list[str] = []
    reader = threading.Thread(target=_pump, args=(proc.stdout, f"  {phase.name} | ", sink, last), daemon=True)
    reader.start()
    try:
        rc = _wait(proc, phase, stop, sink, where, asked) if stop else proc.wait(timeout=phase.limit_s)
    except subprocess.TimeoutExpired:
        end_group(proc)
        rc = 124
        sink.write(f"{where} {phase.name}: past its limit of {phase.limit_s} s, stopped\n")
    except KeyboardInterrupt:
        end_group(proc)
        raise
    reader.join(timeout=5)
    elapsed = time.monotonic() - start
    sink.write(
        f"{where} {phase.name}: {'done' if rc == 0 else f'ended with exit code {rc}'} "
        f"after {_clock(elapsed)}\n"
    )
    sink.flush()
    return PhaseResult(
        name=phase.name,
        rc=rc,
        elapsed_s=elapsed,
        last_line="".join(last)[:300],
        interrupted=stop is not None and stop.count > asked,
    )


def record_phase(out: Path, result: PhaseResult, skipped: bool = False) -> None:
    error = result.last_line if result.rc != 0 else None
    # a phase left out on purpose (stoker run --skip) says so: the report's coverage names it
    phase_lines.append(
        out,
        phase_lines.line(result.name, result.rc, round(result.elapsed_s, 1), error=error, skipped=skipped),
    )


def exit_code(report_rc: int, verdict_written: bool, aborted: bool) -> int:
    """The run's exit code: the report's, which is the verdict's (0 pass or unjudged, 1 fail,
    3 incomplete); 3 when a phase aborted and the report did not fail; the report's own
    code (2, 70, 124) when it wrote no verdict."""
    if verdict_written and report_rc == 1:
        return 1
    if aborted:
        return 3
    return report_rc
