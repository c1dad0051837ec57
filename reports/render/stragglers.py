"""The per-process / per-node straggler view (pure): from records imported from nccl-tests'
per-iteration JSON (-I 1 -J; `extra.stragglers`, reports/ingest/nccl_per_iter.py), which
process (and node) every collective waited for, and by how much against the median process."""

from __future__ import annotations

import collections
from collections.abc import Sequence

from reports.records import NetRecord

MAX_ROWS = 12


def straggler_lines(net: Sequence[NetRecord]) -> list[str]:
    """A markdown section, or nothing when no record carries per-process times."""
    rows = [r for r in net if isinstance(r.extra.get("stragglers"), dict)]
    if not rows:
        return []
    slowest = collections.Counter(str(r.extra["stragglers"]["slowest_host"]) for r in rows)
    host, times = slowest.most_common(1)[0]
    worst = sorted(rows, key=lambda r: -(r.extra["stragglers"].get("slowest_vs_median") or 0))[:MAX_ROWS]
    out = [
        "## Stragglers (per-iteration times per process)",
        "",
        f"Slowest process most often on {host} ({times} of {len(rows)} results); "
        "each row: the process every iteration waited for, against the median process.",
        "",
        "| op | size (B) | mode | slowest process | node | × median | per-node slowest mean (us) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in worst:
        s = r.extra["stragglers"]
        per_node = ", ".join(f"{h} {v:g}" for h, v in s.get("host_slowest_mean_us", {}).items())
        ratio = s.get("slowest_vs_median")
        out.append(
            f"| {r.op} | {r.bytes} | {'in-place' if r.in_place else 'out-of-place'} | {s['slowest_process']} "
            f"| {s['slowest_host']} | {ratio if ratio is not None else '-'} | {per_node} |"
        )
    if len(rows) > MAX_ROWS:
        out.append(f"\n(+{len(rows) - MAX_ROWS} more results)")
    return [*out, ""]
