"""nccl-tests' per-iteration timing (`-I 1`, 2.17+) -> record statistics and a straggler view
(pure). Where it comes from, in nccl-tests 2.19.6 src/util.cu writePerIterReport:

- logs: each timing group gains columns `i_min i_max i_p99 i_cv%` (us, us, us, percent);
- `-J` JSON: each result gains `out_of_place_per_iter` / `in_place_per_iter` objects with
  `min_us, max_us, avg_us, p50_us, p95_us, p99_us, stdev_us, cv_pct, times_us` (one per
  iteration: the slowest GPU's time) and, with more than one process,
  `per_process_max_times_us` (one list per process: its slowest GPU's time per iteration).

The straggler view ranks processes (and the hosts they run on) by their mean iteration time:
the slowest one is what every collective waits for.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from reports.ingest.nccl_rows import number


class IterStats(TypedDict, total=False):
    """The NetRecord fields per-iteration timing fills (keyword arguments of NetRecord)."""

    time_min_s: float
    time_p50_s: float
    time_p99_s: float
    time_cv: float


def _us(v: Any) -> float | None:
    x = number(str(v)) if v is not None else None
    return x * 1e-6 if x is not None and x >= 0 else None


def stats(timing: Mapping[str, Any]) -> IterStats:
    """time_min_s / time_p50_s / time_p99_s / time_cv of a timing group (log columns or the
    JSON per_iter object under the key "per_iter"); only what the input has."""
    j = timing.get("per_iter")
    if isinstance(j, Mapping):
        low, mid, high, cv_raw = j.get("min_us"), j.get("p50_us"), j.get("p99_us"), j.get("cv_pct")
    else:  # the log's columns: no median
        low, mid, high, cv_raw = timing.get("i_min"), None, timing.get("i_p99"), timing.get("i_cv%")
    out = IterStats()
    if (s := _us(low)) is not None:
        out["time_min_s"] = s
    if (s := _us(mid)) is not None:
        out["time_p50_s"] = s
    if (s := _us(high)) is not None:
        out["time_p99_s"] = s
    cv = number(str(cv_raw)) if cv_raw is not None else None
    if cv is not None and cv >= 0:
        out["time_cv"] = cv / 100
    return out


def stragglers(per_process_us: Any, process_hosts: Sequence[str]) -> dict[str, Any] | None:
    """From per_process_max_times_us: each process's mean iteration time, the slowest process
    and its host, and how much slower it is than the median process; None when absent."""
    if not isinstance(per_process_us, list) or len(per_process_us) < 2:
        return None
    means: list[float] = []
    for row in per_process_us:
        vals = [v for v in (number(str(x)) for x in row) if v is not None] if isinstance(row, list) else []
        if not vals:
            return None
        means.append(sum(vals) / len(vals))
    hosts = (
        list(process_hosts)
        if len(process_hosts) == len(means)
        else [f"process {i}" for i in range(len(means))]
    )
    slow = max(range(len(means)), key=lambda i: means[i])
    median = statistics.median(means)
    per_host: dict[str, float] = {}
    for h, m in zip(hosts, means):
        per_host[h] = max(per_host.get(h, 0.0), m)
    return {
        "process_mean_us": [round(m, 3) for m in means],
        "process_hosts": hosts,
        "host_slowest_mean_us": {h: round(m, 3) for h, m in sorted(per_host.items())},
        "slowest_process": slow,
        "slowest_host": hosts[slow],
        "slowest_vs_median": round(means[slow] / median, 3) if median > 0 else None,
    }


def process_hosts(devices: Sequence[Mapping[str, Any]]) -> list[str]:
    """The host of each process, in process order: config.devices lists ranks; a process holds
    the ranks of one (hostname, pid), first seen in rank order (nccl-tests -g N: N per process)."""
    seen: dict[tuple[str, str], str] = {}
    for d in sorted(devices, key=lambda d: int(number(str(d.get("rank", 0))) or 0)):
        key = (str(d.get("hostname", "unknown")), str(d.get("pid", "")))
        seen.setdefault(key, key[0])
    return list(seen.values())
