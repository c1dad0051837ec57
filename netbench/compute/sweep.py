"""The matmul sweep (pure but for the Device it drives): which shapes, for how long, and the
statistics, after mamf-finder's method: per shape, warm-up iterations then timed ones; the
TFLOPS of a shape is 2 x M x N x K / time; `max` from its fastest iteration, `median` from its
median one, `mean` from the mean (sustained: on a shared CPU an iteration shorter than a
scheduler slice often runs unpreempted, so the median shows the core's speed, the mean its share); the device's figure is the best shape's. A GPU's grid begins with the shapes where
mamf-finder's published table found each accelerator's maximum (MAMF_SHAPES); the rest is
ordered so that a time budget cut short still sees the large, well-aligned ones first.

Two passes: the first spends FIRST_PASS_SHARE of the budget over the grid, each shape at most its
even share of it; the second measures the REPEAT_BEST best shapes again with the rest, and their
figures come from both passes' iterations together. One pass of a few iterations per shape takes
a lucky or an unlucky window for the maximum (on a shared CPU, 0.71-0.85 x a bare loop at the same
shape); the best shapes measured twice, longer, hold still.
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

# The second pass (see the module): the first pass's share of the budget, and how many of its
# best shapes are measured again.
FIRST_PASS_SHARE = 0.6
REPEAT_BEST = 3

# Aligned sizes (multiples of 256, so tiles divide them). A GPU needs large shapes to fill its
# SMs: the published best shapes sit between 1024 and 16384 per side (ml-engineering's MAMF
# table). A CPU's plateau lies past 1024 per side (2 shared cores: a bare fp32 loop at 2048^3
# beat every shape up to 1024), ~0.3 s per 2048^3 fp32 product on two cores, so every profile
# reaches 2048 and the larger ones go beyond it.
GPU_SIZES: dict[str, tuple[int, ...]] = {
    "quick": (4096, 8192),
    "standard": (2048, 4096, 8192, 12288),
    "full": (1024, 2048, 4096, 6144, 8192, 10240, 12288, 16384),  # 512 shapes: ~4 min per dtype
}
# Where mamf-finder's published table found each accelerator's maximum (ml-engineering
# compute/accelerator/README.md, "Maximum Achievable Matmul FLOPS comparison table": the best
# (M, N, K) by the mean of 100 iterations after 50 warm-up ones), per catalog accelerator with a
# `mamf` figure and per dtype. Every GPU profile measures these shapes first, then the cube of
# GPU_SIZES: several of their sides (13312, 14336, 15360, 16128) lie beyond every cube but full's,
# and the plateau of a device is where its table row says, not at a power of two.
MAMF_SHAPES: dict[str, dict[Dtype, tuple[int, int, int]]] = {
    "a100-sxm": {"bf16": (1024, 10240, 5120)},
    "h100-sxm": {"bf16": (2048, 2048, 13312), "fp8": (1024, 9216, 14336)},
    "h200": {"bf16": (2048, 2048, 13312), "fp8": (1280, 4096, 12032)},  # bf16: "H200 is the same"
    "b200": {"bf16": (1792, 16128, 3072), "fp8": (15360, 4096, 3072)},
    "mi300x": {"bf16": (10240, 15360, 8192)},
    "gaudi2": {"bf16": (14336, 15360, 2048), "fp8": (6144, 11264, 5120)},
}
CPU_SIZES: dict[str, tuple[int, ...]] = {
    "quick": (1024, 2048),
    "standard": (512, 1024, 1536, 2048),
    "full": (512, 1024, 1536, 2048, 3072, 4096),
}
CPU_WARMUP = 2  # untimed products per shape on a CPU: no boost clock to settle, caches warm after one


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
    passes: int = 1  # 2: measured again in the second pass, its figures over both passes' iterations

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
    m: int,
    n: int,
    k: int,
    times: Sequence[float],
    cpu_times: Sequence[float] | None = None,
    passes: int = 1,
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
        passes=passes,
    )


def shapes(sizes: Sequence[int]) -> list[tuple[int, int, int]]:
    """Every (M, N, K) over `sizes`, largest products first: under a budget the shapes most
    likely to reach the ceiling are measured before it runs out."""
    grid = [(m, n, k) for m, n, k in itertools.product(sizes, repeat=3)]
    return sorted(grid, key=lambda s: (-(s[0] * s[1] * s[2]), s))


def mamf_shapes() -> list[tuple[int, int, int]]:
    """MAMF_SHAPES's shapes, each once, largest products first."""
    named = {shape for per_dtype in MAMF_SHAPES.values() for shape in per_dtype.values()}
    return sorted(named, key=lambda s: (-(s[0] * s[1] * s[2]), s))


