"""Render launchers/slurm/acceptance.sbatch from a dataclass (pure: template text in,
script text out; the golden tests compare the result line by line)."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from importlib import resources

from launchers import builders as b
from launchers import quoting as q
from launchers.acceptance import PHASE_GRACE_S, job_limit_s
from launchers.acceptance import net_phases as _net_phases
from launchers.cloud.fabrics import FABRICS
from launchers.duration import Job, limit_of, shard_bytes, summary_lines
from launchers.profiles import Profile, plateau
from launchers.slurm import pyxis
from reports.shared.errors import UsageError
from reports.shared.units import parse_size

# What the rendered script may hold beyond the profile's own limits: stoker's --timeout
# fires first, srun's --time next (Slurm kills on whole minutes), `timeout` last.
SRUN_GRACE_S = 60  # PHASE_GRACE_S, JOB_MARGIN_S: launchers/acceptance.py
# the nodes the preflight kept, as the script's variables: count, tasks, --nodelist
KEPT = ("$NN", "$NN", "$GOOD")
KEPT_RANKS = ("$NN", "$NRANKS", "$GOOD")  # one task per rank
# Slurm's accounting and placement options, each an SbatchConfig field of that name and, when
# given, one #SBATCH line (`stoker submit --account/--qos/--reservation`): one Slurm name each
PASSTHROUGH = (
    ("account", "the account the job is charged to"),
    ("qos", "the quality of service"),
    ("reservation", "the reservation the job runs in"),
)
ACROSS = ("inter-node", "pairs", "groups")  # phases that need two nodes: skipped on one
_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")


@dataclass(frozen=True, kw_only=True, slots=True)
class SbatchConfig:
    nodes: int
    ranks_per_node: int  # one per GPU; 2 CPU ranks where there are none
    gpus_per_node: int  # 0: no --gpus-per-node request (CPU / gloo)
    profile: Profile
    out: str  # results dir; must be on a file system all nodes share
    backend: str = "auto"
    partition: str | None = None
    time: str | None = None  # job limit (Slurm format); None: the phases' sum
    spec: str | None = None
    workload: str | None = None
    local_path: str | None = None  # None: $TMPDIR (or /tmp) per node
    shared_path: str | None = None  # None: a scratch dir inside the results dir
    job_name: str = "stoker-acceptance"
    # the job log, relative to the submit dir: Slurm opens it before the job starts, so it
    # must not depend on the results dir (which the job itself checks, and may refuse)
    log: str = "stoker-acceptance-%j.out"
    stoker: tuple[str, ...] = b.STOKER
    allow_unjudged: bool = False  # True: a run with nothing to compare with may end 0
    soak_s: int | None = None  # a burn-in: one network phase of soak passes this long (stoker submit --soak)
    # the spec's further storage promises beyond local_path / shared_path, each measured too
    more_local: tuple[str, ...] = ()
    more_shared: tuple[str, ...] = ()
    # the spec's write promises (GB/s): a node's local disk, the whole shared file system;
    # the duration model's storage rates where given
    local_GBps: float | None = None
    shared_GBps: float | None = None
    fabric: str | None = (
        None  # launchers/cloud/fabrics.py: its rank variables exported (None: the site's own)
    )
    # fewer nodes than this left after the preflight: the job stops (exit 3); None: 2, or 1 on one node
    min_nodes: int | None = None
    # Slurm's own accounting and placement, passed through as #SBATCH lines when given
    account: str | None = None
    qos: str | None = None
    reservation: str | None = None
    # a container image with stoker on its PATH: every step that runs stoker runs in it
    # (srun --container-image, pyxis/enroot), the results dir and storage paths mounted; None: on the node
    image: str | None = None


def model(cfg: SbatchConfig) -> Job:
    """The duration model's view of this job (launchers/duration.py)."""
    return Job(
        profile=cfg.profile,
        nodes=cfg.nodes,
        ranks_per_node=cfg.ranks_per_node,
        gpus_per_node=cfg.gpus_per_node,
        writers=cfg.gpus_per_node or 8,
        local_paths=1 + len(cfg.more_local),
        shared_paths=1 + len(cfg.more_shared),
        local_GBps=cfg.local_GBps,
        shared_GBps=cfg.shared_GBps,
    )


def min_nodes(cfg: SbatchConfig) -> int:
    """The fewest nodes the job goes on with after the preflight (--min-nodes)."""
    if cfg.min_nodes is not None:
        if not 1 <= cfg.min_nodes <= cfg.nodes:
            raise UsageError(f"--min-nodes {cfg.min_nodes}: give 1 to --nodes ({cfg.nodes})")
        return cfg.min_nodes
    return min(2, cfg.nodes)


