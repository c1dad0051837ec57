"""`stoker run`, the embedded default: on this one machine, a network sweep on local ranks
(one per GPU; 2 gloo ranks without GPUs), storage tests in a local directory and in each of
the spec's storage paths that exists here (launchers/spec_paths.py `here`), the report;
progress while it works, a summary table and the verdict at the end.

Every phase is a `stoker` child process (launchers never imports netbench or iobench),
writing into one results dir under one STOKER_RUN_ID. Exit code: the verdict (0 pass or
unjudged, 1 fail, 3 incomplete: a phase aborted or wrote no records; the report still says
what is missing), 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from launchers import builders as b
from launchers.commands.precheck import check_phases
from launchers.local.local_session import INTERRUPTED, local_gpus, summary
from launchers.local.phases import Phase, PhaseResult, StopSignals, exit_code, record_phase, run_phase
from launchers.options import (
    add_profile_arguments,
    checked_file,
    checked_workload,
    keep_inputs,
    profile_from_args,
)
from launchers.plan import CPU_RANKS
from launchers.profiles import Profile, default_profile
from launchers.spec_paths import here
from reports.shared.errors import UsageError
from reports.shared.findings import REPORT_SCOPES
from reports.shared.io_dir import io_dir_problem
from reports.shared.outdir import claim
from reports.shared.phases import phase_name
from reports.shared.records import BACKEND_CHOICES, new_run_id
from reports.shared.spec import load_spec
from reports.shared.storage_rule import SCRATCH_PREFIX

HELP = "the embedded default: network sweep, storage tests and the report on this machine"
# the phases --skip may leave out (the report always runs); phases.jsonl marks them `skipped`
# and the report's coverage (reports/judging/coverage.py) names what they would have measured
SKIPPABLE = ("inventory", "network", "storage")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", help="results dir (default ./stoker-results/<run_id>)")
    parser.add_argument(
        "--path", help="directory for the storage tests (default: a temp dir in the results dir)"
    )
    parser.add_argument(
        "--nproc", type=int, help="local ranks for the network sweep (default: one per GPU, else 2)"
    )
    parser.add_argument(
        "--backend",
        default="auto",
        choices=BACKEND_CHOICES,
        help="collective backend (default auto: nccl with GPUs, else gloo)",
    )
    parser.add_argument(
        "--skip",
        action="append",
        default=[],
        metavar="PHASE",
        help=f"leave a phase out ({', '.join(SKIPPABLE)}; repeatable or comma-separated): the report "
        "names what it would have measured as not measured",
    )
    parser.add_argument(
        "--scope",
        choices=REPORT_SCOPES,
        default="cluster",
        help="what is under test (default cluster: every promise of --spec must be measured, and one "
        "machine cannot measure the inter-node link; node: only the node's own promises, the report "
        "names the rest as not covered)",
    )
    parser.add_argument(
        "--soak", metavar="DURATION", help="a burn-in instead of one pass: `stoker soak --duration DURATION`"
    )
    add_profile_arguments(parser, default=None)


def skipped_phases(given: list[str]) -> frozenset[str]:
    """--skip's phases, checked before anything runs."""
    names = {n.strip() for g in given for n in g.split(",")}
    bad = sorted(n for n in names if n not in SKIPPABLE)
    if bad:
        raise UsageError(
            f"--skip {bad[0] or '(empty)'}: not a phase of stoker run; give one of {', '.join(SKIPPABLE)}"
        )
    return frozenset(names)