def gpu_grid(sizes: Sequence[int]) -> list[tuple[int, int, int]]:
    """A GPU's grid: the shapes of mamf-finder's table first, then the cube of `sizes`."""
    named = mamf_shapes()
    return named + [s for s in shapes(sizes) if s not in named]


def sweep_dtype(
    device: Device,
    dtype: Dtype,
    grid: Sequence[tuple[int, int, int]],
    warmup: int,
    iters: int,
    budget_s: float | None,
    progress: Callable[[str], None] = lambda _: None,
    clock: Callable[[], float] = time.monotonic,
    repeat_best: int = REPEAT_BEST,
) -> DtypeResult:
    """Measure `grid` in order within FIRST_PASS_SHARE of the budget (at least one shape always),
    then the `repeat_best` best shapes again with the rest (the module's two passes)."""
    start = clock()
    deadline = float("inf") if budget_s is None else start + budget_s
    first_end = float("inf") if budget_s is None else start + FIRST_PASS_SHARE * budget_s
    per_shape = float("inf") if budget_s is None else FIRST_PASS_SHARE * budget_s / max(1, len(grid))
    times: dict[tuple[int, int, int], tuple[list[float], list[float]]] = {}
    out: list[ShapeResult] = []
    for i, (m, n, k) in enumerate(grid, 1):
        try:
            t = device.times_s(m, n, k, dtype, warmup, iters, min(first_end, clock() + per_shape))
        except Exception as exc:  # noqa: BLE001 - a dtype the device cannot run is a record, not a crash
            if out:
                break  # e.g. out of memory at a large shape: keep what was measured
            return DtypeResult(dtype=dtype, shapes=(), elapsed_s=clock() - start, error=_why(exc))
        cpu = list(getattr(device, "last_cpu_times", None) or ())
        times[(m, n, k)] = (list(t), cpu)
        out.append(shape_result(m, n, k, t, cpu))
        best = max(out, key=lambda s: s.median_tflops)
        progress(
            f"{dtype} shape {i}/{len(grid)} {m}x{n}x{k}: {out[-1].median_tflops:.3g} TFLOPS "
            f"(best {best.median_tflops:.3g} at {best.shape})"
        )
        if clock() >= first_end:
            break
    top = sorted(out, key=lambda s: -s.median_tflops)[:repeat_best]
    for j, s in enumerate(top):
        left = deadline - clock()
        if left <= 0:
            break
        key = (s.m, s.n, s.k)
        try:
            t = device.times_s(s.m, s.n, s.k, dtype, warmup, iters, clock() + left / (len(top) - j))
        except Exception:  # noqa: BLE001 - the first pass's figure stands
            break
        before, cpu_before = times[key]
        cpu = list(getattr(device, "last_cpu_times", None) or ())
        again = shape_result(
            *key, before + list(t), cpu_before + cpu if cpu_before and cpu else None, passes=2
        )
        out[out.index(s)] = again
        progress(
            f"{dtype} again {again.shape}: {again.median_tflops:.3g} TFLOPS over {again.iters} iterations"
        )
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
    gpu: bool = False  # a GPU's grid begins with MAMF_SHAPES

    grid: tuple[tuple[int, int, int], ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "grid", tuple(gpu_grid(self.sizes) if self.gpu else shapes(self.sizes)))


def plan(profile: str, dtypes: Sequence[Dtype], gpu: bool, budget_s: float | None = None) -> Plan:
    """The sweep of one device for a profile; `budget_s` (all dtypes together) overrides the profile's."""
    total = BUDGET_S[profile] if budget_s is None else budget_s
    warm = min(10.0, 0.15 * total) if total else 30.0
    if not gpu:
        warm = min(warm, 1.0)  # a CPU has no boost clock to settle; its cores are shared here
    per = max(0.5, ((FULL_LIMIT_S if total is None else total) - warm) / max(1, len(dtypes)))
    w, n = ITERS[profile]
    if not gpu:
        w = min(w, CPU_WARMUP)
    return Plan(
        dtypes=tuple(dtypes),
        sizes=(GPU_SIZES if gpu else CPU_SIZES)[profile],
        warmup=w,
        iters=n,
        budget_s=per,
        device_warmup_s=warm,
        gpu=gpu,
    )