def template_text() -> str:
    return resources.files("launchers").joinpath("slurm/acceptance.sbatch").read_text(encoding="utf-8")


def job_time(cfg: SbatchConfig) -> str:
    """The job's --time: every phase at its limit, plus a margin; as H:MM:SS."""
    secs = job_limit_s(
        cfg.profile, cfg.nodes, ranks_per_node=cfg.ranks_per_node, gpus_per_node=cfg.gpus_per_node
    ) + (cfg.soak_s or 0)
    return f"{secs // 3600}:{secs % 3600 // 60:02d}:{secs % 60:02d}"


def net_phases(cfg: SbatchConfig) -> list[tuple[str, tuple[str, ...]]]:
    """(phase name, scopes) in the contract's order (launchers/acceptance.py)."""
    return _net_phases(cfg.nodes)


def _srun(cfg: SbatchConfig, program: list[str], per_node: int, limit_s: int, mpi: bool) -> list[str]:
    """One phase's step: a rank per GPU gets its share of the node's CPUs ($CPT) bound as
    cores; a task per node gets every CPU of the node. Every step runs on the nodes the
    preflight kept ($GOOD, $NN of them). No --gpu-bind: a per-task GPU binding hides the
    other ranks' GPUs from each task and breaks CUDA IPC / P2P between them (NCCL falls off
    NVLink); every rank sees the node's GPUs and takes the one of its local rank."""
    ranks = mpi  # the sweeps' steps: one rank per GPU
    bind = ("--cpu-bind=cores",) if ranks and cfg.gpus_per_node else ()
    return b.srun(
        pyxis.in_image(
            cfg.image,
            b.SrunSpec(
                program=tuple(program),
                nodes=cfg.nodes,
                on=KEPT if per_node == 1 else KEPT_RANKS,
                ntasks_per_node=per_node,
                time_limit_s=limit_s + SRUN_GRACE_S,
                mpi="pmix" if mpi and cfg.backend == "mpi" else None,
                cpus_per_task="$CPT" if ranks else "$NODE_CPUS",
                bind=bind,
            ),
        )
    )


def storage_profile(cfg: SbatchConfig) -> Profile:
    """The profile of the storage phase: its limit from the duration model, and the
    checkpoint shard per writer within the shared file system's cap."""
    job = model(cfg)
    p = replace(cfg.profile, io_timeout_s=limit_of(job, "storage"))
    shard = shard_bytes(cfg.profile, cfg.nodes, job.writers)
    if shard < parse_size(cfg.profile.ckpt_bytes, "--ckpt-bytes"):
        p = replace(p, ckpt_bytes=f"{shard >> 20}M")
    return p


def _phase_lines(cfg: SbatchConfig) -> list[str]:
    p = cfg.profile
    inventory = _srun(
        cfg,
        b.inventory_argv(b.InventoryCommand(out="$OUT", stoker=cfg.stoker)),
        1,
        b.INVENTORY_LIMIT_S,
        mpi=False,
    )  # one task per node: each node reads itself
    lines = [b.shell_line(["phase", "inventory", str(b.INVENTORY_LIMIT_S + PHASE_GRACE_S), *inventory])]
    # one task per node; stoker compute starts one process per GPU itself
    limit = b.compute_limit_s(p.name, p.compute_budget_s)
    compute = _srun(
        cfg,
        b.compute_argv(
            b.ComputeCommand(out="$OUT", profile=p.name, budget_s=p.compute_budget_s, stoker=cfg.stoker)
        ),
        1,
        limit,
        mpi=False,
    )
    lines.append(b.shell_line(["phase", "compute", str(limit + PHASE_GRACE_S), *compute]))
    if cfg.soak_s:
        lines.append(_soak_line(cfg))
    job = model(cfg)
    for name, scopes in [] if cfg.soak_s else net_phases(cfg):
        limit = limit_of(job, name)  # the profile's, longer as the nodes grow
        net = b.net_argv(
            b.NetCommand(
                profile=replace(p, net_timeout_s=limit),
                out="$OUT",
                scopes=scopes,
                backend=cfg.backend,
                stoker=cfg.stoker,
                spec=cfg.spec,  # a swept figure under the spec is measured again, as `stoker run`
            )
        )
        cmd = _srun(cfg, net, cfg.ranks_per_node, limit, mpi=True)
        runner = "across" if name in ACROSS else "phase"
        lines.append(b.shell_line([runner, name, str(limit + PHASE_GRACE_S), *cmd]))
    paths = ("$LOCAL_IO", "$SHARED_IO", *cfg.more_local, *cfg.more_shared)
    mkdir = b.srun(
        b.SrunSpec(program=("mkdir", "-p", *paths), nodes=cfg.nodes, on=KEPT, time_limit_s=60, label=False)
    )
    lines.append(b.shell_line(mkdir))
    io_p = storage_profile(cfg)
    io = b.io_argv(
        b.IoCommand(
            profile=io_p,
            out="$OUT",
            paths=paths,
            stoker=cfg.stoker,
            writers=cfg.gpus_per_node or None,  # one per GPU, as `stoker run`
            spec=cfg.spec,  # a figure under the spec's storage promise is measured again, as `stoker run`
        )
    )
    cmd = _srun(cfg, io, 1, io_p.io_timeout_s, mpi=False)
    lines.append(b.shell_line(["phase", "storage", str(io_p.io_timeout_s + PHASE_GRACE_S), *cmd]))
    if cfg.local_path is None:  # our own per-node dir; rmdir leaves it if anything is left in it
        rmdir = b.srun(
            b.SrunSpec(program=("rmdir", "$LOCAL_IO"), nodes=cfg.nodes, on=KEPT, time_limit_s=60, label=False)
        )
        lines.append(b.shell_line(rmdir) + " 2>/dev/null")
    return lines


