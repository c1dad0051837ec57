"""fio JSON output → numbers and io records (pure: text in, data out).

Used by iobench for its own fio runs and by `stoker import` / `stoker report` for fio files
people already have. Handles what fio has written over the years:

- fio 3.x: `io_bytes` in bytes, `bw_bytes`, latencies in `clat_ns`/`lat_ns` (nanoseconds);
  `json+` adds `bins` (latency histogram, ns → count) which lets clones merge exactly.
- fio 2.x: `io_bytes` in KiB, `bw` in KiB/s, no `total_ios`, latencies in `clat`/`lat` (usec).
- with `group_reporting` one entry per group; without it one entry per clone (summed here).
- client/server mode: `client_stats`, one entry per server (`hostname`, `port`) plus an
  "All clients" entry, which is left out because the per-host entries already hold its data.
- `--status-interval`: several documents back to back; the last complete one is final.
- noise before the JSON (warnings, `<host>` lines of client mode) is skipped.

Merging rules (documented in docs/iobench.md): bytes and I/O counts add up; the window is the
longest runtime (clones of one job start together); with `json+` bins percentiles are exact,
otherwise p50 is the I/O-weighted mean of the parts' p50 and p99 the largest part's p99 (a
conservative bound; fio 2.x and plain `json` keep no histogram).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from reports.shared.errors import UsageError
from reports.shared.json_shapes import list_at, mapping_at
from reports.shared.records import hosts_why

DIRECTIONS = ("read", "write")
ALL_CLIENTS = "All clients"
# No single host of this class moves more than this to or from storage (it would take
# several 400 Gb/s NICs or a rack of NVMe drives): a figure above it was served by a cache.
PHYSICAL_MAX_HOST_GBPS = 100.0


@dataclass(frozen=True, kw_only=True, slots=True)
class FioPart:
    """One direction of one fio entry (a clone, a group, or a client), in plain units."""

    job: str
    host: str
    direction: str
    bytes: int
    ios: int
    runtime_ms: int
    p50_ms: float | None
    p99_ms: float | None
    bins: Mapping[int, int] = field(default_factory=dict)  # latency ns → count (json+ only)
    options: Mapping[str, str] = field(default_factory=dict)
    problem: str = ""  # why its figures cannot be used (zero runtime, negative bandwidth)
    # fio's bandwidth samples (one per 500 ms): their standard deviation over their mean
    # (`bw_dev` / `bw_mean`), the spread of the job's own repeats; None when fio kept none
    bw_cv: float | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class FioSum:
    """Several parts of one job and direction added up (clones, or hosts)."""

    job: str
    direction: str
    hosts: tuple[str, ...]
    parts: int
    bytes: int
    ios: int
    runtime_ms: int
    p50_ms: float | None
    p99_ms: float | None
    per_host_bytes: Mapping[str, int]
    per_host_runtime_ms: Mapping[str, int]
    bins: Mapping[int, int]
    options: Mapping[str, str]
    problem: str = ""
    bw_cv: float | None = None  # the largest of its parts' (FioPart.bw_cv)


@dataclass(frozen=True, kw_only=True, slots=True)
class FioDoc:
    version: str
    timestamp_ms: int  # when fio wrote the document (≈ the end of the last job)
    error: int  # first non-zero job error (errno), 0 when none
    parts: tuple[FioPart, ...]
    global_options: Mapping[str, str]
    refused: tuple[str, ...] = ()  # why entries were left out: a host name not one plain node


# ---- finding the document ---------------------------------------------------------------


def json_documents(text: str) -> list[dict[str, Any]]:
    """Every complete top-level JSON object that looks like fio output, in order."""
    dec = json.JSONDecoder()
    docs: list[dict[str, Any]] = []
    pos = 0
    while True:
        # fio starts each document at the beginning of a line; braces inside a line are
        # noise or nested objects and are not tried (that keeps this linear in practice)
        start = 0 if pos == 0 and text.startswith("{") else text.find("\n{", pos)
        if start < 0:
            return docs
        start = start + 1 if text[start] == "\n" else start
        try:
            obj, end = dec.raw_decode(text, start)
        except json.JSONDecodeError:
            # a truncated last document (fio killed while printing): look further on
            pos = start + 1
            continue
        if isinstance(obj, dict) and ("jobs" in obj or "client_stats" in obj):
            docs.append(obj)
        pos = end


def load_document(text: str) -> dict[str, Any]:
    """The final fio JSON document in `text`; UsageError when there is none."""
    docs = json_documents(text)
    if not docs:
        raise UsageError("no fio JSON found: run fio with --output-format=json (or json+)")
    return docs[-1]


# ---- one entry → parts ------------------------------------------------------------------


def _percentiles(
    stats: Mapping[str, Any], scale_to_ms: float
) -> tuple[float | None, float | None, dict[int, int]]:
    pct = mapping_at(stats, "percentile")
    bins_raw = mapping_at(stats, "bins")
    try:
        bins = {int(k): int(v) for k, v in bins_raw.items()} if scale_to_ms == 1e-6 else {}
    except (TypeError, ValueError):
        bins = {}  # a histogram that is not one: percentiles from the printed ones instead
    if any(k < 0 or v < 0 for k, v in bins.items()):
        bins = {}

    def pick(p: float) -> float | None:
        for key, value in pct.items():
            try:
                if abs(float(key) - p) < 1e-9:
                    v = _number(value)
                    return v * scale_to_ms if v >= 0 else None
            except ValueError:
                continue
        return None

    return pick(50.0), pick(99.0), bins


def _latency(d: Mapping[str, Any]) -> tuple[float | None, float | None, dict[int, int]]:
    """Completion-latency percentiles in ms (fio prints clat percentiles by default;
    total-latency ones when run with lat_percentiles=1)."""
    for key, scale in (("clat_ns", 1e-6), ("lat_ns", 1e-6), ("clat", 1e-3), ("lat", 1e-3)):
        stats = d.get(key)
        if isinstance(stats, Mapping) and stats.get("percentile"):
            return _percentiles(stats, scale)
    return None, None, {}


def _number(value: Any) -> float:
    """A finite number from fio's JSON (0 when absent); ValueError names what it got."""
    if value is None or value == "":
        return 0.0
    v = float(value) if isinstance(value, (int, float, str)) and not isinstance(value, bool) else math.nan
    if not math.isfinite(v):
        raise ValueError(f"{str(value)[:20]!r} is not a number")
    return v


