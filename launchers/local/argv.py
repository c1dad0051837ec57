"""The builders for shell scripts: `python -m launchers.local.argv [launcher options] WHAT ...`
prints the tokens of one phase, NUL-separated, so torchrun.sh and mpirun.sh run exactly
what `stoker run` and the sbatch job run (the profiles and the launchers' flags are
defined once, here in Python, none in bash).

    python -m launchers.local.argv --launcher torchrun --nnodes 2 --nproc-per-node 2 --node-rank 0 \\
        --master-addr node0 net --profile quick --scopes intra-node --out /shared/r
    python -m launchers.local.argv --launcher mpirun --hostfile hosts --nnodes 2 --nproc-per-node 1 \\
        io --profile quick --path /tmp/x --path /shared/x --out /shared/r
    python -m launchers.local.argv report --out /shared/r --spec spec.yaml
    python -m launchers.local.argv limits --profile quick     # net io report inventory compute limits, s
    python -m launchers.local.argv compute --profile quick --out /shared/r   # one per node, each its own devices
    python -m launchers.local.argv --launcher mpirun --nnodes 2 exec -- test -s FILE
    python -m launchers.local.argv --nnodes 2 phases     # the network phases: name, scopes, name, ...
    python -m launchers.local.argv preflight --gpus 8 --path /tmp/x --path /shared/x --spec spec.yaml
    python -m launchers.local.argv --launcher mpirun --hostfile hosts --nnodes 2 inventory --out /shared/r
    STOKER_RUN_ID=r1 python -m launchers.local.argv claim --out /shared/r --option OUT  # r1's, or exit 2
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from launchers import builders as b
from launchers.options import add_profile_arguments, checked_file, checked_workload, profile_from_args
from launchers.parser import OneLineParser
from launchers.plan import JobOptions, job_plan, net_phases
from launchers.profiles import Profile
from reports.shared.errors import StokerError
from reports.shared.outdir import claim


def argv_parser() -> OneLineParser:
    parser = OneLineParser(prog="launchers.local.argv")
    parser.add_argument("--launcher", choices=("local", "torchrun", "mpirun"), default="local")
    parser.add_argument("--nnodes", type=int, default=1)
    # with --nnodes, the phases' limits for this N (launchers/plan.py): GPUs per node, 0 for CPU ranks
    parser.add_argument("--gpus-per-node", type=int, default=0)
    parser.add_argument("--nproc-per-node", type=int, default=1)
    parser.add_argument("--node-rank", type=int, default=0)
    parser.add_argument("--master-addr")
    parser.add_argument("--master-port", type=int, default=29500)
    parser.add_argument("--hostfile")
    parser.add_argument("--export", default="STOKER_RUN_ID", help="mpirun -x: variables, comma-separated")
    parser.add_argument("--allow-run-as-root", action="store_true")
    sub = parser.add_subparsers(dest="what", required=True, parser_class=OneLineParser)
    sub.add_parser("exec").add_argument("command", nargs=argparse.REMAINDER)
    sub.add_parser("phases")
    sub.add_parser("inventory").add_argument("--out", required=True)
    c = sub.add_parser("claim")
    c.add_argument("--out", required=True)
    c.add_argument("--option", default="--out", help="how the user gave the dir, for the error line (OUT)")
    for what in ("net", "io", "report", "limits", "compute", "preflight"):
        p = sub.add_parser(what)
        if what not in ("limits", "preflight"):
            p.add_argument("--out", required=True)
        if (
            what == "preflight"
        ):  # one node's check (launchers/commands/preflight.py): its paths, GPUs, the spec
            p.add_argument("--path", action="append", required=True)
            p.add_argument("--gpus", type=int, default=0)
            p.add_argument("--node")
        if what == "net":
            p.add_argument("--scopes", default="world")
            p.add_argument("--backend", default="auto")
            p.add_argument("--nproc", type=int)
        if what == "io":
            p.add_argument("--path", action="append", required=True)
            p.add_argument("--writers", type=int, help="checkpoint writers per node (one per GPU)")
        add_profile_arguments(p, default="standard")
    return parser


def scaled(args: argparse.Namespace, profile: Profile) -> Profile:
    """The profile with the net phase's (by its scopes; any other scopes: the longest net
    phase's) and the storage phase's limits from the job's plan at --nnodes nodes, as the
    sbatch job and the k8s deadline have them; one node: the profile's."""
    plan = job_plan(
        JobOptions(profile=profile, nodes=max(1, args.nnodes), gpus_per_node=max(0, args.gpus_per_node))
    )
    given = tuple((getattr(args, "scopes", "") or "").split(","))
    named = [ph.limit_s for ph in plan.net if ph.scopes == given]
    net = named[0] if named else max(ph.limit_s for ph in plan.net)
    return replace(
        profile, net_timeout_s=max(net, profile.net_timeout_s), io_timeout_s=plan.limit_of("storage")
    )