def plan(
    *,
    profile: Profile,
    out: str,
    io_path: str,
    nproc: int,
    backend: str,
    more_io: tuple[str, ...] = (),
    spec: str | None,
    workload: str | None,
    stoker: tuple[str, ...],
    gpus: int = 0,
    skip: frozenset[str] = frozenset(),
    scope: str = "cluster",
) -> list[Phase]:
    """The phases of a local run, in order (pure): the node inventory first, the matmul appetite, then the sweeps. With GPUs, one checkpoint writer per GPU,
    as each rank saves its own shard. `more_io`: the spec's storage paths measured beside `io_path`
    in the same phase, with the same tests; the phase's limit is the profile's per path."""
    io_paths = (io_path, *(p for p in more_io if p != io_path))
    net = b.net_argv(
        b.NetCommand(
            profile=profile,
            out=out,
            scopes=("world",),
            backend=backend,
            nproc=nproc,
            stoker=stoker,
            spec=spec,
        )
    )
    io = b.io_argv(
        b.IoCommand(profile=profile, out=out, paths=io_paths, stoker=stoker, writers=gpus or None, spec=spec)
    )
    report = b.report_argv(b.ReportCommand(out=out, spec=spec, workload=workload, stoker=stoker, scope=scope))
    # the launcher's limit sits past stoker's own --timeout, so stoker ends first and says why
    grace = 60
    # one rank (a single-GPU machine) has no link to measure: no network phase
    network = (
        [Phase(name="network", argv=tuple(net), limit_s=profile.net_timeout_s + grace)] if nproc >= 2 else []
    )
    inventory = Phase(
        name="inventory",
        argv=tuple(b.inventory_argv(b.InventoryCommand(out=out, stoker=stoker))),
        limit_s=b.INVENTORY_LIMIT_S,
    )
    compute = Phase(  # the accelerators' appetite, after the inventory, before the sweeps
        name="compute",
        argv=tuple(
            b.compute_argv(
                b.ComputeCommand(
                    out=out, profile=profile.name, budget_s=profile.compute_budget_s, stoker=stoker
                )
            )
        ),
        limit_s=b.compute_limit_s(profile.name, profile.compute_budget_s),
    )
    measure = [
        inventory,
        compute,
        *network,
        Phase(name="storage", argv=tuple(io), limit_s=profile.io_timeout_s * len(io_paths) + grace),
    ]
    return [
        *(p for p in measure if p.name not in skip),
        Phase(name="report", argv=tuple(report), limit_s=profile.report_timeout_s),
    ]


def _term_is_interrupt(signum: int, frame: object) -> None:
    """SIGTERM (scancel, timeout, Kubernetes) ends the run as Ctrl-C does: the phase running
    is stopped, its line kept, the report written on what was measured, the scratch removed."""
    raise KeyboardInterrupt


def _plan(
    args: argparse.Namespace,
    profile: Profile,
    out: Path,
    io_path: str,
    nproc: int,
    spec: str | None,
    workload: str | None,
    gpus: int,
    more_io: tuple[str, ...] = (),
) -> list[Phase]:
    return plan(
        profile=profile,
        out=str(out),
        io_path=io_path,
        more_io=more_io,
        nproc=nproc,
        backend=args.backend,
        spec=spec,
        workload=workload,
        stoker=(sys.executable, "-m", "launchers.cli"),
        gpus=gpus,
        skip=skipped_phases(args.skip),
        scope=args.scope,
    )


# the not-measured line's words for each of io_dir_problem's reasons
SAID_HERE = {
    "contains ':', which fio cannot take": "its name holds ':', which fio cannot take",
    "does not exist": "no such directory on this machine (stoker creates none)",
    "is not a directory": "not a directory",
    "is not writable by this user": "not writable by this user",
}


def path_problem(path: str) -> str:
    """Why a spec's storage path cannot be measured on this machine ("" when it can): stoker
    tests in a directory of its own inside it and creates no spec path."""
    problem = io_dir_problem(path)
    return "" if problem is None else SAID_HERE[problem[0]]