def _direction(d: Mapping[str, Any]) -> tuple[int, int, int, str]:
    """(bytes, ios, runtime_ms, problem) of one direction block, fio 2.x or 3.x. A job fio
    could not time (runtime 0 with I/O done) or that printed a negative figure is a problem."""
    runtime = int(_number(d.get("runtime")))
    kib = 1 if "io_kbytes" in d or "bw_bytes" in d else 1024  # fio 3.x: io_bytes is bytes; 2.x: KiB
    nbytes = int(_number(d.get("io_bytes"))) * kib
    ios = (
        int(_number(d["total_ios"]))
        if "total_ios" in d
        else round(_number(d.get("iops")) * max(runtime, 0) / 1000)
    )
    negative = [
        k for k in ("io_bytes", "bw", "bw_bytes", "iops", "runtime", "total_ios") if _number(d.get(k)) < 0
    ]
    problem = f"fio printed a negative {negative[0]}" if negative else ""
    if not problem and runtime <= 0 and (nbytes > 0 or ios > 0 or _number(d.get("bw")) != 0):
        problem = "fio printed a runtime of 0 ms for a job that did I/O"
    # fio prints bw as io_bytes * 1000 / runtime (bw in KiB/s before 3.x): when they disagree
    # the file was edited or damaged, and which figure is right cannot be told
    reported = _number(d["bw_bytes"]) if "bw_bytes" in d else _number(d["bw"]) * 1024 if "bw" in d else None
    if not problem and reported is not None and runtime > 0:
        expected = nbytes * 1000 / runtime
        if abs(expected - reported) > 0.01 * max(expected, reported) + 2048:
            problem = (
                f"fio's io_bytes / runtime ({expected / 1e9:.3g} GB/s) disagree with its bw "
                f"({reported / 1e9:.3g} GB/s)"
            )
    if problem:
        return max(nbytes, 0), max(ios, 0), max(runtime, 0), problem
    return nbytes, ios, runtime, ""


