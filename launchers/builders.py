"""Pure command builders: a typed frozen spec in, a list of argument tokens out.

Two kinds, both without side effects (no `srun --version`, no environment reads):
- what to run: `stoker net`, `stoker io`, `stoker report` argument lists from a profile;
- how to launch it: srun, torchrun, mpirun and local wrappers, registered by name in
  `LAUNCHERS` so a caller picks one with a string (`build("srun", spec)`).

Tokens are always a list handed to a subprocess or `shell_line` — never a shell string
glued together from input.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from launchers.profiles import SAVE_REPEATS, Profile
from launchers.quoting import word

# Where the stoker program lives, as tokens (overridden with `python -m launchers.cli`
# where the console script is not on PATH).
STOKER: tuple[str, ...] = ("stoker",)


# --- what to run -----------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, slots=True)
class NetCommand:
    """One `stoker net` phase."""

    profile: Profile
    out: str
    scopes: tuple[str, ...]
    backend: str = "auto"
    nproc: int | None = None  # standalone: start this many local ranks
    stoker: tuple[str, ...] = STOKER
    spec: str | None = None  # a swept figure under its threshold is measured again


@dataclass(frozen=True, kw_only=True, slots=True)
class IoCommand:
    """One `stoker io` phase over one or more paths."""

    profile: Profile
    out: str
    paths: tuple[str, ...]
    stoker: tuple[str, ...] = STOKER
    writers: int | None = None  # checkpoint writers per node (one shard per GPU); None: stoker io's default
    spec: str | None = None  # a figure under the spec's storage threshold is measured again


@dataclass(frozen=True, kw_only=True, slots=True)
class ReportCommand:
    out: str
    spec: str | None = None
    workload: str | None = None
    stoker: tuple[str, ...] = STOKER
    fail_unjudged: bool = False  # the acceptance job: nothing judged is no acceptance
    scope: str = "cluster"  # stoker report --scope: node judges only the node's own promises


@dataclass(frozen=True, kw_only=True, slots=True)
class InventoryCommand:
    """One `stoker inventory` phase: read-only, seconds (the copy test included)."""

    out: str
    stoker: tuple[str, ...] = STOKER


# one node's preflight: stoker check's 50 s, its inventory and the storage paths, with room
PREFLIGHT_LIMIT_S = 120
INVENTORY_LIMIT_S = 120  # nvidia-smi reads and 30 x 1 GiB copies per GPU take seconds; room for slow tools


@dataclass(frozen=True, kw_only=True, slots=True)
class ComputeCommand:
    """One `stoker compute` phase: every device of the node at once, a budget per profile."""

    out: str
    profile: str
    budget_s: float | None = None  # --budget: overrides the profile's
    stoker: tuple[str, ...] = STOKER


# stoker compute's own limit per profile (its budget, ~20 s / ~60 s / the whole grid capped at
# 1800 s, plus 120 s for torch and CUDA start-up: netbench/compute) and a minute more, so it ends first
COMPUTE_LIMIT_S = {"quick": 20 + 120 + 60, "standard": 60 + 120 + 60, "full": 1800 + 120 + 60}


def compute_limit_s(profile: str, budget_s: float | None) -> int:
    """The launcher's limit for one compute phase: the profile's, or a given budget's the same way."""
    return COMPUTE_LIMIT_S[profile] if budget_s is None else int(budget_s) + 1 + 120 + 60


def compute_argv(c: ComputeCommand) -> list[str]:
    budget = [] if c.budget_s is None else ["--budget", f"{c.budget_s:g}"]
    return [*c.stoker, "compute", "--profile", c.profile, *budget, "--out", c.out]


def inventory_argv(c: InventoryCommand) -> list[str]:
    return [*c.stoker, "inventory", "--out", c.out]


def net_argv(c: NetCommand) -> list[str]:
    p = c.profile
    argv = [
        *c.stoker,
        "net",
        "--ops",
        ",".join(p.ops),
        "--min-bytes",
        p.min_bytes,
        "--max-bytes",
        p.max_bytes,
        "--step-factor",
        str(p.step_factor),
        "--iters",
        str(p.iters),
        "--warmup",
        str(p.warmup),
        "--backend",
        c.backend,
        "--scopes",
        ",".join(c.scopes),
        "--timeout",
        str(p.net_timeout_s),
        *(["--spec", c.spec] if c.spec else []),
        "--out",
        c.out,
    ]
    if c.nproc is not None:
        argv += ["--nproc", str(c.nproc)]
    return argv


