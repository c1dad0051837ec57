"""How long the acceptance job should take at N nodes, phase by phase, and the limit each
phase gets from that: one pure model over the job's sizes. launchers/plan.py computes those
sizes once (the sweep's message sizes, the checkpoint shard per writer, the writers, the
paths) and builds the job's plan from this model's answer; `stoker submit` prints it, the
rendered jobs take their limits from it, and docs/launchers.md tabulates it.

A phase's expected time is a start-up (srun, python and torch import, communicator set-up,
growing with the world) plus the bytes its sweeps move at an assumed bus bandwidth. The
network figures are estimates for 8 x H100 nodes with NVLink and 8 x 400 Gb/s rails (no GPU
was available to measure them); the CPU figures (gloo) are the ones measured on the
two-node Slurm bed of the tests (docs/launchers.md). A phase's limit is the profile's own
(sized for BASE_NODES nodes) plus LIMIT_FACTOR times what the model expects beyond its
BASE_NODES-node time, and at least 1.5 times the expected time: a two-node job keeps the
profile's limits, a larger one gets room in proportion to what it adds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from launchers.builders import INVENTORY_LIMIT_S, PREFLIGHT_LIMIT_S, compute_limit_s
from launchers.profiles import GROUPS_ABOVE_NODES, SAVE_REPEATS, Profile
from reports.shared import phases
from reports.shared.group_search import Sizes, estimate

LIMIT_FACTOR = 2  # a phase's limit: the profile's, plus twice the time the model adds past 2 nodes
BASE_NODES = 2  # the node count the profiles' limits are sized for
IO_RAMP_S = 1  # iobench.workloads.RAMP_S: each timed storage workload's ramp
SAVE_KINDS = ("torch.save", "torch.dcp")  # iobench.torch_ckpt.BACKENDS
# a node's preflight past its start-up: stoker check's inventory and short local collective,
# 14 s alone on the 2-core development machine, 19 s three at once on the torchrun bed
PREFLIGHT_CHECK_S = 15
REPORT_EXPECTED_S = 10


@dataclass(frozen=True, kw_only=True, slots=True)
class Rates:
    """What one backend's phases cost; `source` says where each number comes from."""

    startup_s: float  # one phase's start at 2 nodes: srun, imports, communicator set-up
    startup_per_node_s: float  # communicator bootstrap grows with the nodes
    intra_busbw_GBps: float  # among one node's ranks
    inter_busbw_GBps: float  # one rail across nodes (also a pair's busbw)
    io_fixed_s: float  # one storage path besides its timed runs and shards: metadata, set-up
    local_GBps: float  # one node's local disk (when the spec promises none)
    shared_GBps: float  # the shared file system, all nodes together (when the spec promises none)
    source: str


RATES = {
    "gpu": Rates(
        startup_s=20.0,
        startup_per_node_s=0.1,
        intra_busbw_GBps=360.0,
        inter_busbw_GBps=40.0,
        io_fixed_s=30.0,
        local_GBps=6.0,
        shared_GBps=20.0,
        source="estimate for 8 x H100 NVLink nodes, 8 x 400 Gb/s rails (40 GB/s each, as docs/localisation.md)",
    ),
    "cpu": Rates(
        startup_s=13.0,
        startup_per_node_s=0.0,
        intra_busbw_GBps=1.0,
        inter_busbw_GBps=1.0,
        io_fixed_s=30.0,
        local_GBps=1.0,
        shared_GBps=1.0,
        source="measured on the two-node Slurm bed: phases of 13-15 s, storage 76 s for two paths",
    ),
}


def rates(gpus_per_node: int) -> Rates:
    """The figures the model assumes: the GPU estimate with GPUs, the CPU bed's without."""
    return RATES["gpu" if gpus_per_node else "cpu"]


@dataclass(frozen=True, kw_only=True, slots=True)
class JobSizes:
    """What the model reads of a job, computed once by launchers/plan.py: the profile for its
    ops, iterations, runtimes and limits, and the sizes derived from it and the job."""

    profile: Profile
    nodes: int
    ranks_per_node: int
    gpus_per_node: int
    writers: int  # checkpoint writers per node
    message_bytes: tuple[int, ...]  # every size one op of a sweep moves, smallest first
    max_bytes: int  # --max-bytes: a pair's or a group's one size
    shard_bytes: int  # the checkpoint shard per writer at these nodes (within the shared cap)
    local_paths: int = 1
    shared_paths: int = 1
    local_GBps: float | None = None  # the spec's promise, when it makes one
    shared_GBps: float | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class Estimate:
    name: str
    expected_s: int
    limit_s: int  # stoker's own --timeout for the phase (launchers add their grace)


