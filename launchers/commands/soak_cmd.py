"""`stoker soak --duration 4h` (also `stoker run --soak 4h`): a burn-in on this machine.

The acceptance's phases, repeated: the node inventory once, then network phases of
`stoker net --soak` (the same ranks run pass after pass at the bandwidth plateau, counters
read between passes) each followed by a checkpoint write (`stoker io --workloads
checkpoint`, its records tagged with the pass it follows: STOKER_SOAK_PASS), until the
duration is spent; then the report. Exit codes as `stoker run`.

SIGTERM or Ctrl-C, wherever it lands, is counted, never raised (launchers.local.phases.StopSignals):
a network phase hears TERM and finishes the pass in flight, the inventory or a checkpoint
write is ended, the report is written (one that is being written finishes first); a second
signal ends the phase at once. Exit 3 (1 when the passes kept fail). A checkpoint write that
fails (a full `--path`) ends the checkpoint duty, not the soak: its phase line says so and
the network passes go on.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from launchers import builders as b
from launchers.local.local_session import INTERRUPTED, local_gpus, summary
from launchers.local.phases import Phase, PhaseResult, StopSignals, exit_code, record_phase, run_phase
from launchers.options import (
    add_profile_arguments,
    checked_file,
    keep_inputs,
    parse_duration,
    profile_from_args,
)
from launchers.plan import CPU_RANKS
from launchers.profiles import Profile, default_profile, plateau
from reports.shared.errors import UsageError
from reports.shared.outdir import claim
from reports.shared.records import BACKEND_CHOICES, new_run_id
from reports.shared.storage_rule import SCRATCH_PREFIX

HELP = "burn-in: network passes at the plateau and checkpoint writes for a duration, counters between passes"
DEFAULT_IO_EVERY = 5  # a checkpoint write after every 5 network passes
GRACE_S = 60


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--duration", required=True, help="how long to soak: 90s, 30m, 4h, 2d")
    parser.add_argument("--out", help="results dir (default ./stoker-results/<run_id>)")
    parser.add_argument(
        "--path", help="directory for the checkpoint writes (default: a temp dir in the results dir)"
    )
    parser.add_argument("--nproc", type=int, help="local ranks (default: one per GPU, else 2)")
    parser.add_argument("--backend", default="auto", choices=BACKEND_CHOICES)
    parser.add_argument(
        "--io-every",
        type=int,
        default=DEFAULT_IO_EVERY,
        metavar="N",
        help=f"a checkpoint write after every N network passes; 0: none (default {DEFAULT_IO_EVERY})",
    )
    add_profile_arguments(parser, default=None)


@dataclass(frozen=True, kw_only=True, slots=True)
class Chunk:
    """One network phase of the soak: passes first.. at most `passes`, within `seconds`."""

    first: int
    passes: int | None
    seconds: float


def net_phase(
    profile: Profile, out: str, nproc: int, backend: str, chunk: Chunk, stoker: tuple[str, ...]
) -> Phase:
    argv = b.net_argv(
        b.NetCommand(
            profile=plateau(profile), out=out, scopes=("world",), backend=backend, nproc=nproc, stoker=stoker
        )
    )
    argv += ["--soak", f"{chunk.seconds:.0f}", "--soak-first", str(chunk.first)]
    if chunk.passes:
        argv += ["--soak-passes", str(chunk.passes)]
    # a pass that starts just before the deadline may take a whole sweep's timeout
    return Phase(
        name=f"network {chunk.first}..",
        argv=tuple(argv),
        limit_s=int(chunk.seconds) + profile.net_timeout_s + GRACE_S,
        on_stop="tell",
    )


def io_phase(profile: Profile, out: str, path: str, gpus: int, stoker: tuple[str, ...]) -> Phase:
    argv = b.io_argv(
        b.IoCommand(
            profile=replace(profile, workloads=("checkpoint",)),
            out=out,
            paths=(path,),
            stoker=stoker,
            writers=gpus or None,
        )
    )
    return Phase(name="checkpoint", argv=tuple(argv), limit_s=profile.io_timeout_s + GRACE_S)


def passes_done(out: Path) -> int:
    """The last soak pass with a record in net.jsonl (0 before the first)."""
    last = 0
    try:
        with open(out / "net.jsonl", encoding="utf-8") as fh:
            for line in fh:
                try:
                    last = max(last, int(json.loads(line).get("soak_pass", 0)))
                except (ValueError, TypeError, AttributeError):
                    continue
    except OSError:
        pass
    return last


@dataclass(kw_only=True, slots=True)
class _Duties:
    """What the soak still does: checkpoint writes end at the first that fails; a stop ends all."""

    stop: StopSignals
    checkpoints: bool


def _ended(r: PhaseResult, stop: StopSignals, scratch: Path, out: Path) -> PhaseResult:
    """The phase line of a phase a stop signal or a failed checkpoint write ended."""
    if r.interrupted and r.name.startswith("network"):
        k = passes_done(out)
        how = "the pass in flight finished" if r.ok else f"a second signal cut pass {k} (exit {r.rc})"
        return replace(r, rc=INTERRUPTED, last_line=f"stopped by {stop.name}: {how}; passes up to {k} kept")
    if r.interrupted:
        return replace(r, rc=INTERRUPTED, last_line=f"stopped by {stop.name} ({r.last_line})"[:300])
    if r.name == "checkpoint" and not r.ok:
        said = f"checkpoint writes ended after pass {passes_done(out)}, the network passes went on"
        return replace(r, last_line=f"{said}: {r.last_line or f'writing to {scratch} failed'}"[:300])
    return r


def main(args: argparse.Namespace) -> int:
    with StopSignals() as stop:  # from the start: a stop is never an exception here
        return _soak(args, stop)


def _soak(args: argparse.Namespace, stop: StopSignals) -> int:
    duration = parse_duration(args.duration)
    if args.io_every < 0:
        raise UsageError("--io-every must be 0 (no storage) or a number of passes")
    gpus = local_gpus(os.environ)
    profile = profile_from_args(args, default=default_profile(gpus))
    nproc = args.nproc or gpus or CPU_RANKS
    if nproc < 2:
        raise UsageError("a soak measures links between ranks: give --nproc 2 or more")
    if args.path and not Path(args.path).is_dir():
        raise UsageError(f"--path {args.path}: no such directory")
    cwd = Path.cwd()
    spec = checked_file(args.spec, "--spec", cwd)
    run_id = new_run_id()
    out = (cwd / (args.out or f"stoker-results/{run_id}")).resolve()
    claim(out, run_id)
    (out / "verdict.json").unlink(missing_ok=True)
    keep_inputs(out, spec, None)
    scratch = (
        Path(args.path).resolve() if args.path else Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX, dir=out))
    )
    stoker = (sys.executable, "-m", "launchers.cli")
    env = {**os.environ, "STOKER_RUN_ID": run_id}
    print(
        f"stoker soak {run_id}: {duration:.0f} s, profile {profile.name} at {plateau(profile).min_bytes}.."
        f"{plateau(profile).max_bytes} B, {nproc} ranks, a checkpoint write every {args.io_every or '-'} passes, "
        f"results in {out}",
        flush=True,
    )
    results = _measure(out, profile, nproc, args, scratch, gpus, stoker, env, stop, duration)
    if stop.count:
        print(f"\nsoak: stopped by {stop.name}; writing the report on the passes kept", flush=True)
    report = Phase(
        name="report",
        argv=tuple(b.report_argv(b.ReportCommand(out=str(out), spec=spec, stoker=stoker))),
        limit_s=profile.report_timeout_s,
        on_stop="wait",
    )
    results.append(run_phase(report, len(results) + 1, 0, env, stop=stop))
    record_phase(out, results[-1])
    verdict_file = out / "verdict.json"
    verdict = json.loads(verdict_file.read_text(encoding="utf-8")) if verdict_file.is_file() else None
    print(f"\nsoak: {passes_done(out)} passes", flush=True)
    print(summary(_merged(results), verdict, out), flush=True)
    aborted = stop.count > 0 or any(not r.ok for r in results[:-1])
    return exit_code(results[-1].rc, verdict is not None, aborted)


def _measure(
    out: Path,
    profile: Profile,
    nproc: int,
    args: argparse.Namespace,
    scratch: Path,
    gpus: int,
    stoker: tuple[str, ...],
    env: dict[str, str],
    stop: StopSignals,
    duration: float,
) -> list[PhaseResult]:
    """The inventory, network phases and checkpoint writes until the duration or a stop."""
    results: list[PhaseResult] = []
    deadline = time.monotonic() + duration
    duties = _Duties(stop=stop, checkpoints=bool(args.io_every))
    try:
        inventory = Phase(
            name="inventory",
            argv=tuple(b.inventory_argv(b.InventoryCommand(out=str(out), stoker=stoker))),
            limit_s=b.INVENTORY_LIMIT_S,
        )
        for n, phase in enumerate(
            _phases(inventory, profile, out, nproc, args, scratch, gpus, stoker, deadline, duties), 1
        ):
            got = run_phase(phase, n, 0, env | _pass_env(phase, out), stop=stop)
            results.append(_ended(got, stop, scratch, out))
            record_phase(out, results[-1])
            if phase.name == "checkpoint" and not got.ok and not got.interrupted:
                duties.checkpoints = False
                print(f"soak: {results[-1].last_line}", flush=True)
            elif not got.ok and not got.interrupted:
                break  # a phase that failed would fail again: report what there is
    finally:
        if not args.path:
            shutil.rmtree(scratch, ignore_errors=True)
    return results


def _pass_env(phase: Phase, out: Path) -> dict[str, str]:
    return {"STOKER_SOAK_PASS": str(passes_done(out))} if phase.name == "checkpoint" else {}


def _phases(
    inventory: Phase,
    profile: Profile,
    out: Path,
    nproc: int,
    args: argparse.Namespace,
    scratch: Path,
    gpus: int,
    stoker: tuple[str, ...],
    deadline: float,
    duties: _Duties,
) -> Iterator[Phase]:
    """The phases, decided one at a time (the next chunk starts where the last pass ended)."""
    if duties.stop.count:
        return
    yield inventory
    while (left := deadline - time.monotonic()) > 1 and not duties.stop.count:
        first = passes_done(out) + 1
        yield net_phase(
            profile,
            str(out),
            nproc,
            args.backend,
            Chunk(first=first, passes=args.io_every or None, seconds=left),
            stoker,
        )
        if passes_done(out) < first or duties.stop.count:
            return  # the network phase measured no pass (nothing to gain from another), or a stop
        if duties.checkpoints and deadline - time.monotonic() > 1:
            yield io_phase(profile, str(out), str(scratch), gpus, stoker)


def _merged(results: list[PhaseResult]) -> list[PhaseResult]:
    """The summary table: one line per kind of phase, the times added up."""
    merged: dict[str, PhaseResult] = {}
    for r in results:
        name = "network" if r.name.startswith("network") else r.name
        prev = merged.get(name)
        rc = r.rc if prev is None or prev.rc == 0 else prev.rc
        merged[name] = PhaseResult(
            name=name, rc=rc, elapsed_s=r.elapsed_s + (prev.elapsed_s if prev else 0.0)
        )
    return list(merged.values())
