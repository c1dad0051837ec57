"""`stoker net`: collective sweeps with nccl-tests semantics over torch.distributed or MPI.

Under a launcher every rank runs it:
  torchrun --nproc-per-node 8 -m launchers.cli net
  srun --ntasks-per-node 8 stoker net          (export MASTER_ADDR, MASTER_PORT first)
  mpirun -np 16 stoker net --backend mpi
Standalone, `stoker net --nproc 2` starts two local ranks itself.
Nothing here imports torch or mpi4py until a rank starts (backends load them).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from netbench.collectives import OP_NAMES, TABLE
from netbench.launch_env import detect
from netbench.topology import SCOPES, parse_pairs
from reports.shared.errors import StokerError, UsageError
from reports.shared.units import check_seconds, parse_size

if TYPE_CHECKING:
    from netbench.rank_run import Settings

HELP = "collective sweeps (nccl-tests semantics) over torch.distributed or MPI"

DEFAULT_SCOPES = "world,intra-node,inter-node"

# (flags, dest, options): one table drives both the parser and the ranks' argv of --nproc.
_OPTIONS: list[tuple[tuple[str, ...], str, dict[str, Any]]] = [
    (
        ("--ops",),
        "ops",
        dict(
            default="all",
            metavar="LIST",
            help=f"comma list of ops or 'all' (default all: {', '.join(OP_NAMES)})",
        ),
    ),
    (
        ("--min-bytes", "-b"),
        "min_bytes",
        dict(
            default="8",
            metavar="SIZE",
            help="smallest size, K/M/G = powers of 1024 [nccl-tests -b] (default 8)",
        ),
    ),
    (
        ("--max-bytes", "-e"),
        "max_bytes",
        dict(
            default="64M",
            metavar="SIZE",
            help="largest size [-e] (default 64M, about a minute on 2 CPU ranks)",
        ),
    ),
    (
        ("--step-factor", "-f"),
        "step_factor",
        dict(default="2", metavar="F", help="multiply the size by this each step [-f] (default 2)"),
    ),
    (
        ("--iters", "-n"),
        "iters",
        dict(default=20, metavar="N", type=int, help="timed iterations per size [-n] (default 20)"),
    ),
    (
        ("--warmup", "-w"),
        "warmup",
        dict(
            default=1,
            metavar="N",
            type=int,
            help="untimed iterations first [-w] (default 1, as nccl-tests 2.19.6)",
        ),
    ),
    (
        ("--dtype", "-d"),
        "dtype",
        dict(default="float32", metavar="TYPE", help="element type [-d] (default float32)"),
    ),
    (
        ("--backend",),
        "backend",
        dict(default="auto", metavar="NAME", help="auto|nccl|gloo|mpi (auto: nccl with GPUs, else gloo)"),
    ),
    (
        ("--scopes",),
        "scopes",
        dict(
            default=DEFAULT_SCOPES,
            metavar="LIST",
            help=f"comma list of {', '.join(SCOPES)} (default {DEFAULT_SCOPES})",
        ),
    ),
    (
        ("--timeout",),
        "timeout",
        dict(
            default=300.0,
            metavar="SECONDS",
            type=float,
            help="abort (exit 3) when one op takes longer, seconds (default 300)",
        ),
    ),
    (
        ("--out",),
        "out",
        dict(default=None, metavar="DIR", help="results directory (default ./stoker-results/<run_id>)"),
    ),
    (
        ("--pair-bytes",),
        "pair_bytes",
        dict(
            default=None,
            metavar="SIZE",
            help="size of each pairs or groups measurement (default --max-bytes)",
        ),
    ),
    (
        ("--pair-op",),
        "pair_op",
        dict(
            default="all_reduce",
            metavar="OP",
            help="op measured between node pairs and in the groups search (default all_reduce)",
        ),
    ),
    (
        ("--pairs",),
        "pairs",
        dict(default=None, metavar="A:B,...", help="measure only these host pairs: HOSTA:HOSTB,HOSTC:HOSTD"),
    ),
    (
        ("--hosts-override",),
        "hosts_override",
        dict(
            default=None,
            metavar="H0,H1,...",
            help="rank i's host name, comma separated (tests; also STOKER_HOSTS_MAP)",
        ),
    ),
    (
        ("--spec",),
        "spec",
        dict(
            default=None,
            metavar="FILE",
            help="cluster spec (YAML): a swept figure under the threshold the report holds it to is "
            "measured again at the end of the run, the same test on the same nodes, before the report fails it",
        ),
    ),
    (
        ("--soak",),
        "soak",
        dict(
            default=None,
            metavar="SECONDS",
            type=float,
            help="soak: repeat the sweep in passes for this long, counters read between passes",
        ),
    ),
    (
        ("--soak-passes",),
        "soak_passes",
        dict(default=None, metavar="N", type=int, help="soak: at most this many passes"),
    ),
    (
        ("--soak-first",),
        "soak_first",
        dict(default=None, metavar="K", type=int, help="soak: number of the first pass (default 1)"),
    ),
]
_FLAGS: list[tuple[tuple[str, ...], str, dict[str, Any]]] = [
    (
        ("--in-place",),
        "in_place",
        dict(action="store_true", help="also measure in place, as nccl-tests does"),
    ),
    (
        ("--check",),
        "check",
        dict(
            action=argparse.BooleanOptionalAction,
            default=True,
            help="count wrong elements [nccl-tests -c 1] (default on; --no-check skips it)",
        ),
    ),
    (
        ("--graph",),
        "graph",
        dict(
            action=argparse.BooleanOptionalAction,
            default=True,
            help="NCCL: time the iterations as one captured CUDA graph [nccl-tests -G] (default on; --no-graph times eagerly; gloo and MPI are always eager)",
        ),
    ),
]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    for flags, dest, opts in _OPTIONS + _FLAGS:
        parser.add_argument(*flags, dest=dest, **opts)
    parser.add_argument(
        "--nproc",
        type=int,
        default=None,
        metavar="N",
        help="start this many local ranks (no launcher needed)",
    )


def rank_argv(args: argparse.Namespace) -> list[str]:
    """The same command for each rank started by --nproc (all options, without --nproc)."""
    argv: list[str] = []
    for flags, dest, _ in _OPTIONS:
        value = getattr(args, dest)
        if value is not None:
            argv += [flags[0], str(value)]
    if args.in_place:
        argv.append("--in-place")
    argv.append("--check" if args.check else "--no-check")
    argv.append("--graph" if args.graph else "--no-graph")
    return argv


def _choice_list(text: str, valid: tuple[str, ...], what: str, all_ok: bool = False) -> tuple[str, ...]:
    items = tuple(x.strip() for x in text.split(",") if x.strip())
    if all_ok and items == ("all",):
        return valid
    bad = [x for x in items if x not in valid]
    if bad or not items:
        raise UsageError(f"unknown {what} {', '.join(bad) or repr(text)}: choose from {', '.join(valid)}")
    return items


def settings(args: argparse.Namespace) -> Settings:
    """Validate every option (one-line UsageError on bad input) into runner Settings."""
    from netbench.backends import DTYPES
    from netbench.rank_run import Settings
    from netbench.sweep import sizes

    ops = _choice_list(args.ops, OP_NAMES, "op", all_ok=True)
    scopes = _choice_list(args.scopes, SCOPES, "scope")
    if args.dtype not in DTYPES:
        raise UsageError(f"unknown dtype {args.dtype!r}: choose from {', '.join(DTYPES)}")
    if args.pair_op not in OP_NAMES:
        raise UsageError(f"unknown --pair-op {args.pair_op!r}: choose from {', '.join(OP_NAMES)}")
    try:
        factor = float(args.step_factor)
    except ValueError:
        raise UsageError(
            f"bad --step-factor {args.step_factor!r}: give a number larger than 1, e.g. 2"
        ) from None
    lo, hi = parse_size(args.min_bytes, "--min-bytes"), parse_size(args.max_bytes, "--max-bytes")
    if args.iters < 1 or args.warmup < 0:
        raise UsageError("--iters must be at least 1 and --warmup at least 0")
    check_seconds(args.timeout, "--timeout")
    if args.soak is not None and args.soak <= 0:
        raise UsageError("--soak must be a positive number of seconds, e.g. --soak 3600")
    if args.spec is not None:
        from reports.shared.spec import load_spec

        load_spec(args.spec)  # a spec that cannot be read is refused before anything runs
    if (args.soak_passes is not None and args.soak_passes < 1) or (
        args.soak_first is not None and args.soak_first < 1
    ):
        raise UsageError("--soak-passes and --soak-first must be at least 1")
    return Settings(
        ops=ops,
        sizes=tuple(sizes(lo, hi, factor)),
        iters=args.iters,
        warmup=args.warmup,
        dtype=args.dtype,
        scopes=scopes,
        in_place=args.in_place,
        check=args.check,
        timeout_s=args.timeout,
        pair_bytes=parse_size(args.pair_bytes, "--pair-bytes") if args.pair_bytes else hi,
        pair_op=args.pair_op,
        pairs=tuple(parse_pairs(args.pairs)) if args.pairs else (),
        graph=args.graph,
        out=args.out,
        hosts_override=args.hosts_override,
        soak_s=args.soak,
        soak_passes=args.soak_passes,
        soak_first=args.soak_first or 1,
        spec_file=args.spec,
        confirm_rule=getattr(args, "confirm_rule", None),
    )


def _check_world(world: int, s: Settings) -> None:
    """Checks that need the world size: ops that need 2 ranks, one fake host per rank."""
    if s.hosts_override and world > len(s.hosts_override.split(",")):
        raise UsageError(
            f"--hosts-override names {len(s.hosts_override.split(','))} hosts for {world} ranks: give one per rank"
        )
    needy = [op for op in s.ops if TABLE[op].min_ranks > world]
    if needy and world > 0:
        raise UsageError(
            f"{', '.join(needy)} need at least 2 ranks and this is a world of {world}: "
            "add --nproc 2, run under a launcher (torchrun, srun, mpirun), or leave them out with --ops"
        )


def inventory_nccl_env(rank: int, s: Settings) -> dict[str, str]:
    """NCCL_IB_HCA and company from this node's inventory (netbench/nccl_env.py `fabric_env`);
    nothing where it cannot be read."""
    from netbench.inventory.this_node import host_records
    from netbench.nccl_env import fabric_env
    from netbench.topology import my_host
    from reports.shared.port_rule import gpu_affine_nics

    try:
        recs = host_records(s.out, my_host(rank, s.hosts_override))
    except (OSError, UsageError):
        return {}
    ports = [r for r in recs if r.get("component") == "network port"]
    return fabric_env(ports, gpu_affine_nics(recs), os.environ)


def main(args: argparse.Namespace) -> int:
    from netbench.backends import check_installed, resolve
    from netbench.backends.opener import open_backend
    from netbench.nccl_env import debug_env
    from netbench.spawn import CHILD_ENV, supervise

    s = settings(args)
    check_installed(args.backend)
    if args.nproc is not None and not os.environ.get(CHILD_ENV):
        if args.nproc < 1:
            raise UsageError("--nproc must be at least 1")
        if args.backend == "mpi":
            raise UsageError(
                "--backend mpi ranks are started by mpirun or srun, not --nproc: run e.g. mpirun -np 2 stoker net --backend mpi"
            )
        _check_world(args.nproc, s)
        # the ranks resolve `auto` themselves: importing torch here would only delay them
        return supervise(
            args.nproc, rank_argv(args), patient=s.soak_s is not None or s.soak_passes is not None
        )
    le = detect(os.environ)
    _check_world(le.world, s)
    from netbench.runner import execute

    backend = resolve(args.backend)
    if backend == "nccl" and (extra := debug_env(os.environ, s.out)):  # NCCL's account, kept
        os.makedirs(os.path.dirname(extra["NCCL_DEBUG_FILE"]), exist_ok=True)
        os.environ.update(extra)
    if backend == "nccl":  # the NICs NCCL is to use, from this node's inventory (the user's win)
        os.environ.update(inventory_nccl_env(le.rank, s))
    b = open_backend(backend, le, s.dtype, s.timeout_s)
    try:
        _check_world(b.world, s)
        code = execute(b, s, "stoker --nproc" if os.environ.get(CHILD_ENV) else le.launcher)
    except StokerError as exc:
        # after a peer died, tearing the process group down can block for good: say why and leave
        sys.stdout.flush()
        sys.stderr.write(f"stoker net: {exc}\n")
        sys.stderr.flush()
        os._exit(exc.exit_code)
    b.close()
    if (s.soak_s is not None or s.soak_passes is not None) and backend != "mpi":
        # a soak stopped by scancel has until the scheduler's KILL (KillWait) for the pass in
        # flight and for the job's own epilogue: its records are fsynced, skip the teardown
        # (not MPI's: mpi4py finalises MPI at exit, and mpirun counts a rank that did not)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code
