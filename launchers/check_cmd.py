"""`stoker check`: a per-node health check in well under a minute (docs/check.md).

Runs the steps of launchers.check_plan as child processes under one overall time limit (a
step past its share is ended with its whole process group: a hung nvidia-smi or fio never
blocks a prolog), judges the inventory's findings and, with --baseline, every figure against
the accepted one. Quiet when healthy; one line per problem on stdout otherwise. Exit: 0 pass,
1 fail, 3 incomplete (a step did not end cleanly), 2 bad input (docs/contract.md).

Actions, each opt-in, each printed instead of done with --dry-run: --drain (Slurm),
--k8s-node (taint and label), --prometheus FILE (node_exporter textfile).
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from launchers import check_plan as cp
from launchers import node_actions as na
from launchers.phases import end_group
from launchers.run_cmd import count_gpus
from reports.errors import UsageError
from reports.outdir import claim
from reports.records import new_run_id

HELP = "per-node health check in under a minute: inventory, short all_reduce, short disk test; opt-in drain/taint/metrics"
TOOL_TIMEOUT_S = 10.0  # one scontrol / sinfo / kubectl call


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--baseline", metavar="FILE", help="baseline YAML from `stoker baseline`")
    parser.add_argument(
        "--checks", default=",".join(cp.STEPS), help="comma list of inventory,net,io (default all)"
    )
    parser.add_argument(
        "--path", default="/var/tmp", help="local directory for the disk test (default /var/tmp)"
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
        help="still measures (every step runs); only the actions (drain, taint, metrics file) are printed, not taken",
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
    lines = [ln.strip() for ln in (out or "").splitlines() if ln.strip()]
    return cp.StepResult(
        name=step.name,
        rc=rc,
        elapsed_s=time.monotonic() - start,
        last_line=(lines[-1] if lines else "")[:200],
    )


def _tool(argv: list[str], dry_run: bool, deadline: float) -> str:
    """Run an action (or print it); its failure is one line on stderr, never a crash."""
    if dry_run:
        print("would run: " + " ".join(_quote(a) for a in argv))
        return ""
    try:
        p = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=max(1.0, min(TOOL_TIMEOUT_S, deadline - time.monotonic())),
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        print(f"stoker check: {argv[0]} failed: {exc}", file=sys.stderr)
        return ""
    # removing a taint the node does not have is kubectl's "not found": nothing to say
    if p.returncode != 0 and not (argv[-1].endswith("-") and "not found" in p.stderr):
        print(
            f"stoker check: {' '.join(argv[:3])} exited {p.returncode}: {p.stderr.strip()[:200]}",
            file=sys.stderr,
        )
    return p.stdout


def _quote(a: str) -> str:
    return a if a and all(c.isalnum() or c in "-_=./:,@" for c in a) else "'" + a.replace("'", "'\\''") + "'"


def slurm_act(node: str, problems: list[str], dry_run: bool, deadline: float) -> None:
    """Drain or resume, from the node's state as sinfo shows it now (also under --dry-run)."""
    try:
        q = subprocess.run(na.sinfo_argv(node), capture_output=True, text=True, timeout=TOOL_TIMEOUT_S)
        state = na.parse_sinfo(node, q.stdout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        print(f"stoker check: sinfo failed: {exc}; node {node} left as it is", file=sys.stderr)
        return
    if not state.state:
        print(f"stoker check: sinfo knows no node {node!r}; give --node NAME", file=sys.stderr)
        return
    argv = na.slurm_action(state, problems)
    if argv is None and problems and state.drained:
        print(f"{node}: already drained by someone else ({state.reason}); left as it is")
    if argv:
        _tool(argv, dry_run, deadline)


def _metrics(rs: Any, host: str, findings: list[Any]) -> tuple[list[Any], list[Any]]:
    from launchers.prom_export import Metric
    from reports.findings import FAILING
    from reports.judging.baseline import figures

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
            value=1.0 if f.status in FAILING else 0.0,
        )
        for f in findings
        if f.status not in ("no_reference",)
    ]
    return figs, stats


def main(args: argparse.Namespace) -> int:
    started = time.monotonic()
    which = _checks(args.checks)
    if args.limit <= cp.ACTION_RESERVE_S + 5:
        raise UsageError(f"--limit {args.limit:g}: give at least {cp.ACTION_RESERVE_S + 5:g} seconds")
    baseline = None
    if args.baseline:
        from reports.baseline_file import load

        baseline = load(args.baseline)
    if "io" in which and not Path(args.path).is_dir():
        raise UsageError(f"--path {args.path}: no such directory; give a local directory for the disk test")
    if args.prometheus and not Path(args.prometheus).resolve().parent.is_dir():
        raise UsageError(f"--prometheus {args.prometheus}: its directory does not exist")
    host = os.environ.get("STOKER_HOSTNAME", "").strip() or socket.gethostname()
    node = args.node or os.environ.get("SLURMD_NODENAME", "").strip() or host.split(".")[0]
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="stoker-check-"))
    run_id = new_run_id()
    claim(out, run_id)  # the steps write into it as one run
    deadline = started + args.limit
    measure_until = deadline - cp.ACTION_RESERVE_S
    try:
        gpus = count_gpus(os.listdir("/dev") if os.path.isdir("/dev") else [], os.environ)
        plan = cp.steps(
            which=which,
            stoker=(sys.executable, "-m", "launchers.cli"),
            out=str(out),
            io_path=args.path,
            how=cp.measure_like(baseline, host, args.path, gpus),  # as the accepted run measured
            net_timeout_s=max(5, int(args.limit / 3)),
        )
        env = {**os.environ, "STOKER_HOSTNAME": host, "STOKER_RUN_ID": run_id}
        results = []
        for i, step in enumerate(plan):
            left = measure_until - time.monotonic() - cp.KILL_GRACE_S
            # what is left, shared by the steps still to run (the inventory takes seconds)
            share = left if i == len(plan) - 1 else left * (0.3 if step.name == "inventory" else 0.6)
            results.append(run_step(step, share, env))
        from reports import evidence
        from reports.judging.inventory import judge_inventory
        from reports.table import read_records

        rs = evidence.build(read_records(out))
        findings = judge_inventory(rs.host)
        if baseline is not None:
            from reports.judging.baseline import judge_evidence

            findings += judge_evidence(baseline, rs)
        findings += _wrong_results(rs, host)
        o = cp.outcome(findings, results)
        for line in o.problems:
            print(line)
        if args.drain:
            slurm_act(node, list(o.reasons), args.dry_run, deadline)
        if args.k8s_node and o.verdict != "incomplete":
            for argv in na.k8s_actions(args.k8s_node, list(o.failed_checks)):
                _tool(argv, args.dry_run, deadline)
        if args.prometheus:
            from launchers.prom_export import registry, write

            figs, stats = _metrics(rs, host, findings)
            reg = registry(host, figs, stats, time.monotonic() - started)
            if args.dry_run:
                print(f"would write {len(figs)} figures and {len(stats)} statuses to {args.prometheus}")
            else:
                write(args.prometheus, reg)
        if args.verbose or o.verdict != "pass":
            steps = ", ".join(f"{r.name} {r.elapsed_s:.1f} s" for r in results)
            print(f"stoker check {node}: {o.verdict} after {time.monotonic() - started:.1f} s ({steps})")
        return cp.EXIT[o.verdict]
    finally:
        if not args.out:
            shutil.rmtree(out, ignore_errors=True)  # the temp dir this run made


def _wrong_results(rs: Any, host: str) -> list[Any]:
    """A collective that returned wrong elements: the devices corrupt data, whatever the speed."""
    from reports.findings import Finding

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
