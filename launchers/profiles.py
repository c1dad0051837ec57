"""The run profiles (`--profile quick|standard|full`) as data: what each phase measures and
how long it may take. Pure; every value can be overridden on the command line.

quick    a smoke test: minutes on any machine, CPU-only included (the `stoker run` default
         on a machine without GPUs, where gloo on 2 cores cannot move large buffers fast).
standard the acceptance default, sized for 8-GPU nodes on NVLink + InfiniBand: sizes up to
         1 GiB show the bandwidth plateau, checkpoint writers move enough to defeat caches.
full     everything but gather, scatter and alltoallv (seven ops), every size from 8 bytes, long
         storage runs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from reports.shared.errors import UsageError
from reports.shared.records import IO_FAMILIES

SAVE_REPEATS = 3  # iobench.workloads.IoSettings.save_repeats: stoker io's own default


@dataclass(frozen=True, kw_only=True, slots=True)
class Profile:
    name: str
    ops: tuple[str, ...]  # stoker net --ops
    min_bytes: str  # --min-bytes (K/M/G suffixes, powers of 1024)
    max_bytes: str  # --max-bytes
    step_factor: int  # --step-factor
    iters: int  # --iters
    warmup: int  # --warmup
    workloads: tuple[str, ...]  # stoker io --workloads
    ckpt_bytes: str  # stoker io --ckpt-bytes (per writer)
    io_runtime_s: int  # stoker io --runtime (per timed workload)
    net_timeout_s: int  # one net phase: stoker net --timeout and the launcher's limit
    io_timeout_s: int  # one io phase (all paths, all workloads)
    report_timeout_s: int = 300
    # stoker compute --budget: seconds per device, all dtypes; None: the compute profile's own
    # (quick ~20 s, standard ~60 s, full the whole grid)
    compute_budget_s: float | None = None
    # stoker io --save-repeats: the torch.save and DCP saves per figure beside fio (iobench's
    # IoSettings.save_repeats is the default); 0: fio alone (stoker io --no-torch)
    save_repeats: int = SAVE_REPEATS


# Above this many nodes the acceptance job localises with the log-round groups search
# (`--scopes groups`: ~log2(n) + 1 rounds) instead of the pair tournament (n - 1 rounds).
# At 64 nodes the tournament is 63 rounds, ~3 minutes at the standard profile (2.67 s a
# round, docs/localisation.md), a third of its 600 s phase limit, and it names every slow
# link; at 256 it would be ~11 minutes, past the limit, while the search takes 7 rounds.
# The search names a slow node, or a slow link only between nodes it measures together.
GROUPS_ABOVE_NODES = 64

PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile(
            name="quick",
            ops=("all_reduce", "all_gather", "sendrecv"),
            min_bytes="64K",
            max_bytes="4M",
            step_factor=4,
            iters=5,
            warmup=2,
            workloads=IO_FAMILIES,
            ckpt_bytes="64M",
            io_runtime_s=3,
            net_timeout_s=180,
            io_timeout_s=180,
            report_timeout_s=120,
        ),
        Profile(
            name="standard",
            ops=("all_reduce", "all_gather", "reduce_scatter", "alltoall", "sendrecv"),
            min_bytes="1M",
            max_bytes="1G",
            step_factor=4,
            iters=20,
            warmup=5,
            workloads=IO_FAMILIES,
            ckpt_bytes="4G",
            io_runtime_s=30,
            net_timeout_s=600,
            io_timeout_s=900,
        ),
        Profile(
            name="full",
            ops=("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall", "sendrecv"),
            min_bytes="8",
            max_bytes="8G",
            step_factor=2,
            iters=50,
            warmup=10,
            workloads=IO_FAMILIES,
            ckpt_bytes="16G",
            io_runtime_s=60,
            net_timeout_s=1800,
            io_timeout_s=1800,
        ),
    )
}


def get_profile(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        raise UsageError(f"unknown profile {name!r}: use one of {', '.join(PROFILES)}") from None


def with_overrides(profile: Profile, **overrides: object) -> Profile:
    """The profile with every override that is not None applied (command-line knobs)."""
    given = {k: v for k, v in overrides.items() if v is not None}
    return replace(profile, **given) if given else profile  # type: ignore[arg-type]


def default_profile(gpus: int) -> str:
    """`stoker run`'s default: standard where there are GPUs, quick on a CPU-only machine."""
    return "standard" if gpus > 0 else "quick"


def plateau(profile: Profile) -> Profile:
    """A soak's sizes: the profile's largest and a quarter of it (where busbw has levelled
    off), every op of the profile; the same two sizes every pass, so that passes compare."""
    from reports.shared.units import parse_size

    top = parse_size(profile.max_bytes, "--max-bytes")
    return replace(profile, min_bytes=str(max(1, top // 4)), max_bytes=str(top), step_factor=4)