def sweep_s(job: JobSizes, busbw_GBps: float) -> float:
    """One group's sweep: every op, every size, warmup and timed iterations, each moving
    twice its buffer through the bus (all_reduce's factor, an upper bound for the others)."""
    p = job.profile
    per_op = sum(2 * s for s in job.message_bytes) / (busbw_GBps * 1e9)
    return len(p.ops) * (p.iters + p.warmup) * per_op


def _startup(r: Rates, nodes: int) -> float:
    return r.startup_s + r.startup_per_node_s * nodes


def _net_expected(name: str, job: JobSizes, r: Rates) -> float:
    p, n = job.profile, job.nodes
    if name == "intra-node":
        return _startup(r, n) + sweep_s(job, r.intra_busbw_GBps)
    if name == "inter-node":  # the world, then one group per rail
        return _startup(r, n) + (1 + job.ranks_per_node) * sweep_s(job, r.inter_busbw_GBps)
    sizes = Sizes(bytes=job.max_bytes, iters=p.iters, warmup=p.warmup, busbw_GBps=r.inter_busbw_GBps)
    est = estimate(n, sizes)
    minutes = est["group_min"] if name == "groups" else est["round_robin_min"]
    return _startup(r, n) + 60 * minutes


def node_bytes(writers: int, shard: int, save_repeats: int = SAVE_REPEATS) -> float:
    """What one node writes and reads on a path: fio's writers write and read their shards
    (2 x writers x shard); each save kind (torch.save, DCP) saves `save_repeats` times half a
    shard then a whole one (1.5 shards), by one process, then by `writers` at once."""
    return 2 * writers * shard + len(SAVE_KINDS) * save_repeats * 1.5 * (1 + writers) * shard


def _io_expected(job: JobSizes, r: Rates) -> float:
    """Every path one after the other: fixed cost, two timed runs (checkpoint, dataloader)
    with their ramps, and the shards written and read (node_bytes)."""
    p = job.profile
    shard = job.shard_bytes
    local_bw = job.local_GBps or r.local_GBps
    shared_bw = job.shared_GBps or r.shared_GBps
    per_path = r.io_fixed_s + 2 * (IO_RAMP_S + p.io_runtime_s)
    written = node_bytes(job.writers, shard, p.save_repeats)
    local = job.local_paths * (per_path + written / (local_bw * 1e9))
    shared = job.shared_paths * (per_path + job.nodes * written / (shared_bw * 1e9))
    return local + shared


def _limit(expected: float, at_base: float, floor: int) -> int:
    """The profile's limit plus twice what N nodes add, and never under 1.5 x the expected
    time (a profile too big for its hardware, standard on CPUs, still gets room to finish)."""
    return max(floor + math.ceil(LIMIT_FACTOR * max(0.0, expected - at_base)), math.ceil(1.5 * expected))


def estimates(job: JobSizes, base: JobSizes) -> list[Estimate]:
    """Every phase of the acceptance job at this N, in order, with its expected time and
    limit; `base` is the same job at BASE_NODES nodes, the size the profiles' limits are for."""
    r = rates(job.gpus_per_node)
    p = job.profile
    compute = compute_limit_s(p.name, p.compute_budget_s)
    out = [
        # every node at once, each on its own: no communicator, so no growth with N
        Estimate(
            name="preflight",
            expected_s=math.ceil(_startup(r, 0) + PREFLIGHT_CHECK_S),
            limit_s=PREFLIGHT_LIMIT_S,
        ),
        Estimate(name="inventory", expected_s=math.ceil(_startup(r, 0)), limit_s=INVENTORY_LIMIT_S),
        Estimate(name="compute", expected_s=math.ceil(compute - 60 - 120 + r.startup_s), limit_s=compute),
    ]
    for kind in phases.net_phases(job.nodes, GROUPS_ABOVE_NODES):
        e = _net_expected(kind.name, job, r)
        # the base of every net phase is the pair tournament's at two nodes: the groups search
        # above 64 nodes replaces the pairs phase, and is compared with what it replaces
        b = _net_expected("pairs" if kind.name == "groups" else kind.name, base, r)
        out.append(Estimate(name=kind.name, expected_s=math.ceil(e), limit_s=_limit(e, b, p.net_timeout_s)))
    e = _io_expected(job, r)
    b = _io_expected(base, r)
    out.append(Estimate(name="storage", expected_s=math.ceil(e), limit_s=_limit(e, b, p.io_timeout_s)))
    out.append(Estimate(name="report", expected_s=REPORT_EXPECTED_S, limit_s=p.report_timeout_s))
    return out
