"""The acceptance job's phases, in order, for every launcher that runs the whole job (the
sbatch job, launchers/torchrun.sh and with it the Kubernetes, SkyPilot and dstack jobs,
launchers/mpirun.sh): reports/phases.py's list at this stoker's GROUPS_ABOVE_NODES, and the
job's time limit. Pure."""

from __future__ import annotations

from launchers.builders import INVENTORY_LIMIT_S, compute_limit_s
from launchers.profiles import GROUPS_ABOVE_NODES, Profile
from reports import phases

# What a rendered job may hold beyond the profile's own limits: each phase's outer limit
# sits PHASE_GRACE_S past stoker's own --timeout, the whole job JOB_MARGIN_S past them all.
PHASE_GRACE_S = 120
JOB_MARGIN_S = 300


def net_phases(nodes: int) -> list[tuple[str, tuple[str, ...]]]:
    """(phase name, scopes) in the contract's order; one node has no inter-node phases, and
    above GROUPS_ABOVE_NODES nodes the groups search replaces the pair tournament. Before
    them comes the node inventory; after them `storage` and, on the first node, the report."""
    return [(k.name, k.scopes) for k in phases.net_phases(nodes, GROUPS_ABOVE_NODES)]


def job_limit_s(profile: Profile, nodes: int) -> int:
    """The whole job's limit: every phase at its outer limit, the report, and a margin."""
    secs = INVENTORY_LIMIT_S + PHASE_GRACE_S  # the node inventory, first
    secs += (
        compute_limit_s(profile.name, profile.compute_budget_s) + PHASE_GRACE_S
    )  # then the matmul appetite
    secs += len(net_phases(nodes)) * (profile.net_timeout_s + PHASE_GRACE_S)
    secs += profile.io_timeout_s + PHASE_GRACE_S
    return secs + profile.report_timeout_s + JOB_MARGIN_S
