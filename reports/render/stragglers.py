"""The per-process / per-node straggler view (pure formatting of reports.evidence.stragglers):
which process (and node) every collective waited for, and by how much against the median
process, from records imported from nccl-tests' per-iteration JSON (-I 1 -J)."""

from __future__ import annotations

from reports.evidence.stragglers import MAX_ROWS, Stragglers


def straggler_lines(s: Stragglers | None) -> list[str]:
    """A markdown section, or nothing when no record carries per-process times."""
    if s is None:
        return []
    out = [
        "## Stragglers (per-iteration times per process)",
        "",
        f"Slowest process most often on {s.host} ({s.times} of {s.results} results); "
        "each row: the process every iteration waited for, against the median process.",
        "",
        "| op | size (B) | mode | slowest process | node | × median | per-node slowest mean (us) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in s.worst:
        x = r.extra["stragglers"]
        per_node = ", ".join(f"{h} {v:g}" for h, v in x.get("host_slowest_mean_us", {}).items())
        ratio = x.get("slowest_vs_median")
        out.append(
            f"| {r.op} | {r.bytes} | {'in-place' if r.in_place else 'out-of-place'} | {x['slowest_process']} "
            f"| {x['slowest_host']} | {ratio if ratio is not None else '-'} | {per_node} |"
        )
    if s.results > MAX_ROWS:
        out.append(f"\n(+{s.results - MAX_ROWS} more results)")
    return [*out, ""]
