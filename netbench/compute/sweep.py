"""The matmul sweep (pure but for the Device it drives): which shapes, for how long, and the
statistics, after mamf-finder's method: per shape, warm-up iterations then timed ones; the
TFLOPS of a shape is 2 x M x N x K / time; `max` from its fastest iteration, `median` from its
median one, `mean` from the mean (sustained: on a shared CPU an iteration shorter than a
scheduler slice often runs unpreempted, so the median shows the core's speed, the mean its share); the device's figure is the best shape's. Shapes are ordered so that a time budget
cut short still sees the large, well-aligned ones first.
"""

from __future__ import annotations

import itertools
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

Dtype = Literal["fp32", "bf16", "fp16", "fp8"]
DTYPES: tuple[Dtype, ...] = ("fp32", "bf16", "fp16", "fp8")
ProfileName = Literal["quick", "standard", "full"]

# Seconds per profile for all dtypes of one device together; None: the whole grid (full), each
# dtype stopped at its share of FULL_LIMIT_S, so a worker always ends inside stoker compute's
# limit with every dtype it measured.
BUDGET_S: dict[str, float | None] = {"quick": 20.0, "standard": 60.0, "full": None}
FULL_LIMIT_S = 1800.0
# Untimed and timed iterations per shape (mamf-finder: 50 and 100; fewer where the budget is short).
ITERS: dict[str, tuple[int, int]] = {"quick": (5, 20), "standard": (10, 50), "full": (50, 100)}

# Aligned sizes (multiples of 256, so tiles divide them). A GPU needs large shapes to fill its
# SMs: the published best shapes sit between 1024 and 16384 per side (ml-engineering's MAMF
# table). Two cores of a CPU reach their plateau by 512-1024 per side and take ~40 ms per
# 1024^3 fp32 product, so their grid stays small.
GPU_SIZES: dict[str, tuple[int, ...]] = {
    "quick": (4096, 8192),
    "standard": (2048, 4096, 8192, 12288),
    "full": (1024, 2048, 4096, 6144, 8192, 10240, 12288, 16384),  # 512 shapes: ~4 min per dtype
}
CPU_SIZES: dict[str, tuple[int, ...]] = {
    "quick": (512, 1024),
    "standard": (256, 512, 768, 1024, 1536),
    "full": (256, 512, 768, 1024, 1536, 2048),
}


class Device(Protocol):
    """One device's matmul: `times_s(m, n, k, dtype, warmup, iters, deadline)` returns the
    seconds of each timed iteration (at least one, fewer than `iters` once `deadline` of
    time.monotonic() is past)."""

    name: str
    timer: str

    def times_s(
        self, m: int, n: int, k: int, dtype: Dtype, warmup: int, iters: int, deadline: float
    ) -> list[float]: ...


@dataclass(frozen=True, kw_only=True, slots=True)
class ShapeResult:
    m: int
    n: int
    k: int
    max_tflops: float  # from the fastest iteration
    median_tflops: float  # from the median iteration
    iters: int
    mean_tflops: float = 0.0  # from the mean iteration: sustained, stalls included (mamf-finder's table)
    cpu_mean_tflops: float | None = None  # CPU devices: the mean iteration on the process's CPU clock

    @property
    def shape(self) -> str:
        return f"{self.m}x{self.n}x{self.k}"


@dataclass(frozen=True, kw_only=True, slots=True)
class DtypeResult:
    dtype: Dtype
    shapes: tuple[ShapeResult, ...]
    elapsed_s: float
    error: str = ""  # why this dtype could not be measured (e.g. no fp8 on this GPU)

    @property
    def best(self) -> ShapeResult | None:
        """The shape with the best median TFLOPS (the figure judged; robust to one lucky iteration)."""
        return max(self.shapes, key=lambda s: s.median_tflops, default=None)

    @property
    def max_tflops(self) -> float | None:
        return max((s.max_tflops for s in self.shapes), default=None)

    @property
    def cpu_mean_tflops(self) -> float | None:
        return max((s.cpu_mean_tflops for s in self.shapes if s.cpu_mean_tflops), default=None)

    @property
    def mean_tflops(self) -> float | None:
        """The best shape's sustained figure: every stall and preemption of its iterations counted."""
        return max((s.mean_tflops for s in self.shapes), default=None)


