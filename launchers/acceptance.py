"""The acceptance job's phases, in order, for every launcher that runs the whole job (the
sbatch job, launchers/torchrun.sh and with it the Kubernetes, SkyPilot and dstack jobs,
launchers/mpirun.sh): reports/shared/phases.py's list at this stoker's GROUPS_ABOVE_NODES, and the
job's time limit. Pure."""

from __future__ import annotations

from launchers.duration import Job, plan
from launchers.profiles import GROUPS_ABOVE_NODES, Profile
from reports.shared import phases

# What a rendered job may hold beyond the profile's own limits: each phase's outer limit
# sits PHASE_GRACE_S past stoker's own --timeout, the whole job JOB_MARGIN_S past them all.
PHASE_GRACE_S = 120
JOB_MARGIN_S = 300
CPU_WRITERS = 8  # checkpoint writers of a node without GPUs, at most (iobench default_procs' ceiling)


def net_phases(nodes: int) -> list[tuple[str, tuple[str, ...]]]:
    """(phase name, scopes) in the contract's order; one node has no inter-node phases, and
    above GROUPS_ABOVE_NODES nodes the groups search replaces the pair tournament. Before
    them comes the node inventory; after them `storage` and, on the first node, the report."""
    return [(k.name, k.scopes) for k in phases.net_phases(nodes, GROUPS_ABOVE_NODES)]


def job_plan(profile: Profile, nodes: int, *, ranks_per_node: int, gpus_per_node: int) -> Job:
    """The duration model's view of a job: one checkpoint writer per GPU (CPU_WRITERS without)."""
    return Job(
        profile=profile,
        nodes=nodes,
        ranks_per_node=ranks_per_node,
        gpus_per_node=gpus_per_node,
        writers=gpus_per_node or CPU_WRITERS,
    )


def job_limit_s(profile: Profile, nodes: int, *, ranks_per_node: int = 2, gpus_per_node: int = 0) -> int:
    """The whole job's limit: every phase at its outer limit (launchers/duration.py: the
    profile's, longer as the nodes grow), the report, and a margin."""
    job = job_plan(profile, nodes, ranks_per_node=ranks_per_node, gpus_per_node=gpus_per_node)
    secs = sum(ph.limit_s + PHASE_GRACE_S for ph in plan(job) if ph.name != "report")
    return secs + profile.report_timeout_s + JOB_MARGIN_S