def program(args: argparse.Namespace, cwd: Path) -> list[str]:
    """The stoker command of the phase, validated (bad input raises UsageError)."""
    if args.what == "claim":  # OUT is this run's (STOKER_RUN_ID) before its first phase, or exit 2
        claim(Path(args.out), os.environ.get("STOKER_RUN_ID", ""), option=args.option)
        return []
    if args.what == "exec":
        return list(args.command[1:] if args.command[:1] == ["--"] else args.command)
    if args.what == "phases":
        return [t for name, scopes in net_phases(args.nnodes) for t in (name, ",".join(scopes))]
    stoker = (sys.executable, "-m", "launchers.cli")
    if args.what == "inventory":
        return b.inventory_argv(b.InventoryCommand(out=args.out, stoker=stoker))
    spec = checked_file(args.spec, "--spec", cwd)
    if args.what == "preflight":
        return b.preflight_argv(
            b.PreflightCommand(
                paths=tuple(args.path), gpus=args.gpus, spec=spec, node=args.node, stoker=stoker
            )
        )
    workload = checked_workload(args.workload, cwd)
    profile = scaled(args, profile_from_args(args))
    if args.what == "limits":
        return [
            str(profile.net_timeout_s),
            str(profile.io_timeout_s),
            str(profile.report_timeout_s),
            str(b.INVENTORY_LIMIT_S),
            str(b.compute_limit_s(profile.name, profile.compute_budget_s)),
        ]
    if args.what == "compute":
        return b.compute_argv(
            b.ComputeCommand(
                out=args.out, profile=profile.name, budget_s=profile.compute_budget_s, stoker=stoker
            )
        )
    if args.what == "report":
        return b.report_argv(b.ReportCommand(out=args.out, spec=spec, workload=workload, stoker=stoker))
    if args.what == "net":
        return b.net_argv(
            b.NetCommand(
                profile=profile,
                out=args.out,
                scopes=tuple(args.scopes.split(",")),
                backend=args.backend,
                nproc=args.nproc,
                stoker=stoker,
            )
        )
    return b.io_argv(
        b.IoCommand(
            profile=profile,
            out=args.out,
            paths=tuple(args.path),
            stoker=stoker,
            writers=args.writers,
            spec=spec,  # a figure under the spec's storage promise is measured again, as `stoker run`
        )
    )


def launched(args: argparse.Namespace, prog: list[str]) -> list[str]:
    """`prog` under the launcher asked for (report and limits always run locally; the
    inventory and the compute phase under mpirun, one per node, and locally on each node
    that runs torchrun.sh)."""
    if args.launcher == "torchrun" and args.what in ("net", "io", "exec"):
        return b.build(
            "torchrun",
            b.TorchrunSpec(
                program=tuple(prog),
                nnodes=args.nnodes,
                nproc_per_node=args.nproc_per_node,
                node_rank=args.node_rank,
                master_addr=args.master_addr,
                master_port=args.master_port,
                torchrun=(sys.executable, "-m", "torch.distributed.run"),
            ),
        )
    if args.launcher == "mpirun" and args.what in ("net", "io", "exec", "inventory", "compute"):
        return b.build(
            "mpirun",
            b.MpirunSpec(
                program=tuple(prog),
                hostfile=args.hostfile,
                nodes=args.nnodes,
                procs_per_node=args.nproc_per_node,
                export=tuple(x for x in args.export.split(",") if x),
                allow_run_as_root=args.allow_run_as_root,
            ),
        )
    return prog


def main(argv: Sequence[str] | None = None) -> int:
    args = argv_parser().parse_args(argv)
    try:
        out = launched(args, program(args, Path.cwd()))
    except StokerError as exc:
        sys.stderr.write(f"stoker: {exc}\n")
        return exc.exit_code
    sys.stdout.write("".join(t + "\0" for t in out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
