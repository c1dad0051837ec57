"""The acceptance job as one plan: its phases in order, each with its stoker command, its one
limit, its expected time and what it needs, made once from the submit options by `job_plan`.
The sbatch job (launchers/slurm/sbatch.py), the Kubernetes, SkyPilot and dstack jobs
(launchers/cloud/cloudjob.py: their deadline and shard) and the shell launchers
(launchers/local/argv.py: the phase list and limits torchrun.sh and mpirun.sh read) render it;
none of them derives a size, a limit or the phase list again. Pure.

The phases are reports/shared/phases.py's list at this stoker's GROUPS_ABOVE_NODES, with the
preflight before them: one node has no inter-node phases, and above GROUPS_ABOVE_NODES nodes
the groups search replaces the pair tournament. Each phase's limit is stoker's own (its
--timeout, where it takes one) from the duration model (launchers/duration.py); a launcher adds
its grace past it (the sbatch job: SRUN_GRACE_S for srun's --time, PHASE_GRACE_S for the
`timeout` around the step) so that stoker ends first and says why.

The storage phase writes nodes x writers x --ckpt-bytes into a shared file system; above
SHARED_CAP_BYTES the shard per writer shrinks (never below MIN_SHARD_BYTES) so that one
acceptance does not fill, or spend an hour on, the file system it judges.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from launchers import builders as b
from launchers.duration import BASE_NODES, JobSizes, estimates, rates
from launchers.profiles import GROUPS_ABOVE_NODES, Profile, plateau
from reports.shared import phases
from reports.shared.units import parse_size

# What a rendered job may hold beyond the plan's limits: each phase's outer limit sits
# PHASE_GRACE_S past stoker's own, the whole job JOB_MARGIN_S past them all.
PHASE_GRACE_S = 120
JOB_MARGIN_S = 300
CPU_RANKS = 2  # ranks per node without GPUs (gloo)
CPU_WRITERS = 8  # checkpoint writers of a node without GPUs, at most (iobench default_procs' ceiling)
SHARED_CAP_BYTES = 1 << 40  # checkpoint shards written into one shared file system: 1 TiB
MIN_SHARD_BYTES = 64 << 20  # below 64 MiB per writer a checkpoint test says little
ACROSS = ("inter-node", "pairs", "groups")  # phases between nodes: nothing to measure on one

# how a phase's step runs: one task per node (it reads or writes the node itself) or one per
# rank (a communicator across the ranks: the sweeps)
Tasks = Literal["node", "rank"]


@dataclass(frozen=True, kw_only=True, slots=True)
class JobOptions:
    """What the plan is made from: the profile, the job's shape and where its phases write.
    Paths and the results dir may be the rendered script's variables ("$OUT", "$LOCAL_IO")."""

    profile: Profile
    nodes: int
    gpus_per_node: int = 0  # 0: CPU ranks (gloo)
    ranks_per_node: int | None = None  # None: one per GPU, CPU_RANKS without
    writers: int | None = None  # checkpoint writers per node; None: one per GPU, CPU_WRITERS without
    out: str = "$OUT"
    stoker: tuple[str, ...] = b.STOKER
    backend: str = "auto"
    spec: str | None = None
    workload: str | None = None
    fail_unjudged: bool = True  # the acceptance job: nothing judged is no acceptance
    local_path: str = "$LOCAL_IO"  # a node's own disk
    shared_path: str = "$SHARED_IO"  # the file system all nodes share
    # the spec's further storage promises, each measured too
    more_local: tuple[str, ...] = ()
    more_shared: tuple[str, ...] = ()
    local_GBps: float | None = None  # the spec's write promises: the model's storage rates where given
    shared_GBps: float | None = None
    soak_s: int | None = None  # a burn-in: one network phase of soak passes this long replaces the sweeps

    @property
    def ranks(self) -> int:
        return self.ranks_per_node or self.gpus_per_node or CPU_RANKS

    @property
    def writers_per_node(self) -> int:
        return self.writers or self.gpus_per_node or CPU_WRITERS

    @property
    def paths(self) -> tuple[str, ...]:
        """Every storage path, in the order the phases take them."""
        return (self.local_path, self.shared_path, *self.more_local, *self.more_shared)


@dataclass(frozen=True, kw_only=True, slots=True)
class PlannedPhase:
    name: str  # reports/shared/phases.py's name, or preflight / soak
    argv: tuple[str, ...]  # the stoker command of one task
    limit_s: int  # stoker's own limit for the phase; each launcher adds its grace past it
    expected_s: int  # the duration model's expectation
    tasks: Tasks
    scopes: tuple[str, ...] = ()  # a network phase's `stoker net --scopes`
    across: bool = False  # needs two nodes: skipped when one is left
    dirs: tuple[str, ...] = ()  # directories that must exist on every node before it starts