def io_argv(c: IoCommand) -> list[str]:
    p = c.profile
    argv = [*c.stoker, "io"]
    for path in c.paths:
        argv += ["--path", path]
    return argv + [
        "--workloads",
        ",".join(p.workloads),
        "--ckpt-bytes",
        p.ckpt_bytes,
        "--runtime",
        str(p.io_runtime_s),
        "--timeout",
        str(p.io_timeout_s),
        *(["--writers", str(c.writers)] if c.writers else []),
        *_save_repeats(p.save_repeats),
        *(["--spec", c.spec] if c.spec else []),
        "--out",
        c.out,
    ]


def _save_repeats(n: int) -> list[str]:
    """stoker io's torch saves: nothing at its own default, --no-torch for none."""
    if n == SAVE_REPEATS:
        return []
    return ["--no-torch"] if n == 0 else ["--save-repeats", str(n)]


@dataclass(frozen=True, kw_only=True, slots=True)
class PreflightCommand:
    """One node's `stoker preflight` (launchers/commands/preflight.py) before the sweeps."""

    paths: tuple[str, ...]  # the storage paths it must be able to write
    gpus: int = 0  # the GPUs per node the job runs on; 0: a CPU job, no GPU count compared
    spec: str | None = None  # its gpus_per_node and inter-node NIC count
    node: str | None = None  # the node's name as the job knows it; None: its host name
    stoker: tuple[str, ...] = STOKER


def preflight_argv(c: PreflightCommand) -> list[str]:
    argv = [*c.stoker, "preflight", *c.paths]
    if c.node:
        argv += ["--node", c.node]
    if c.gpus > 0:
        argv += ["--gpus", str(c.gpus)]
    if c.spec:
        argv += ["--spec", c.spec]
    return argv


def report_argv(c: ReportCommand) -> list[str]:
    argv = [*c.stoker, "report", c.out]
    if c.spec:
        argv += ["--spec", c.spec]
    if c.workload:
        argv += ["--workload", c.workload]
    if c.fail_unjudged:
        argv.append("--fail-unjudged")
    if c.scope != "cluster":
        argv += ["--scope", c.scope]
    return argv


# --- how to launch it --------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, slots=True)
class SrunSpec:
    program: tuple[str, ...]
    nodes: int
    ntasks_per_node: int = 1
    time_limit_s: int | None = None  # srun --time: the step is killed past it
    mpi: str | None = None  # e.g. "pmix" for an MPI backend
    label: bool = True  # prefix every output line with its task number
    # CPUs per task: a number, or a variable of the script ("$CPT"); None: Slurm's default
    cpus_per_task: str | None = None
    bind: tuple[str, ...] = ()  # e.g. ("--cpu-bind=cores",)
    # the nodes as variables of the script (the sbatch job after its preflight): a count
    # ("$NN"), the tasks ("$NTASKS") and a --nodelist ("$GOOD"); None: `nodes` as a number
    on: tuple[str, str, str] | None = None
    kill_on_bad_exit: bool = True  # False: each node's task ends on its own (the preflight)
    output: str | None = None  # srun --output, e.g. "$OUT/preflight/%N.log" (a file per node)
    # pyxis/enroot: the step runs in this image with these mounts (SRC:DST,...); None: on the node
    container_image: str | None = None
    container_mounts: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class TorchrunSpec:
    """Static rendezvous (global rank = node_rank * nproc_per_node + local rank, so ranks
    of one node are contiguous); `--standalone` on one node without a master address."""

    program: tuple[str, ...]
    nnodes: int
    nproc_per_node: int
    node_rank: int = 0
    master_addr: str | None = None
    master_port: int = 29500
    torchrun: tuple[str, ...] = ("torchrun",)


