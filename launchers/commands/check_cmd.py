"""`stoker check`: a per-node health check in well under a minute (docs/check.md).

Runs the steps of launchers.actions.check_plan as child processes under one overall time limit (a
step past its share is ended with its whole process group: a hung nvidia-smi or fio never
blocks a prolog), judges the inventory's findings and, with --baseline, every figure against
the accepted one. Quiet when healthy; one line per problem on stdout otherwise. Exit: 0 pass,
1 fail, 3 incomplete (a step did not end cleanly; also SIGTERM or Ctrl-C: the steps' process
groups are ended and the temp dir removed), 2 bad input (every option checked before anything
runs), 4 a passing check whose action failed (docs/contract.md).

Actions, each opt-in, under the rules of launchers/actions/node_actions.py: --drain (Slurm),
--k8s-node (taint and label), --prometheus FILE (node_exporter textfile, through the one
writer). --dry-run runs no scheduler command and prints the ones it would run.
"""

from __future__ import annotations

import argparse
import math
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from launchers.actions import check_plan as cp
from launchers.actions.action_io import ACTION_FAILED, Actor, k8s, slurm
from launchers.actions.check_actions import baseline_step, plan
from launchers.local.local_session import local_gpus
from launchers.local.phases import end_group
from reports.shared.errors import UsageError
from reports.shared.hostnames import why_not_node, why_not_plain
from reports.shared.outdir import claim
from reports.shared.records import new_run_id
from reports.shared.storage_rule import SCRATCH_PREFIX

HELP = "per-node health check in under a minute: inventory, short all_reduce, short disk test; opt-in drain/taint/metrics"
WHO = "stoker check"
MAX_LIMIT_S = 3600.0  # a health check, not a benchmark


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--baseline", metavar="FILE", help="baseline YAML from `stoker baseline`")
    parser.add_argument(
        "--checks", default=",".join(cp.STEPS), help="comma list of inventory,net,io (default all)"
    )
    parser.add_argument(
        "--path",
        help=f"local directory for the disk test (default: the local path --baseline accepted for this "
        f"node, else {cp.DEFAULT_IO_PATH})",
    )
    parser.add_argument(
        "--limit", type=float, default=cp.DEFAULT_LIMIT_S, help="overall time limit, seconds (default 50)"
    )
    parser.add_argument(
        "--node", help="this node's Slurm/Kubernetes name (default $SLURMD_NODENAME, else hostname)"
    )
    parser.add_argument(
        "--out", metavar="DIR", help="keep the check's records here (default: a temp dir, removed)"
    )
    parser.add_argument(
        "--drain", action="store_true", help="Slurm: drain on failure, resume stoker's own drain on pass"
    )
    parser.add_argument(
        "--k8s-node", metavar="NAME", help="Kubernetes: taint and label this node with the result"
    )
    parser.add_argument(
        "--prometheus", metavar="FILE", help="write the result as a node_exporter textfile (.prom)"
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="still measures (every step runs); only the actions are dry: no scheduler command (not "
        "even sinfo) runs and no metrics file is written, what would run is printed instead",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="also print a line when healthy")


def _checks(text: str) -> list[cp.StepName]:
    items = [x.strip() for x in text.split(",") if x.strip()]
    bad = [x for x in items if x not in cp.STEPS]
    if bad or not items:
        raise UsageError(f"--checks {text!r}: choose from {','.join(cp.STEPS)}")
    return [x for x in cp.STEPS if x in items]


def run_step(step: cp.Step, limit_s: float, env: dict[str, str]) -> cp.StepResult:
    """The step in its own session; TERM then KILL to its process group at `limit_s`."""
    start = time.monotonic()
    proc = subprocess.Popen(
        list(step.argv),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=max(0.1, limit_s))
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        end_group(proc, cp.KILL_GRACE_S, 2.0)
        out, rc = "", 124
    except KeyboardInterrupt:  # SIGTERM or Ctrl-C: the step's whole group goes with the check
        end_group(proc, cp.KILL_GRACE_S, 2.0)
        raise
    lines = [ln.strip() for ln in (out or "").splitlines() if ln.strip()]
    return cp.StepResult(
        name=step.name,
        rc=rc,
        elapsed_s=time.monotonic() - start,
        last_line=(lines[-1] if lines else "")[:200],
    )


