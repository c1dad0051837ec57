"""`stoker submit`: render launchers/slurm/acceptance.sbatch for this cluster and submit it
with sbatch (`--dry-run` prints exactly the script that would be submitted)."""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

from launchers.builders import STOKER
from launchers.cloud import submit_cloud
from launchers.options import (
    add_profile_arguments,
    checked_file,
    checked_workload,
    keep_inputs,
    parse_duration,
    profile_from_args,
)
from launchers.plan import CPU_RANKS, summary_lines
from launchers.slurm.gres import gres_problem
from launchers.slurm.sbatch import PASSTHROUGH, SbatchConfig, plan_of, render
from launchers.spec_paths import storage_plan, warning
from reports.shared.errors import UsageError
from reports.shared.outdir import mark_submitted
from reports.shared.records import BACKEND_CHOICES
from reports.shared.spec import load_spec

HELP = "render launchers/slurm/acceptance.sbatch for this cluster and submit it"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--nodes",
        type=int,
        help="number of nodes to test (required, except for --kind check: a DaemonSet runs on every node)",
    )
    parser.add_argument(
        "--gpus-per-node",
        type=int,
        default=0,
        help="GPUs per node: one rank each (default 0: 2 CPU ranks per node, gloo)",
    )
    parser.add_argument("--partition", help="Slurm partition")
    for option, what in PASSTHROUGH:
        parser.add_argument(f"--{option}", help=f"Slurm: {what} (an #SBATCH line; one name)")
    parser.add_argument(
        "--time", help="job time limit in Slurm's format (default: the phases' limits added up)"
    )
    parser.add_argument(
        "--out", help="results dir on a file system all nodes share (default: ./stoker-results/<time>)"
    )
    parser.add_argument(
        "--local-path",
        help="node-local dir for storage tests, beside the spec's local paths "
        "(default: the spec's, else $TMPDIR or /tmp on each node)",
    )
    parser.add_argument(
        "--shared-path",
        help="shared dir for storage tests, beside the spec's shared paths (default: the spec's, else OUT/io-scratch)",
    )
    parser.add_argument(
        "--backend",
        default="auto",
        choices=BACKEND_CHOICES,
        help="collective backend for the sweeps (default auto: nccl with GPUs, else gloo)",
    )
    parser.add_argument("--dry-run", action="store_true", help="print the script instead of submitting it")
    parser.add_argument(
        "--allow-unjudged",
        action="store_true",
        help="let the job end 0 when nothing could be compared with a reference (default: it fails; give --spec)",
    )
    parser.add_argument(
        "--soak",
        metavar="DURATION",
        help="a burn-in (Slurm): passes of every network scope at the plateau for DURATION (90s, 30m, 4h), "
        "counters read between passes, then storage and the report",
    )
    parser.add_argument(
        "--min-nodes",
        type=int,
        help="the fewest nodes the acceptance goes on with once the preflight has set aside "
        "the failing ones (default 2, or 1 on one node); fewer: the job stops, exit 3 "
        "(Slurm; torchrun.sh's MIN_NODES on k8s, SkyPilot, dstack)",
    )
    add_profile_arguments(parser, default="standard")
    submit_cloud.add_arguments(parser)


def config_from_args(args: argparse.Namespace, cwd: Path) -> SbatchConfig:
    if args.nodes < 1:
        raise UsageError(f"--nodes must be at least 1, got {args.nodes}")
    if args.gpus_per_node < 0:
        raise UsageError(f"--gpus-per-node must not be negative, got {args.gpus_per_node}")
    out = Path(args.out) if args.out else Path("stoker-results") / _stamp()
    image = getattr(args, "image", None)
    if image is not None:
        submit_cloud.check_image(image)
    spec = checked_file(args.spec, "--spec", cwd)
    given_shared = str(cwd / args.shared_path) if args.shared_path else None
    paths = storage_plan(load_spec(spec).storage if spec else (), args.local_path, given_shared)
    return SbatchConfig(
        nodes=args.nodes,
        ranks_per_node=args.gpus_per_node or CPU_RANKS,
        gpus_per_node=args.gpus_per_node,
        profile=profile_from_args(args),
        out=str(cwd / out),
        backend=args.backend,
        partition=args.partition,
        time=args.time,
        spec=spec,
        workload=checked_workload(args.workload, cwd),
        local_path=paths.local,
        shared_path=paths.shared,
        more_local=paths.more_local,
        more_shared=paths.more_shared,
        local_GBps=paths.local_GBps,
        shared_GBps=paths.shared_GBps,
        fabric=None if args.fabric == "auto" else args.fabric,  # auto: NCCL's own choice
        # the interpreter that runs this command, so the job finds the same stoker; with
        # --image, the image's own stoker (on its PATH)
        stoker=STOKER if image is not None else (sys.executable, "-m", "launchers.cli"),
        image=image,
        allow_unjudged=bool(getattr(args, "allow_unjudged", False)),
        soak_s=int(parse_duration(args.soak, "--soak")) if getattr(args, "soak", None) else None,
        min_nodes=getattr(args, "min_nodes", None),
        account=getattr(args, "account", None),
        qos=getattr(args, "qos", None),
        reservation=getattr(args, "reservation", None),
    )