@dataclass(frozen=True, kw_only=True, slots=True)
class MpirunSpec:
    program: tuple[str, ...]
    hostfile: str | None
    nodes: int
    procs_per_node: int
    export: tuple[str, ...] = ("STOKER_RUN_ID",)  # variables passed to every rank (-x)
    mca: tuple[tuple[str, str], ...] = ()  # e.g. (("btl_tcp_if_include", "eth0"),)
    allow_run_as_root: bool = False


@dataclass(frozen=True, kw_only=True, slots=True)
class LocalSpec:
    program: tuple[str, ...]
    time_limit_s: int | None = None  # coreutils timeout: TERM at the limit, KILL 30 s later


def _minutes(seconds: int) -> str:
    """Slurm's minutes:seconds time format, rounded up to a whole minute (its granularity)."""
    return f"{-(-seconds // 60)}:00"


def srun(s: SrunSpec) -> list[str]:
    count, ntasks, nodelist = s.on or (str(s.nodes), str(s.nodes * s.ntasks_per_node), "")
    argv = [
        "srun",
        f"--nodes={count}",
        f"--ntasks-per-node={s.ntasks_per_node}",
        f"--ntasks={ntasks}",
        # one dead task ends the whole step instead of leaving the others waiting
        f"--kill-on-bad-exit={int(s.kill_on_bad_exit)}",
    ]
    if nodelist:
        argv.append(f"--nodelist={nodelist}")
    if s.output:
        argv.append(f"--output={s.output}")
    if s.time_limit_s is not None:
        argv.append(f"--time={_minutes(s.time_limit_s)}")
    if s.mpi:
        argv.append(f"--mpi={s.mpi}")
    if s.cpus_per_task is not None:
        argv.append(f"--cpus-per-task={s.cpus_per_task}")
    argv += list(s.bind)
    if s.container_image is not None:
        argv.append(f"--container-image={s.container_image}")
    if s.container_mounts is not None:
        argv.append(f"--container-mounts={s.container_mounts}")
    if s.label:
        argv.append("--label")
    return argv + list(s.program)


def torchrun(s: TorchrunSpec) -> list[str]:
    argv = [*s.torchrun, f"--nnodes={s.nnodes}", f"--nproc-per-node={s.nproc_per_node}"]
    if s.master_addr is None:
        argv.append("--standalone")
    else:
        argv += [
            f"--node-rank={s.node_rank}",
            f"--master-addr={s.master_addr}",
            f"--master-port={s.master_port}",
        ]
    # a failed rank is a finding, not something to retry; the program is not a .py file
    return argv + ["--max-restarts=0", "--no-python", *s.program]


def mpirun(s: MpirunSpec) -> list[str]:
    argv = ["mpirun"]
    if s.allow_run_as_root:
        argv.append("--allow-run-as-root")
    if s.hostfile:
        argv += ["--hostfile", s.hostfile]
    argv += ["-np", str(s.nodes * s.procs_per_node), "--npernode", str(s.procs_per_node), "--bind-to", "none"]
    for name in s.export:
        argv += ["-x", name]
    for key, value in s.mca:
        argv += ["--mca", key, value]
    return argv + list(s.program)


def local(s: LocalSpec) -> list[str]:
    if s.time_limit_s is None:
        return list(s.program)
    return ["timeout", "--kill-after=30", str(s.time_limit_s), *s.program]


LAUNCHERS: dict[str, Callable[[Any], list[str]]] = {
    "srun": srun,
    "torchrun": torchrun,
    "mpirun": mpirun,
    "local": local,
}


def build(launcher: str, spec: object) -> list[str]:
    """The tokens of `spec` under the launcher registered as `launcher`."""
    return LAUNCHERS[launcher](spec)


# --- tokens into a script line -----------------------------------------------------------

# A token that is a reference to one of the script's own variables ("$OUT", "$OUT/io"), or an
# option set to one ("--cpus-per-task=$CPT"): double-quoted so bash expands it; every other
# token is single-quoted as needed.
_VAR_TOKEN = re.compile(
    r"^(--[a-z][a-z-]*=)?\$[A-Z_][A-Z0-9_]*(/[A-Za-z0-9._/%-]*)?$"
)  # %N: srun's node name


def shell_line(tokens: list[str]) -> str:
    return " ".join(f'"{t}"' if _VAR_TOKEN.match(t) else word(t, "a script argument") for t in tokens)
