"""Stragglers (evidence, pure): from records imported from nccl-tests' per-iteration JSON
(-I 1 -J; `extra.stragglers`, reports/ingest/nccl_per_iter.py), which node's process every
collective waited for most often, and the results where it lagged the median most."""

from __future__ import annotations

import collections
from collections.abc import Sequence
from dataclasses import dataclass

from reports.shared.records import NetRecord

MAX_ROWS = 12


@dataclass(frozen=True, kw_only=True, slots=True)
class Stragglers:
    host: str  # the node whose process was slowest most often
    times: int  # in how many results
    results: int  # results with per-process times
    worst: list[NetRecord]  # the results with the largest slowest/median ratio, worst first


def stragglers(rows: Sequence[NetRecord]) -> Stragglers | None:
    """None when no record carries per-process times."""
    rows = [r for r in rows if isinstance(r.extra.get("stragglers"), dict)]
    if not rows:
        return None
    slowest = collections.Counter(str(r.extra["stragglers"]["slowest_host"]) for r in rows)
    host, times = slowest.most_common(1)[0]
    worst = sorted(rows, key=lambda r: -(r.extra["stragglers"].get("slowest_vs_median") or 0))[:MAX_ROWS]
    return Stragglers(host=host, times=times, results=len(rows), worst=worst)