def check_gres(gpus_per_node: int, partition: str | None) -> None:
    """Ask sinfo whether the nodes declare the GPUs asked for; one line (exit 2) if not.
    When sinfo cannot answer, sbatch gets the last word."""
    if gpus_per_node <= 0 or shutil.which("sinfo") is None:
        return
    argv = ["sinfo", "-h", "-o", "%G", *(["--partition", partition] if partition else [])]
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return
    problem = (
        gres_problem(p.stdout, gpus_per_node, partition) if p.returncode == 0 and p.stdout.strip() else None
    )
    if problem:
        raise UsageError(problem)


def kept_inputs(cfg: SbatchConfig) -> SbatchConfig:
    """The config with the spec and workload read from their copies in the results dir
    (keep_inputs writes them there); a workload preset name stays a name."""
    out = Path(cfg.out)
    spec = str(out / "spec.yaml") if cfg.spec else None
    workload = str(out / "workload.yaml") if cfg.workload and Path(cfg.workload).is_file() else cfg.workload
    return replace(cfg, spec=spec, workload=workload)


def _stamp() -> str:
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime())


def main(args: argparse.Namespace) -> int:
    if args.nodes is None:
        if getattr(args, "kind", "job") != "check":
            raise UsageError("--nodes N is required: the number of nodes the job tests")
        args.nodes = 1  # a DaemonSet has no node count: the field is not rendered
    if args.platform != "slurm":
        given = [o for o, _ in PASSTHROUGH if getattr(args, o, None)]
        if given:
            raise UsageError(f"--{given[0]} applies to --platform slurm, not {args.platform}")
        if getattr(args, "soak", None):
            raise UsageError(
                f"--soak runs on --platform slurm (not yet {args.platform}): submit it to Slurm, or run stoker soak on one node"
            )
        return submit_cloud.main(args)
    submit_cloud.check_slurm_args(args)
    cfg = config_from_args(args, Path.cwd())
    if cfg.spec:  # before anything is written or submitted
        line = warning(load_spec(cfg.spec), nodes=cfg.nodes, gpus_per_node=cfg.gpus_per_node)
        if line:
            print(f"stoker submit: {line}", file=sys.stderr)
    sbatch = shutil.which("sbatch")
    if not args.dry_run and sbatch is None:
        raise UsageError(
            "sbatch not found on PATH: run this on a Slurm login node, or use --dry-run to print the script"
        )
    if not args.dry_run:
        check_gres(cfg.gpus_per_node, cfg.partition)
    kept = Path(cfg.out) / "acceptance.sbatch"
    # the job reads the spec and workload from the results dir (on the shared file system),
    # never from where they were on the submit host; a dry run without them writes nothing
    inputs = cfg.spec is not None or cfg.workload is not None
    try:
        if inputs or not args.dry_run:
            mark_submitted(kept.parent)  # new or empty, else exit 2; the job's first phase claims it
            keep_inputs(kept.parent, cfg.spec, cfg.workload)
        cfg = kept_inputs(cfg)
        script = render(cfg)
        if args.dry_run:
            sys.stdout.write(script)
            return 0
        kept.write_text(script, encoding="utf-8")
    except OSError as exc:
        raise UsageError(
            f"cannot write into the results dir {cfg.out}: {exc.strerror}; pass --out a writable shared dir"
        ) from None
    assert sbatch is not None
    p = subprocess.run([sbatch, "--parsable", str(kept)], capture_output=True, text=True)
    if p.returncode != 0:
        raise UsageError(
            f"sbatch refused the job: {p.stderr.strip().splitlines()[-1] if p.stderr.strip() else p.returncode}"
        )
    job = p.stdout.strip().split(";")[0]
    log = Path.cwd() / cfg.log.replace("%j", job)
    print(f"submitted job {job}: results in {cfg.out}, job log {log}")
    print("\n".join(summary_lines(plan_of(cfg))))
    return 0