def main(args: argparse.Namespace) -> int:
    signal.signal(signal.SIGTERM, _term_is_interrupt)
    if getattr(args, "soak", None):
        from launchers.commands import soak_cmd
        from launchers.options import parse_duration

        parse_duration(args.soak, "--soak")  # bad input named as the user wrote it
        args.duration, args.io_every = args.soak, soak_cmd.DEFAULT_IO_EVERY
        return soak_cmd.main(args)
    gpus = local_gpus(os.environ)
    profile = profile_from_args(args, default=default_profile(gpus))
    skip = skipped_phases(args.skip)
    nproc = args.nproc or gpus or CPU_RANKS
    if nproc < 1:
        raise UsageError(f"--nproc must be at least 1, got {nproc}")
    cwd = Path.cwd()
    spec = checked_file(args.spec, "--spec", cwd)
    workload = checked_workload(args.workload, cwd)
    run_id = new_run_id()
    out = (cwd / (args.out or f"stoker-results/{run_id}")).resolve()
    if args.path and not Path(args.path).is_dir():
        raise UsageError(f"--path {args.path}: no such directory")
    # the spec's storage paths that exist here are measured beside the scratch dir (or --path)
    spec_io, not_here = here(load_spec(spec).storage if spec else (), path_problem)
    if "storage" in skip:
        spec_io, not_here = (), ()
    # every option checked by the phases' own rules before anything is created or measured
    check_phases(
        p.argv for p in _plan(args, profile, out, str(args.path or out), nproc, spec, workload, gpus, spec_io)
    )
    claim(out, run_id)  # new, or this run's own (STOKER_RUN_ID given again), else exit 2
    verdict_file = out / "verdict.json"
    verdict_file.unlink(missing_ok=True)  # a verdict left from an earlier run in this dir is not this one's
    keep_inputs(out, spec, workload)
    # storage is measured in a scratch dir on the results dir's file system unless told
    scratch = (
        Path(args.path).resolve() if args.path else Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX, dir=out))
    )
    env = {**os.environ, "STOKER_RUN_ID": run_id}
    phases = _plan(args, profile, out, str(scratch), nproc, spec, workload, gpus, spec_io)
    for name in sorted(skip):  # the report's coverage names what it would have measured
        print(f"{name}: left out (--skip {name})", flush=True)
        record_phase(out, PhaseResult(name=phase_name(name), rc=0, elapsed_s=0.0), skipped=True)
    print(
        f"stoker run {env['STOKER_RUN_ID']}: profile {profile.name}, {nproc} ranks "
        f"({gpus} GPUs), storage in {', '.join(map(str, dict.fromkeys([scratch, *map(Path, spec_io)])))}, "
        f"results in {out}",
        flush=True,
    )
    for line in not_here:  # the report's coverage names it as not measured too
        print(f"storage: {line}", flush=True)
    if "network" not in skip and all(p.name != "network" for p in phases):
        print(
            "network: skipped, one rank has no link to measure (--nproc 2 --backend gloo checks the "
            "local loopback instead)",
            flush=True,
        )
    results: list[PhaseResult] = []
    stopped = False
    try:
        for i, phase in enumerate(phases, 1):
            if i < len(phases) and any(r.rc == INTERRUPTED for r in results):
                continue  # Ctrl-C: skip to the report on what was measured
            started = time.monotonic()
            try:
                if i == len(phases):  # the report: a signal now lets it finish, a second ends it
                    with StopSignals() as stop:
                        results.append(run_phase(replace(phase, on_stop="wait"), i, i, env, stop=stop))
                    stopped = stop.count > 0
                else:
                    results.append(run_phase(phase, i, len(phases), env))
            except KeyboardInterrupt:
                if i == len(phases):
                    raise
                print(
                    f"\n[{i}/{len(phases)}] {phase.name}: interrupted; writing the report on what was measured",
                    flush=True,
                )
                results.append(
                    PhaseResult(name=phase.name, rc=INTERRUPTED, elapsed_s=time.monotonic() - started)
                )
            record_phase(out, results[-1])
    finally:
        if not args.path:
            shutil.rmtree(scratch, ignore_errors=True)
    verdict = json.loads(verdict_file.read_text(encoding="utf-8")) if verdict_file.is_file() else None
    print("\n" + summary(results, verdict, out), flush=True)
    aborted = stopped or any(not r.ok for r in results[:-1])
    return exit_code(results[-1].rc, verdict is not None, aborted)