def _metrics(rs: Any, host: str, findings: list[Any]) -> tuple[list[Any], list[Any]]:
    from launchers.actions.prom_export import Metric
    from reports.judging.fleet.baseline_figures import figures
    from reports.shared.findings import FAILING

    figs = [
        Metric(
            host=f.host or host,
            device=f.device,
            scope=f.scope or f.kind,
            op=f.op or f.workload,
            what=f.what,
            value=f.value,
        )
        for f in figures(rs)
        if f.unit == "GB/s"  # the gauge is stoker_figure_gbps: a TFLOPS figure is not one
    ]
    stats = [
        Metric(
            host=",".join(f.hosts) or host,
            device=str(f.extra.get("device", "")),
            scope=f.component,
            op="",
            what=f.check,
            value=1.0
            if f.status in FAILING and not f.extra.get("unconfirmed")
            else 0.0,  # measured once: no alarm
        )
        for f in findings
        if f.status not in ("no_reference",)
    ]
    return figs, stats


def _host_name(what: str, name: str, slurm: bool = False) -> str:
    """`name` when it is one plain node name (reports/shared/hostnames.py), else bad input. `slurm`:
    the name is checked as sinfo and scontrol get it, shortened (`ALL.cluster` is `ALL`)."""
    if why := (why_not_node(name) if slurm else why_not_plain(name)):
        raise UsageError(f"{what} {name!a} {why}; give the node's own name")
    return name


def _limit(value: float) -> float:
    low = cp.ACTION_RESERVE_S + 5
    if not (math.isfinite(value) and low <= value <= MAX_LIMIT_S):
        raise UsageError(f"--limit {value:g}: give at least {low:g} and at most {MAX_LIMIT_S:g} seconds")
    return value


def _prometheus_target(path: str) -> None:
    """--prometheus checked before anything is measured: a file name in a directory stoker
    can write into, not a file stoker did not write (reports/shared/safe_write.py)."""
    from reports.shared.safe_write import LEDGER, check_outputs

    p = Path(path)
    if p.is_dir() or not p.name:
        raise UsageError(
            f"--prometheus {path}: is a directory; give a file in it, such as {p / 'stoker.prom'}"
        )
    parent = p.resolve().parent
    if not parent.is_dir():
        raise UsageError(f"--prometheus {path}: its directory {parent} does not exist")
    try:
        check_outputs(parent, [p.name], "give another --prometheus file")
    except UsageError:
        if p.is_symlink() or not p.is_file():
            raise
        # a plain file the directory's ledger does not list: most often the metrics file of a
        # stoker from before the ledger, found after an upgrade; stoker still never writes over it
        target = shlex.quote(str(parent / p.name))
        raise UsageError(
            f"--prometheus {path}: exists and was not written by stoker (not in the ledger "
            f"{parent / LEDGER}, or changed since), so stoker will not write over it; if it is an older "
            f"stoker's metrics file (from before the ledger), move or delete it once (`rm {target}`) "
            "and the next check writes it; if it is someone else's, give another --prometheus file"
        ) from None
    try:
        fd, probe = tempfile.mkstemp(dir=parent, prefix=".stoker-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise UsageError(f"--prometheus {path}: cannot write in {parent} ({exc.strerror or exc})") from None


def main(args: argparse.Namespace) -> int:
    started = time.monotonic()
    which = _checks(args.checks)
    limit = _limit(args.limit)
    baseline = None
    if args.baseline:
        from reports.judging.fleet.baseline_file import load

        baseline = load(args.baseline)
    host = _host_name(
        "host name (set STOKER_HOSTNAME)",
        os.environ.get("STOKER_HOSTNAME", "").strip() or socket.gethostname(),
    )
    target = cp.IoTarget(path=args.path or cp.DEFAULT_IO_PATH)
    if "io" in which:  # the place the accepted run measured this node's local disk in
        try:
            target = cp.accepted_path(baseline, host, args.path)
        except ValueError as exc:
            raise UsageError(f"--path not given: {exc}") from None
    args.path, said = target.path, target.said
    if "io" in which and not Path(args.path).is_dir():
        where = f" ({said})" if said else ""
        raise UsageError(
            f"--path {args.path}: no such directory{where}; give a local directory for the disk test"
        )
    if args.verbose and said:
        print(f"stoker check: {said}")
    if args.prometheus:
        _prometheus_target(args.prometheus)
    node = args.node or os.environ.get("SLURMD_NODENAME", "").strip() or host
    if args.drain or args.node is not None:
        _host_name("--node", node, slurm=args.drain)
    if args.k8s_node is not None:
        _host_name("--k8s-node", args.k8s_node)
    old_term = signal.signal(signal.SIGTERM, signal.default_int_handler)  # SIGTERM ends it as Ctrl-C does
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="stoker-check-"))
    scratch = None
    try:
        if target.scratch:  # its own scratch dir, as the accepted run's own was (removed at the end)
            try:
                scratch = tempfile.mkdtemp(prefix=SCRATCH_PREFIX, dir=args.path)
            except OSError as exc:
                raise UsageError(
                    f"--path {args.path}: cannot make the disk test's scratch dir there "
                    f"({exc.strerror or exc}); give a local directory stoker can write in"
                ) from None
            args.path = scratch
        return _check(args, which, limit, baseline, host, node, out, started)
    finally:
        signal.signal(signal.SIGTERM, old_term)
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)
        if not args.out:
            shutil.rmtree(out, ignore_errors=True)  # the temp dir this run made