@dataclass(frozen=True, kw_only=True, slots=True)
class JobPlan:
    options: JobOptions
    sizes: JobSizes  # what the duration model read
    ckpt_bytes: str  # --ckpt-bytes of the storage phase: the profile's, or the shard within the cap
    # preflight, inventory, compute, the network phases, storage, report: what the model expects
    phases: tuple[PlannedPhase, ...]
    soak: PlannedPhase | None  # when set, run in place of the network phases
    job_limit_s: int  # the whole job: every phase at its outer limit, the report, a margin

    def phase(self, name: str) -> PlannedPhase:
        return next(ph for ph in self.phases if ph.name == name)

    def limit_of(self, name: str) -> int:
        return self.phase(name).limit_s

    @property
    def net(self) -> tuple[PlannedPhase, ...]:
        return tuple(ph for ph in self.phases if ph.tasks == "rank")

    def run_phases(self) -> tuple[PlannedPhase, ...]:
        """The phases as they run, in order: with a soak, its one phase in place of the sweeps."""
        if self.soak is None:
            return self.phases
        first = self.phases.index(self.net[0])
        rest = tuple(ph for ph in self.phases if ph.tasks != "rank")
        return (*rest[:first], self.soak, *rest[first:])


def net_phases(nodes: int) -> list[tuple[str, tuple[str, ...]]]:
    """(phase name, scopes) of the network phases, in the contract's order."""
    return [(k.name, k.scopes) for k in phases.net_phases(nodes, GROUPS_ABOVE_NODES)]


def message_bytes(profile: Profile) -> tuple[int, ...]:
    """Every size of a sweep: --min-bytes, times --step-factor (at least 2), up to --max-bytes."""
    low = parse_size(profile.min_bytes, "--min-bytes")
    high = parse_size(profile.max_bytes, "--max-bytes")
    out, s = [], max(1, low)
    while s <= high:
        out.append(s)
        s *= max(2, profile.step_factor)
    return tuple(out)


def shard_bytes(profile: Profile, nodes: int, writers: int) -> int:
    """The checkpoint shard per writer: the profile's, or less so that nodes x writers x
    shard stays within SHARED_CAP_BYTES (whole MiB, at least MIN_SHARD_BYTES)."""
    want = parse_size(profile.ckpt_bytes, "--ckpt-bytes")
    fit = SHARED_CAP_BYTES // max(1, nodes * writers) >> 20 << 20
    return max(min(want, fit), min(want, MIN_SHARD_BYTES))


def job_sizes(o: JobOptions, nodes: int) -> JobSizes:
    """The sizes the duration model reads, for the job on `nodes` nodes."""
    p, writers = o.profile, o.writers_per_node
    return JobSizes(
        profile=p,
        nodes=nodes,
        ranks_per_node=o.ranks,
        gpus_per_node=o.gpus_per_node,
        writers=writers,
        message_bytes=message_bytes(p),
        max_bytes=parse_size(p.max_bytes, "--max-bytes"),
        shard_bytes=shard_bytes(p, nodes, writers),
        local_paths=1 + len(o.more_local),
        shared_paths=1 + len(o.more_shared),
        local_GBps=o.local_GBps,
        shared_GBps=o.shared_GBps,
    )


def _phase_argv(o: JobOptions, name: str, scopes: tuple[str, ...], limit_s: int, ckpt: str) -> list[str]:
    p = o.profile
    if name == "preflight":
        return b.preflight_argv(
            b.PreflightCommand(paths=o.paths, gpus=o.gpus_per_node, spec=o.spec, stoker=o.stoker)
        )
    if name == "inventory":
        return b.inventory_argv(b.InventoryCommand(out=o.out, stoker=o.stoker))
    if name == "compute":  # one task per node; stoker compute starts one process per GPU itself
        return b.compute_argv(
            b.ComputeCommand(out=o.out, profile=p.name, budget_s=p.compute_budget_s, stoker=o.stoker)
        )
    if name == "storage":
        return b.io_argv(
            b.IoCommand(
                profile=replace(p, io_timeout_s=limit_s, ckpt_bytes=ckpt),
                out=o.out,
                paths=o.paths,
                stoker=o.stoker,
                writers=o.gpus_per_node or None,  # one per GPU, as `stoker run`
                spec=o.spec,  # a figure under the spec's storage promise is measured again
            )
        )
    if name == "report":
        return b.report_argv(
            b.ReportCommand(
                out=o.out, spec=o.spec, workload=o.workload, stoker=o.stoker, fail_unjudged=o.fail_unjudged
            )
        )
    return b.net_argv(
        b.NetCommand(
            profile=replace(p, net_timeout_s=limit_s),
            out=o.out,
            scopes=scopes,
            backend=o.backend,
            stoker=o.stoker,
            spec=o.spec,  # a swept figure under the spec is measured again, as `stoker run`
        )
    )


