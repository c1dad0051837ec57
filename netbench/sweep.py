"""The sweep and its statistics (pure).

Sizes go from --min-bytes to --max-bytes multiplying by --step-factor, as nccl-tests'
`-b/-e/-f` do. The headline time is nccl-tests': `iters` back-to-back ops with one sync
at the end, t = elapsed / iters, averaged across ranks (`-a 1`). The per-iteration
statistics (min/p50/p99/CV) describe the spread that a mean hides.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from reports.shared.errors import UsageError


def sizes(min_bytes: int, max_bytes: int, step_factor: float) -> list[int]:
    """min, min*f, min*f^2, ... up to and including max (nccl-tests' loop)."""
    if min_bytes > max_bytes:
        raise UsageError(f"--min-bytes {min_bytes} is larger than --max-bytes {max_bytes}: swap them")
    if min_bytes <= 0:
        raise UsageError("--min-bytes must be at least 1 byte")
    if min_bytes == max_bytes:
        return [min_bytes]
    if step_factor <= 1:
        raise UsageError(f"--step-factor must be larger than 1, got {step_factor}")
    out: list[int] = []
    size = float(min_bytes)
    while int(size) <= max_bytes:
        if not out or int(size) != out[-1]:
            out.append(int(size))
        size *= step_factor
    return out


@dataclass(frozen=True, kw_only=True, slots=True)
class IterStats:
    """Per-iteration times of one rank, in seconds."""

    mean: float
    min: float
    p50: float
    p99: float
    cv: float  # standard deviation / mean (population)


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of an already sorted sequence."""
    if not sorted_values:
        return math.nan
    k = max(1, math.ceil(q / 100 * len(sorted_values)))
    return float(sorted_values[k - 1])


def iter_stats(times: Sequence[float]) -> IterStats:
    if not times:
        nan = math.nan
        return IterStats(mean=nan, min=nan, p50=nan, p99=nan, cv=nan)
    s = sorted(times)
    mean = sum(s) / len(s)
    var = sum((t - mean) ** 2 for t in s) / len(s)
    return IterStats(
        mean=mean,
        min=s[0],
        p50=percentile(s, 50),
        p99=percentile(s, 99),
        cv=math.sqrt(var) / mean if mean > 0 else 0.0,
    )


def mean_across_ranks(times: Sequence[float]) -> float:
    """nccl-tests -a 1: the average of each rank's elapsed/iters."""
    return sum(times) / len(times) if times else math.nan


def slowest(stats: Sequence[IterStats]) -> IterStats:
    """The rank whose per-iteration mean is largest: the one the others wait for."""
    return max(stats, key=lambda s: s.mean)