def _options(value: Any) -> dict[str, str]:
    """fio's "global options" / "job options": an object; in client/server output a list
    of objects (one per server), merged here."""
    items = [value] if isinstance(value, Mapping) else value if isinstance(value, list) else []
    return {str(k): str(v) for item in items if isinstance(item, Mapping) for k, v in item.items()}


def _parts_of(entry: Mapping[str, Any], host: str, global_options: Mapping[str, str]) -> list[FioPart]:
    options = {**global_options, **_options(entry.get("job options"))}
    parts = []
    for direction in DIRECTIONS:
        d = entry.get(direction)
        if not isinstance(d, Mapping):
            continue
        nbytes, ios, runtime, problem = _direction(d)
        if ios <= 0 and nbytes <= 0 and not problem:
            continue
        p50, p99, bins = _latency(d)
        parts.append(
            FioPart(
                job=str(entry.get("jobname", "fio")),
                host=host,
                direction=direction,
                bytes=nbytes,
                ios=ios,
                runtime_ms=runtime,
                p50_ms=p50,
                p99_ms=p99,
                bins=bins,
                options=options,
                problem=problem,
                bw_cv=_bw_cv(d),
            )
        )
    return parts


def _bw_cv(d: Mapping[str, Any]) -> float | None:
    """The bandwidth samples' coefficient of variation, when fio took two or more."""
    mean, dev, n = _number(d.get("bw_mean")), _number(d.get("bw_dev")), _number(d.get("bw_samples"))
    return round(dev / mean, 4) if mean > 0 and dev >= 0 and n >= 2 else None


def parse_document(doc: Mapping[str, Any], host: str | None = None) -> FioDoc:
    """Parts of one fio document. `host` names the machine for local runs (fio does not
    write it); client/server entries carry their own `hostname`."""
    global_options = _options(doc.get("global options"))
    local_host = host or str(doc.get("hostname") or "unknown")
    parts: list[FioPart] = []
    refused: list[str] = []
    error = 0
    if "client_stats" in doc:
        stats = doc["client_stats"] if isinstance(doc["client_stats"], list) else []
        entries = [e for e in stats if isinstance(e, Mapping) and e.get("jobname") != ALL_CLIENTS]
        # a host is the node: two servers on one host (different ports) are that one host
        names = [str(e.get("hostname") or local_host) for e in entries]
    else:
        entries = [j for j in list_at(doc, "jobs") if isinstance(j, Mapping)]
        names = [local_host] * len(entries)
    for e, name in zip(entries, names):
        # a name the document gives is checked here, the caller's by the reader of records
        if (host is None or "client_stats" in doc) and (why := hosts_why([name])):
            refused.append(why)
            continue
        parts += _parts_of(e, name, global_options)
        error = error or int(_number(e.get("error")))
    ts_ms = int(_number(doc.get("timestamp_ms")) or _number(doc.get("timestamp")) * 1000)
    return FioDoc(
        version=str(doc.get("fio version", "unknown")),
        timestamp_ms=ts_ms,
        error=error,
        parts=tuple(parts),
        global_options=global_options,
        refused=tuple(dict.fromkeys(refused)),
    )


def parse_fio(text: str, host: str | None = None) -> FioDoc:
    return parse_document(load_document(text), host)


# ---- summing ------------------------------------------------------------------------------