def _check(
    args: argparse.Namespace,
    which: list[cp.StepName],
    limit: float,
    baseline: Any,
    host: str,
    node: str,
    out: Path,
    started: float,
) -> int:
    run_id = new_run_id()
    claim(out, run_id)  # the steps write into it as one run
    deadline = started + limit
    measure_until = deadline - cp.ACTION_RESERVE_S
    gpus = local_gpus(os.environ)

    how = cp.measure_like(baseline, host, args.path, gpus)  # as the accepted run measured

    def steps_to(which: list[cp.StepName], to: Path, io: tuple[str, ...] | None = None) -> list[cp.Step]:
        return cp.steps(
            which=which,
            stoker=(sys.executable, "-m", "launchers.cli"),
            out=str(to),
            io_path=args.path,
            how=how,
            net_timeout_s=max(5, int(limit / 3)),
            io_workloads=io,
        )

    plan = steps_to(which, out)
    env = {**os.environ, "STOKER_HOSTNAME": host, "STOKER_RUN_ID": run_id}
    results = []
    for i, step in enumerate(plan):
        left = measure_until - time.monotonic() - cp.KILL_GRACE_S
        # what is left, shared by the steps still to run (the inventory takes seconds)
        share = left if i == len(plan) - 1 else left * (0.3 if step.name == "inventory" else 0.6)
        results.append(run_step(step, share, env))
    from reports import evidence
    from reports.judging.network.nic_counters import sweep_counter_findings
    from reports.judging.node.inventory import judge_inventory
    from reports.table.read import read_records

    rs = evidence.build(read_records(out))
    tagged = [("inventory", f) for f in judge_inventory(rs.host)]
    if baseline is not None:
        from reports.judging.fleet.baseline_figures import judge_evidence

        tagged += [(baseline_step(f), f) for f in judge_evidence(baseline, rs)]
    tagged += [("net", f) for f in _wrong_results(rs, host)]
    # a NIC whose error counters rose over the short collective (read around it), by its rail
    tagged += [("net", f) for f in sweep_counter_findings([], rs.host, rs.counters)]
    again = cp.to_confirm(tagged)
    if again:  # the same steps, the same settings, before a figure is a regression
        where = out / "confirmation"
        claim(where, run_id)
        # the action reserve is spent on confirming when no action needs it (no scheduler, no file)
        acts = args.drain or args.k8s_node or args.prometheus
        until = measure_until if acts else deadline - cp.KILL_GRACE_S
        redo = sorted(
            steps_to(again, where, cp.io_families(tagged)), key=lambda s: cp.CONFIRM_ORDER.index(s.name)
        )
        tagged = _confirm(tagged, baseline, redo, where, env, until)
    findings = [f for _, f in tagged]
    o = cp.outcome(findings, results)
    for line in o.problems:
        print(line)
    if args.verbose:
        for f in findings:
            if f.status == "transient":
                print(cp.problem_line(f))
    failed = _act(args, o, tagged, results, node, deadline)
    if args.prometheus:
        failed += _export(args, rs, host, findings, time.monotonic() - started)
    if args.verbose or o.verdict != "pass":
        steps = ", ".join(f"{r.name} {r.elapsed_s:.1f} s" for r in results)
        print(f"stoker check {node}: {o.verdict} after {time.monotonic() - started:.1f} s ({steps})")
    if failed and o.verdict == "pass":
        return ACTION_FAILED
    return cp.EXIT[o.verdict]