def _soak_line(cfg: SbatchConfig) -> str:
    """A soak: every scope of the acceptance in one `stoker net --soak` (the ranks stay up,
    the counters are read on every node between passes) at the plateau sizes. scancel's
    SIGTERM lets the pass in flight end; every finished pass is in the records."""
    scopes = tuple(s for _, group in net_phases(cfg) for s in group)
    net = b.net_argv(
        b.NetCommand(
            profile=plateau(cfg.profile), out="$OUT", scopes=scopes, backend=cfg.backend, stoker=cfg.stoker
        )
    )
    limit = (cfg.soak_s or 0) + cfg.profile.net_timeout_s  # the last pass may start just before the end
    cmd = _srun(cfg, [*net, "--soak", str(cfg.soak_s)], cfg.ranks_per_node, limit, mpi=True)
    return b.shell_line(["phase", "soak", str(limit + PHASE_GRACE_S), *cmd])


def _sbatch_options(cfg: SbatchConfig) -> list[str]:
    # bash reads #SBATCH lines as comments and sbatch reads them with its own rules: values
    # are checked against Slurm's shapes, so none can end the line or add an option
    name = q.matching(cfg.job_name, q.NAME, "--job-name", "a job name (letters, digits, . _ -)")
    opts = [f"--job-name={name}", f"--nodes={cfg.nodes}", f"--ntasks-per-node={cfg.ranks_per_node}"]
    opts.append("--mem=0")  # all of each node's memory: the storage and host-copy tests need it
    if cfg.gpus_per_node:
        opts.append(f"--gpus-per-node={cfg.gpus_per_node}")
    if cfg.partition:
        part = q.matching(
            cfg.partition,
            q.PARTITION,
            "--partition",
            "a Slurm partition name (letters, digits, . _ -, comma-separated)",
        )
        opts.append(f"--partition={part}")
    for field, _ in PASSTHROUGH:
        value = getattr(cfg, field)
        if value is not None:
            option = f"--{field}"
            opts.append(
                f"{option}={q.matching(value, q.SLURM_NAME, option, 'one Slurm name (letters, digits, . _ -)')}"
            )
    time = (
        q.matching(
            cfg.time, q.SLURM_TIME, "--time", "a Slurm time limit (M, M:S, H:M:S, D-H, D-H:M or D-H:M:S)"
        )
        if cfg.time
        else job_time(cfg)
    )
    opts += [
        f"--time={time}",
        f"--output={_sbatch_value(q.plain(cfg.log, 'the job log name'))}",
        "--exclusive",
    ]
    return [f"#SBATCH {o}" for o in opts]


def _sbatch_value(text: str) -> str:
    """sbatch reads #SBATCH values with its own quoting: double quotes around blanks."""
    return f'"{text}"' if any(c.isspace() for c in text) else text


def _size(text: str, what: str) -> str:
    return q.matching(text, q.SIZE, what, "a size such as 64M or 1G")


def _default_or(path: str | None, default: str) -> str:
    """A given path, quoted; or a bash expression evaluated on each node."""
    return q.word(path, "a storage path") if path else default


def fabric_exports(fabric: str | None) -> str:
    """The fabric's rank variables (launchers/cloud/fabrics.py), as the k8s jobs set them; a value
    already in the environment the job was submitted from wins."""
    if fabric is None:
        return "# no --fabric: NCCL and libfabric choose their transport themselves"
    return "\n".join(f'export {k}="${{{k}:-{v}}}"' for k, v in FABRICS[fabric].env)