class LatencyPart(Protocol):
    """Anything with an I/O count and latency figures (fio parts, sums, iobench host results)."""

    @property
    def ios(self) -> int: ...
    @property
    def p50_ms(self) -> float | None: ...
    @property
    def p99_ms(self) -> float | None: ...
    @property
    def bins(self) -> Mapping[int, int]: ...


def percentile_from_bins(bins: Mapping[int, int], p: float) -> float | None:
    """The p-th percentile (ms) of a latency histogram (ns → count): the smallest bucket
    value at which the cumulative count reaches p% of all samples."""
    total = sum(bins.values())
    if total <= 0:
        return None
    need = total * p / 100.0
    seen = 0
    for value in sorted(bins):
        seen += bins[value]
        if seen >= need:
            return value * 1e-6
    return max(bins) * 1e-6


def merge_latency(parts: Sequence[LatencyPart]) -> tuple[float | None, float | None, dict[int, int]]:
    """(p50, p99, merged bins): exact from histograms when every part has one."""
    if parts and all(p.bins for p in parts):
        merged: dict[int, int] = {}
        for p in parts:
            for k, v in p.bins.items():
                merged[k] = merged.get(k, 0) + v
        return percentile_from_bins(merged, 50.0), percentile_from_bins(merged, 99.0), merged
    with_p50 = [(p.p50_ms, p.ios) for p in parts if p.p50_ms is not None and p.ios > 0]
    weight = sum(ios for _, ios in with_p50)
    p50 = sum(ms * ios for ms, ios in with_p50) / weight if weight else None
    p99s = [p.p99_ms for p in parts if p.p99_ms is not None]
    return p50, (max(p99s) if p99s else None), {}


def sum_parts(parts: Sequence[FioPart]) -> FioSum:
    """Add up parts of one job and direction (clones and/or hosts)."""
    if not parts:
        raise ValueError("nothing to sum")
    per_bytes: dict[str, int] = {}
    per_runtime: dict[str, int] = {}
    for p in parts:
        per_bytes[p.host] = per_bytes.get(p.host, 0) + p.bytes
        per_runtime[p.host] = max(per_runtime.get(p.host, 0), p.runtime_ms)
    p50, p99, bins = merge_latency(parts)
    return FioSum(
        job=parts[0].job,
        direction=parts[0].direction,
        hosts=tuple(per_bytes),
        parts=len(parts),
        bytes=sum(p.bytes for p in parts),
        ios=sum(p.ios for p in parts),
        runtime_ms=max(p.runtime_ms for p in parts),
        p50_ms=p50,
        p99_ms=p99,
        per_host_bytes=per_bytes,
        per_host_runtime_ms=per_runtime,
        bins=bins,
        options=parts[0].options,
        problem=next((p.problem for p in parts if p.problem), ""),
        bw_cv=max((p.bw_cv for p in parts if p.bw_cv is not None), default=None),
    )


def group_parts(parts: Iterable[FioPart]) -> list[FioSum]:
    """One sum per (job name, direction), in the order fio printed them."""
    groups: dict[tuple[str, str], list[FioPart]] = {}
    for p in parts:
        groups.setdefault((p.job, p.direction), []).append(p)
    return [sum_parts(g) for g in groups.values()]


def rate(amount: float, ms: float) -> float:
    """Per second from an amount over milliseconds (0 when no time passed)."""
    return amount * 1000.0 / ms if ms > 0 else 0.0


def procs_of(s: FioSum) -> int:
    """Processes behind a sum: clones are listed one by one without group_reporting; with
    it, each part (one per fio server) stands for `numjobs` of them."""
    try:
        numjobs = max(1, int(_number(s.options.get("numjobs", "1"))))
    except ValueError:
        numjobs = 1
    grouped = s.options.get("group_reporting", "") not in ("", "0")
    return max(s.parts, numjobs * (s.parts if grouped else len(s.hosts)))


def exceeds_physical_bound(per_host_bw_GBps: Mapping[str, float]) -> bool:
    return any(v > PHYSICAL_MAX_HOST_GBPS for v in per_host_bw_GBps.values())