def _confirm(
    tagged: list[tuple[str, Any]],
    baseline: Any,
    again: list[cp.Step],
    where: Path,
    env: dict[str, str],
    measure_until: float,
) -> list[tuple[str, Any]]:
    """Each figure under the baseline's tolerance measured again by its step (the same
    settings, into `where`) in the time left: passing then, it is a `transient` (no action;
    shown with --verbose), still under, a regression with both figures. A step without the time
    to run leaves its figures regressions as measured once."""
    from reports import evidence
    from reports.judging.confirm import BASELINE, merge
    from reports.judging.fleet.baseline_figures import judge_evidence
    from reports.table.read import read_records

    for i, step in enumerate(again):
        left = measure_until - time.monotonic() - cp.KILL_GRACE_S
        if left > 1:
            run_step(step, left / (len(again) - i), env)
    second = judge_evidence(baseline, evidence.build(read_records(where)))
    merged = cp.unconfirmed(merge([f for _, f in tagged], second, BASELINE))
    return [(t, f) for (t, _), f in zip(tagged, merged, strict=True)]


def _act(
    args: argparse.Namespace,
    o: cp.Outcome,
    tagged: list[tuple[str, Any]],
    results: list[cp.StepResult],
    node: str,
    deadline: float,
) -> int:
    """Drain/resume and taint/label under the rules (docs/check.md); the number of failures.
    Nothing on an incomplete check: a tool that hung proves nothing about the node."""
    if o.verdict == "incomplete" or not (args.drain or args.k8s_node):
        return 0
    p = plan(tagged, o, results)  # a storage finding says itself whether its disk is local
    actor = Actor(WHO, args.dry_run, deadline)
    for line in p.left:
        actor.say(line)
    if o.verdict == "fail" and not p.drain or o.verdict == "pass" and not p.passed:
        return 0  # nothing of the node's own failed, or nothing ran that could clear a fault
    if args.drain:
        slurm(actor, node, p.drain, p.passed)
    if args.k8s_node:
        k8s(actor, args.k8s_node, p.taint, p.passed)
    return len(actor.failed)


def _export(args: argparse.Namespace, rs: Any, host: str, findings: list[Any], took: float) -> int:
    from launchers.actions.prom_export import registry, write

    figs, stats = _metrics(rs, host, findings)
    reg = registry(host, figs, stats, took)
    if args.dry_run:
        print(f"would write {len(figs)} figures and {len(stats)} statuses to {args.prometheus}")
        return 0
    try:
        write(args.prometheus, reg)
    except UsageError as exc:
        print(f"{WHO}: {exc}", file=sys.stderr)
        return 1
    return 0


def _wrong_results(rs: Any, host: str) -> list[Any]:
    """A collective that returned wrong elements: the devices corrupt data, whatever the speed."""
    from reports.shared.findings import Finding

    wrong = int(rs.net.frame["wrong"].sum()) if len(rs.net) else 0
    if not wrong:
        return []
    return [
        Finding(
            component="node",
            check="all_reduce correctness",
            status="below_spec",
            measured=float(wrong),
            expected=0.0,
            unit="wrong elements",
            hosts=(host,),
            message=f"the all_reduce returned {wrong} wrong elements: a GPU or link corrupts data; drain it",
        )
    ]