def render(cfg: SbatchConfig, template: str | None = None) -> str:
    p = cfg.profile
    report = b.report_argv(
        b.ReportCommand(
            out="$OUT",
            spec=cfg.spec,
            workload=cfg.workload,
            stoker=cfg.stoker,
            fail_unjudged=not cfg.allow_unjudged,
        )
    )
    shared_check = b.srun(
        b.SrunSpec(program=("test", "-s", "$MARK"), nodes=cfg.nodes, time_limit_s=60, label=False)
    )
    phases = _phase_lines(cfg)
    check = b.srun(
        pyxis.in_image(
            cfg.image,
            b.SrunSpec(
                program=(*cfg.stoker, "fingerprint"), nodes=cfg.nodes, on=KEPT, time_limit_s=60, label=False
            ),
        )
    )
    # every node at once, each on its own: its output kept as OUT/preflight/NODE.log
    preflight = b.srun(
        pyxis.in_image(
            cfg.image,
            b.SrunSpec(
                program=tuple(
                    b.preflight_argv(
                        b.PreflightCommand(
                            paths=("$LOCAL_IO", "$SHARED_IO", *cfg.more_local, *cfg.more_shared),
                            gpus=cfg.gpus_per_node,
                            spec=cfg.spec,
                            stoker=cfg.stoker,
                        )
                    )
                ),
                nodes=cfg.nodes,
                time_limit_s=b.PREFLIGHT_LIMIT_S,
                label=False,
                kill_on_bad_exit=False,
                output="$OUT/preflight/%N.log",
            ),
        )
    )
    # a mount's source must exist on the node before the step that mounts it starts
    mount_dirs = b.srun(
        b.SrunSpec(
            program=("mkdir", "-p", "$LOCAL_IO", "$SHARED_IO", *cfg.more_local, *cfg.more_shared),
            nodes=cfg.nodes,
            time_limit_s=60,
            label=False,
            kill_on_bad_exit=False,
        )
    )
    before = [b.shell_line(mount_dirs) + " || true"] if cfg.image else []
    values = {
        "expected": "\n".join(f"# {x}" for x in summary_lines(model(cfg))),
        "job_env": "\n".join([fabric_exports(cfg.fabric), *pyxis.script_lines(cfg.image, mounts(cfg))]),
        "stoker_check": b.shell_line(check),
        "preflight": "\n".join([*before, b.shell_line(preflight)]),
        "set_aside": b.shell_line(pyxis.on_first(cfg.image, [*cfg.stoker, "set-aside"])),
        "min_nodes": str(min_nodes(cfg)),
        "ranks": str(cfg.ranks_per_node),
        "sbatch_options": "\n".join(_sbatch_options(cfg)),
        # the profile's values land in a comment line too: names and sizes, nothing else
        "profile": q.matching(p.name, q.NAME, "--profile", "a profile name"),
        "ops": q.matching(",".join(p.ops), q.NAMES, "--ops", "comma-separated op names"),
        "min_bytes": _size(p.min_bytes, "--min-bytes"),
        "max_bytes": _size(p.max_bytes, "--max-bytes"),
        "step_factor": str(p.step_factor),
        "iters": str(p.iters),
        "workloads": q.matching(
            ",".join(p.workloads), q.NAMES, "--workloads", "comma-separated workload names"
        ),
        "ckpt_bytes": _size(p.ckpt_bytes, "--ckpt-bytes"),
        "io_runtime_s": str(p.io_runtime_s),
        "out": q.word(cfg.out, "--out"),
        "local_path": _default_or(cfg.local_path, '"${TMPDIR:-/tmp}/stoker-io-$SLURM_JOB_ID"'),
        "shared_path": _default_or(cfg.shared_path, '"$OUT/io-scratch"'),
        "nodes": str(cfg.nodes),
        "shared_check": b.shell_line(shared_check),
        "phase_count": str(sum(line.startswith(("phase ", "across ")) for line in phases) + 1),
        "phases": "\n".join(phases),
        "report": b.shell_line(
            ["timeout", "--kill-after=30", str(p.report_timeout_s), *pyxis.on_first(cfg.image, report)]
        ),
        "record_phase": b.shell_line(pyxis.on_first(cfg.image, [*cfg.stoker, "phase-record"])),
    }

    def fill(m: re.Match[str]) -> str:
        return values[m.group(1)]

    return _PLACEHOLDER.sub(fill, template_text() if template is None else template)


def mounts(cfg: SbatchConfig) -> pyxis.Mounts:
    """What a step in --image mounts: the results dir and every storage path of the job."""
    return pyxis.Mounts(
        out=cfg.out,
        local_path=cfg.local_path,
        shared_path=cfg.shared_path,
        more=(*cfg.more_local, *cfg.more_shared),
    )
