"""How long the acceptance job should take at N nodes, phase by phase, and the limit each
phase gets from that: one pure model that `stoker submit` prints, the rendered jobs use for
their limits, and docs/launchers.md tabulates.

A phase's expected time is a start-up (srun, python and torch import, communicator set-up,
growing with the world) plus the bytes its sweeps move at an assumed bus bandwidth. The
network figures are estimates for 8 x H100 nodes with NVLink and 8 x 400 Gb/s rails (no GPU
was available to measure them); the CPU figures (gloo) are the ones measured on the
two-node Slurm bed of the tests (docs/launchers.md). A phase's limit is LIMIT_FACTOR times
A phase's limit is the profile's own (sized for two nodes) plus LIMIT_FACTOR times what the
model expects beyond its two-node time, and at least 1.5 times the expected time: a two-node
job keeps the profile's limits, a larger one gets room in proportion to what it adds.

The storage phase writes nodes x writers x --ckpt-bytes into a shared file system; above
SHARED_CAP_BYTES the shard per writer shrinks (never below MIN_SHARD_BYTES) so that one
acceptance does not fill, or spend an hour on, the file system it judges.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from launchers.builders import INVENTORY_LIMIT_S, PREFLIGHT_LIMIT_S, compute_limit_s
from launchers.profiles import GROUPS_ABOVE_NODES, Profile
from reports.shared import phases
from reports.shared.group_search import Sizes, estimate
from reports.shared.units import parse_size

LIMIT_FACTOR = 2  # a phase's limit: the profile's, plus twice the time the model adds past 2 nodes
BASE_NODES = 2  # the node count the profiles' limits are sized for
SHARED_CAP_BYTES = 1 << 40  # checkpoint shards written into one shared file system: 1 TiB
MIN_SHARD_BYTES = 64 << 20  # below 64 MiB per writer a checkpoint test says little
IO_RAMP_S = 1  # iobench.workloads.RAMP_S: each timed storage workload's ramp
# a node's preflight past its start-up: stoker check's inventory and short local collective,
# 14 s alone on the 2-core development machine, 19 s three at once on the torchrun bed
PREFLIGHT_CHECK_S = 15


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


@dataclass(frozen=True, kw_only=True, slots=True)
class Job:
    """What the model needs of a rendered job."""

    profile: Profile
    nodes: int
    ranks_per_node: int
    gpus_per_node: int
    writers: int  # checkpoint writers per node
    local_paths: int = 1
    shared_paths: int = 1
    local_GBps: float | None = None  # the spec's promise, when it makes one
    shared_GBps: float | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class Phase:
    name: str
    expected_s: int
    limit_s: int  # stoker's own --timeout for the phase (launchers add their grace)


def shard_bytes(profile: Profile, nodes: int, writers: int) -> int:
    """The checkpoint shard per writer: the profile's, or less so that nodes x writers x
    shard stays within SHARED_CAP_BYTES (whole MiB, at least MIN_SHARD_BYTES)."""
    want = parse_size(profile.ckpt_bytes, "--ckpt-bytes")
    fit = SHARED_CAP_BYTES // max(1, nodes * writers) >> 20 << 20
    return max(min(want, fit), min(want, MIN_SHARD_BYTES))


def _sizes(profile: Profile) -> list[int]:
    low = parse_size(profile.min_bytes, "--min-bytes")
    high = parse_size(profile.max_bytes, "--max-bytes")
    out, s = [], max(1, low)
    while s <= high:
        out.append(s)
        s *= max(2, profile.step_factor)
    return out


def sweep_s(profile: Profile, busbw_GBps: float) -> float:
    """One group's sweep: every op, every size, warmup and timed iterations, each moving
    twice its buffer through the bus (all_reduce's factor, an upper bound for the others)."""
    per_op = sum(2 * s for s in _sizes(profile)) / (busbw_GBps * 1e9)
    return len(profile.ops) * (profile.iters + profile.warmup) * per_op


def _startup(r: Rates, nodes: int) -> float:
    return r.startup_s + r.startup_per_node_s * nodes


def _net_expected(name: str, job: Job, r: Rates) -> float:
    p, n = job.profile, job.nodes
    if name == "intra-node":
        return _startup(r, n) + sweep_s(p, r.intra_busbw_GBps)
    if name == "inter-node":  # the world, then one group per rail
        return _startup(r, n) + (1 + job.ranks_per_node) * sweep_s(p, r.inter_busbw_GBps)
    sizes = Sizes(
        bytes=parse_size(p.max_bytes, "--max-bytes"),
        iters=p.iters,
        warmup=p.warmup,
        busbw_GBps=r.inter_busbw_GBps,
    )
    est = estimate(n, sizes)
    minutes = est["group_min"] if name == "groups" else est["round_robin_min"]
    return _startup(r, n) + 60 * minutes


def _io_expected(job: Job, r: Rates) -> float:
    """Every path one after the other: fixed cost, two timed runs (checkpoint, dataloader)
    with their ramps, and the shards written and read twice (fio, then torch.save)."""
    p = job.profile
    shard = shard_bytes(p, job.nodes, job.writers)
    local_bw = job.local_GBps or r.local_GBps
    shared_bw = job.shared_GBps or r.shared_GBps
    per_path = r.io_fixed_s + 2 * (IO_RAMP_S + p.io_runtime_s)
    local = job.local_paths * (per_path + 4 * job.writers * shard / (local_bw * 1e9))
    shared = job.shared_paths * (per_path + 4 * job.nodes * job.writers * shard / (shared_bw * 1e9))
    return local + shared


def _limit(expected: float, at_base: float, floor: int) -> int:
    """The profile's limit plus twice what N nodes add, and never under 1.5 x the expected
    time (a profile too big for its hardware, standard on CPUs, still gets room to finish)."""
    return max(floor + math.ceil(LIMIT_FACTOR * max(0.0, expected - at_base)), math.ceil(1.5 * expected))


def plan(job: Job) -> list[Phase]:
    """Every phase of the acceptance job at this N, in order, with its expected time and limit."""
    r = RATES["gpu" if job.gpus_per_node else "cpu"]
    p = job.profile
    compute = compute_limit_s(p.name, p.compute_budget_s)
    out = [
        # every node at once, each on its own: no communicator, so no growth with N
        Phase(
            name="preflight",
            expected_s=math.ceil(_startup(r, 0) + PREFLIGHT_CHECK_S),
            limit_s=PREFLIGHT_LIMIT_S,
        ),
        Phase(name="inventory", expected_s=math.ceil(_startup(r, 0)), limit_s=INVENTORY_LIMIT_S),
        Phase(name="compute", expected_s=math.ceil(compute - 60 - 120 + r.startup_s), limit_s=compute),
    ]
    base = replace(job, nodes=BASE_NODES)
    for kind in phases.net_phases(job.nodes, GROUPS_ABOVE_NODES):
        e = _net_expected(kind.name, job, r)
        # the base of every net phase is the pair tournament's at two nodes: the groups search
        # above 64 nodes replaces the pairs phase, and is compared with what it replaces
        b = _net_expected("pairs" if kind.name == "groups" else kind.name, base, r)
        out.append(Phase(name=kind.name, expected_s=math.ceil(e), limit_s=_limit(e, b, p.net_timeout_s)))
    e = _io_expected(job, r)
    b = _io_expected(base, r)
    out.append(Phase(name="storage", expected_s=math.ceil(e), limit_s=_limit(e, b, p.io_timeout_s)))
    out.append(Phase(name="report", expected_s=10, limit_s=p.report_timeout_s))
    return out


def limit_of(job: Job, name: str) -> int:
    return next(ph.limit_s for ph in plan(job) if ph.name == name)


def _clock(secs: int) -> str:
    return f"{secs // 60}m{secs % 60:02d}s"


def summary_lines(job: Job) -> list[str]:
    """The plan as lines for a person: one per phase and the total, and the storage cap."""
    ph = plan(job)
    r = RATES["gpu" if job.gpus_per_node else "cpu"]
    lines = [f"expected duration at {job.nodes} node(s), profile {job.profile.name} ({r.source}):"]
    lines += [f"  {x.name:<10} ~{_clock(x.expected_s):>8}  (limit {_clock(x.limit_s)})" for x in ph]
    lines.append(f"  {'total':<10} ~{_clock(sum(x.expected_s for x in ph)):>8}")
    shard = shard_bytes(job.profile, job.nodes, job.writers)
    total = job.nodes * job.writers * shard
    lines.append(
        f"storage: {job.nodes} node(s) x {job.writers} writer(s) x {shard >> 20} MiB = "
        f"{total / (1 << 30):.0f} GiB of checkpoint shards into each shared file system "
        f"(cap {SHARED_CAP_BYTES >> 30} GiB)"
    )
    return lines