def _soak(o: JobOptions, soak_s: int) -> PlannedPhase:
    """Every scope of the acceptance in one `stoker net --soak` (the ranks stay up, the
    counters are read on every node between passes) at the plateau sizes; the last pass
    may start just before the end, so the limit is the soak and one net phase's limit.
    SIGTERM (scancel) lets the pass in flight end; every finished pass is in the records."""
    scopes = tuple(s for _, group in net_phases(o.nodes) for s in group)
    net = b.net_argv(
        b.NetCommand(profile=plateau(o.profile), out=o.out, scopes=scopes, backend=o.backend, stoker=o.stoker)
    )
    return PlannedPhase(
        name="soak",
        argv=(*net, "--soak", str(soak_s)),
        limit_s=soak_s + o.profile.net_timeout_s,
        expected_s=soak_s,
        tasks="rank",
    )


def _job_limit_s(o: JobOptions) -> int:
    """Every phase but the report at its outer limit, the report, a margin, and the soak.
    The storage phase counts here as one local and one shared path at the model's own rates
    (what the cloud jobs and the shell launchers test), not the spec's further paths."""
    one_each = replace(o, more_local=(), more_shared=(), local_GBps=None, shared_GBps=None)
    est = estimates(job_sizes(one_each, o.nodes), job_sizes(one_each, BASE_NODES))
    secs = sum(e.limit_s + PHASE_GRACE_S for e in est if e.name != "report")
    return secs + o.profile.report_timeout_s + JOB_MARGIN_S + (o.soak_s or 0)


def job_plan(o: JobOptions) -> JobPlan:
    """The acceptance job's plan: every phase with its command, limit and expected time."""
    sizes = job_sizes(o, o.nodes)
    want = parse_size(o.profile.ckpt_bytes, "--ckpt-bytes")
    ckpt = o.profile.ckpt_bytes if sizes.shard_bytes >= want else f"{sizes.shard_bytes >> 20}M"
    scopes = dict(net_phases(o.nodes))
    planned = []
    for e in estimates(sizes, job_sizes(o, BASE_NODES)):
        planned.append(
            PlannedPhase(
                name=e.name,
                argv=tuple(_phase_argv(o, e.name, scopes.get(e.name, ()), e.limit_s, ckpt)),
                limit_s=e.limit_s,
                expected_s=e.expected_s,
                tasks="rank" if e.name in scopes else "node",
                scopes=scopes.get(e.name, ()),
                across=e.name in ACROSS,
                dirs=o.paths if e.name == "storage" else (),
            )
        )
    return JobPlan(
        options=o,
        sizes=sizes,
        ckpt_bytes=ckpt,
        phases=tuple(planned),
        soak=_soak(o, o.soak_s) if o.soak_s else None,
        job_limit_s=_job_limit_s(o),
    )


def _clock(secs: int) -> str:
    return f"{secs // 60}m{secs % 60:02d}s"


def summary_lines(plan: JobPlan) -> list[str]:
    """The plan as lines for a person: one per phase and the total, and the storage cap."""
    s, ph = plan.sizes, plan.phases
    lines = [
        f"expected duration at {s.nodes} node(s), profile {s.profile.name} ({rates(s.gpus_per_node).source}):"
    ]
    lines += [f"  {x.name:<10} ~{_clock(x.expected_s):>8}  (limit {_clock(x.limit_s)})" for x in ph]
    lines.append(f"  {'total':<10} ~{_clock(sum(x.expected_s for x in ph)):>8}")
    total = s.nodes * s.writers * s.shard_bytes
    lines.append(
        f"storage: {s.nodes} node(s) x {s.writers} writer(s) x {s.shard_bytes >> 20} MiB = "
        f"{total / (1 << 30):.0f} GiB of checkpoint shards into each shared file system "
        f"(cap {SHARED_CAP_BYTES >> 30} GiB)"
    )
    return lines