def tflops(m: int, n: int, k: int, seconds: float) -> float:
    """TFLOPS (10^12 FLOP/s) of one M x K by K x N product: 2 x M x N x K FLOPs."""
    return 2.0 * m * n * k / seconds / 1e12


def shape_result(
    m: int, n: int, k: int, times: Sequence[float], cpu_times: Sequence[float] | None = None
) -> ShapeResult:
    cpu = statistics.fmean(cpu_times) if cpu_times else 0.0
    return ShapeResult(
        cpu_mean_tflops=tflops(m, n, k, cpu) if cpu > 0 else None,
        m=m,
        n=n,
        k=k,
        max_tflops=tflops(m, n, k, min(times)),
        median_tflops=tflops(m, n, k, statistics.median(times)),
        iters=len(times),
        mean_tflops=tflops(m, n, k, statistics.fmean(times)),
    )


def shapes(sizes: Sequence[int]) -> list[tuple[int, int, int]]:
    """Every (M, N, K) over `sizes`, largest products first: under a budget the shapes most
    likely to reach the ceiling are measured before it runs out."""
    grid = [(m, n, k) for m, n, k in itertools.product(sizes, repeat=3)]
    return sorted(grid, key=lambda s: (-(s[0] * s[1] * s[2]), s))


def sweep_dtype(
    device: Device,
    dtype: Dtype,
    grid: Sequence[tuple[int, int, int]],
    warmup: int,
    iters: int,
    budget_s: float | None,
    progress: Callable[[str], None] = lambda _: None,
    clock: Callable[[], float] = time.monotonic,
) -> DtypeResult:
    """Measure `grid` in order until the budget is spent (at least one shape always)."""
    start = clock()
    deadline = float("inf") if budget_s is None else start + budget_s
    out: list[ShapeResult] = []
    for i, (m, n, k) in enumerate(grid, 1):
        try:
            times = device.times_s(m, n, k, dtype, warmup, iters, deadline)
        except Exception as exc:  # noqa: BLE001 - a dtype the device cannot run is a record, not a crash
            if out:
                break  # e.g. out of memory at a large shape: keep what was measured
            return DtypeResult(dtype=dtype, shapes=(), elapsed_s=clock() - start, error=_why(exc))
        out.append(shape_result(m, n, k, times, getattr(device, "last_cpu_times", None)))
        best = max(out, key=lambda s: s.median_tflops)
        progress(
            f"{dtype} shape {i}/{len(grid)} {m}x{n}x{k}: {out[-1].median_tflops:.3g} TFLOPS "
            f"(best {best.median_tflops:.3g} at {best.shape})"
        )
        if clock() >= deadline:
            break
    return DtypeResult(dtype=dtype, shapes=tuple(out), elapsed_s=clock() - start)


def _why(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:200]


@dataclass(frozen=True, kw_only=True, slots=True)
class Plan:
    dtypes: tuple[Dtype, ...]
    sizes: tuple[int, ...]
    warmup: int
    iters: int
    budget_s: float  # per dtype
    device_warmup_s: float  # before the first shape: a cold device scores high (mamf-finder)

    grid: tuple[tuple[int, int, int], ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "grid", tuple(shapes(self.sizes)))


def plan(profile: str, dtypes: Sequence[Dtype], gpu: bool, budget_s: float | None = None) -> Plan:
    """The sweep of one device for a profile; `budget_s` (all dtypes together) overrides the profile's."""
    total = BUDGET_S[profile] if budget_s is None else budget_s
    warm = min(10.0, 0.15 * total) if total else 30.0
    if not gpu:
        warm = min(warm, 1.0)  # a CPU has no boost clock to settle; its cores are shared here
    per = max(0.5, ((FULL_LIMIT_S if total is None else total) - warm) / max(1, len(dtypes)))
    w, n = ITERS[profile]
    return Plan(
        dtypes=tuple(dtypes),
        sizes=(GPU_SIZES if gpu else CPU_SIZES)[profile],
        warmup=w,
        iters=n,
        budget_s=per,
        device_warmup_s=warm,
    )
