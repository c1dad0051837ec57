"""Render launchers/slurm/acceptance.sbatch from a dataclass (pure: template text in,
script text out; the golden tests compare the result line by line). The phases, their
commands and limits are the job's plan (launchers/plan.py), made once per render; this module
adds Slurm's part: srun steps on the nodes the preflight kept, their graces, #SBATCH lines."""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

from launchers import builders as b
from launchers import quoting as q
from launchers.cloud.fabrics import FABRICS
from launchers.plan import PHASE_GRACE_S, JobOptions, JobPlan, PlannedPhase, job_plan, summary_lines
from launchers.profiles import Profile
from launchers.slurm import pyxis
from reports.shared.errors import UsageError

# What the rendered script holds past a phase's one limit (the plan's, stoker's own
# --timeout, which fires first): srun's --time SRUN_GRACE_S past it (Slurm kills on whole
# minutes), the `timeout` around the step PHASE_GRACE_S past it (launchers/plan.py), last.
SRUN_GRACE_S = 60
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
# around each phase line: `phase` returns 1 when the phase lost a node and runs again
AGAIN_LOOP = ("until ", "; do :; done")
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


def options(cfg: SbatchConfig) -> JobOptions:
    """What the job's plan is made from: the script's own variables for the results dir and
    the first local and shared paths."""
    return JobOptions(
        profile=cfg.profile,
        nodes=cfg.nodes,
        gpus_per_node=cfg.gpus_per_node,
        ranks_per_node=cfg.ranks_per_node,
        stoker=cfg.stoker,
        backend=cfg.backend,
        spec=cfg.spec,
        workload=cfg.workload,
        fail_unjudged=not cfg.allow_unjudged,
        more_local=cfg.more_local,
        more_shared=cfg.more_shared,
        local_GBps=cfg.local_GBps,
        shared_GBps=cfg.shared_GBps,
        soak_s=cfg.soak_s,
    )


def plan_of(cfg: SbatchConfig) -> JobPlan:
    return job_plan(options(cfg))


def min_nodes(cfg: SbatchConfig) -> int:
    """The fewest nodes the job goes on with after the preflight (--min-nodes)."""
    if cfg.min_nodes is not None:
        if not 1 <= cfg.min_nodes <= cfg.nodes:
            raise UsageError(f"--min-nodes {cfg.min_nodes}: give 1 to --nodes ({cfg.nodes})")
        return cfg.min_nodes
    return min(2, cfg.nodes)


def template_text() -> str:
    return resources.files("launchers").joinpath("slurm/acceptance.sbatch").read_text(encoding="utf-8")


def job_time(plan: JobPlan) -> str:
    """The job's --time: every phase at its limit, plus a margin (the plan's); as H:MM:SS."""
    secs = plan.job_limit_s
    return f"{secs // 3600}:{secs % 3600 // 60:02d}:{secs % 60:02d}"


def _srun(cfg: SbatchConfig, ph: PlannedPhase) -> list[str]:
    """One phase's step: a rank per GPU gets its share of the node's CPUs ($CPT) bound as
    cores; a task per node gets every CPU of the node. Every step runs on the nodes the
    preflight kept ($GOOD, $NN of them). No --gpu-bind: a per-task GPU binding hides the
    other ranks' GPUs from each task and breaks CUDA IPC / P2P between them (NCCL falls off
    NVLink); every rank sees the node's GPUs and takes the one of its local rank."""
    ranks = ph.tasks == "rank"  # the sweeps' steps: one rank per GPU
    bind = ("--cpu-bind=cores",) if ranks and cfg.gpus_per_node else ()
    return b.srun(
        pyxis.in_image(
            cfg.image,
            b.SrunSpec(
                program=ph.argv,
                nodes=cfg.nodes,
                on=KEPT_RANKS if ranks else KEPT,
                ntasks_per_node=cfg.ranks_per_node if ranks else 1,
                time_limit_s=ph.limit_s + SRUN_GRACE_S,
                mpi="pmix" if ranks and cfg.backend == "mpi" else None,
                cpus_per_task="$CPT" if ranks else "$NODE_CPUS",
                bind=bind,
            ),
        )
    )


