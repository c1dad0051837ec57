"""Repeated measurements as one figure with its spread (pure).

A figure measured several times is judged by its median, and its record carries every sample
and the lowest and highest (docs/contract.md "Records", optional `repeats`, `samples_GBps`,
`min_GBps`, `max_GBps`). The median is the lower middle sample for an even count, so that the
judged figure is always one that was measured, and the record written is that sample's.
Records written before repeats existed have none of these fields: they read as one sample.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from reports.shared.records import IoRecord


@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class Spread:
    """The samples of one figure, GB/s, in the order they were measured."""

    samples: tuple[float, ...]

    @property
    def low(self) -> float:
        return min(self.samples)

    @property
    def high(self) -> float:
        return max(self.samples)

    @property
    def median(self) -> float:
        return sorted(self.samples)[(len(self.samples) - 1) // 2]

    def contains(self, value: float) -> bool:
        """A threshold inside the spread: some samples pass it and some do not."""
        return len(self.samples) > 1 and self.low <= value <= self.high

    def text(self) -> str:
        """'median of 3, 1.2–1.6 GB/s' ('one sample' when there is one)."""
        if len(self.samples) < 2:
            return "one sample"
        return f"median of {len(self.samples)}, {self.low:.3g}–{self.high:.3g} GB/s"


def median_record(recs: Sequence[IoRecord]) -> IoRecord:
    """The median sample's record (by bw_GBps; the lower middle for an even count), with every
    sample, min and max added to its extra."""
    if not recs:
        raise ValueError("no samples")
    ranked = sorted(recs, key=lambda r: r.bw_GBps)
    mid = ranked[(len(ranked) - 1) // 2]
    samples = [r.bw_GBps for r in recs]
    extra = {
        **mid.extra,
        "repeats": len(recs),
        "samples_GBps": samples,
        "min_GBps": min(samples),
        "max_GBps": max(samples),
    }
    return dataclasses.replace(mid, extra=extra)


def spread_of(r: IoRecord) -> Spread:
    """The record's samples; a record without them is its one figure."""
    samples = r.extra.get("samples_GBps")
    if isinstance(samples, list) and samples and all(isinstance(x, (int, float)) for x in samples):
        return Spread(samples=tuple(float(x) for x in samples))
    return Spread(samples=(r.bw_GBps,))


def threshold_note(s: Spread, judged: float, threshold: float, unit: str) -> str:
    """A sentence when `threshold` lies inside the spread of a figure `judged` that follows the
    samples in proportion (judged at the median sample; the lowest and highest scale it alike),
    else ''."""
    if len(s.samples) < 2 or s.median <= 0:
        return ""
    low, high = judged * s.low / s.median, judged * s.high / s.median
    if not low <= threshold <= high:
        return ""
    return (
        f"the threshold {threshold:.3g} {unit} lies inside the spread of the {len(s.samples)} samples "
        f"({low:.3g}–{high:.3g} {unit}): a repeat may judge it the other way"
    )