def _on_kept(cfg: SbatchConfig, program: tuple[str, ...]) -> list[str]:
    """A plain step on every node kept (mkdir, rmdir): a minute, no labels."""
    return b.srun(b.SrunSpec(program=program, nodes=cfg.nodes, on=KEPT, time_limit_s=60, label=False))


def _phase_lines(cfg: SbatchConfig, plan: JobPlan) -> list[str]:
    """The steps between the preflight and the report, each under `phase` (or `across`,
    skipped with one node left) at its limit and the grace past it, as `until phase ...; do
    :; done`: a phase that lost a node asks to run again, its step expanded on the nodes left."""
    lines = []
    for ph in plan.run_phases():
        if ph.name in ("preflight", "report"):  # their own placeholders
            continue
        if ph.dirs:
            lines.append(b.shell_line(_on_kept(cfg, ("mkdir", "-p", *ph.dirs))))
        runner = "across" if ph.across else "phase"
        step = b.shell_line([runner, ph.name, str(ph.limit_s + PHASE_GRACE_S), *_srun(cfg, ph)])
        lines.append(f"{AGAIN_LOOP[0]}{step}{AGAIN_LOOP[1]}")
    if cfg.local_path is None:  # our own per-node dir; rmdir leaves it if anything is left in it
        lines.append(b.shell_line(_on_kept(cfg, ("rmdir", "$LOCAL_IO"))) + " 2>/dev/null")
    return lines


def _sbatch_options(cfg: SbatchConfig, plan: JobPlan) -> list[str]:
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
        else job_time(plan)
    )
    opts += [
        f"--time={time}",
        f"--output={_sbatch_value(q.plain(cfg.log, 'the job log name'))}",
        "--exclusive",
        # a node that fails mid-job is set aside and the job goes on (lost_step.py): without
        # this, Slurm ends the whole job with its node and no report is written
        "--no-kill",
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
    job = plan_of(cfg)
    shared_check = b.srun(
        b.SrunSpec(program=("test", "-s", "$MARK"), nodes=cfg.nodes, time_limit_s=60, label=False)
    )
    phases = _phase_lines(cfg, job)
    first = job.phase("preflight")
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
                program=first.argv,
                nodes=cfg.nodes,
                time_limit_s=first.limit_s,
                label=False,
                kill_on_bad_exit=False,
                output="$OUT/preflight/%N.log",
            ),
        )
    )
    # a mount's source must exist on the node before the step that mounts it starts
    mount_dirs = b.srun(
        b.SrunSpec(
            program=("mkdir", "-p", *job.options.paths),
            nodes=cfg.nodes,
            time_limit_s=60,
            label=False,
            kill_on_bad_exit=False,
        )
    )
    before = [b.shell_line(mount_dirs) + " || true"] if cfg.image else []
    values = {
        "expected": "\n".join(f"# {x}" for x in summary_lines(job)),
        "job_env": "\n".join([fabric_exports(cfg.fabric), *pyxis.script_lines(cfg.image, mounts(cfg))]),
        "stoker_check": b.shell_line(check),
        "preflight": "\n".join([*before, b.shell_line(preflight)]),
        "set_aside": b.shell_line(pyxis.on_first(cfg.image, [*cfg.stoker, "set-aside"])),
        "min_nodes": str(min_nodes(cfg)),
        "ranks": str(cfg.ranks_per_node),
        "sbatch_options": "\n".join(_sbatch_options(cfg, job)),
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
        "phase_count": str(sum(line.startswith(AGAIN_LOOP[0]) for line in phases) + 1),
        "phases": "\n".join(phases),
        "report": b.shell_line(
            [
                "timeout",
                "--kill-after=30",
                str(job.limit_of("report")),
                *pyxis.on_first(cfg.image, list(job.phase("report").argv)),
            ]
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
