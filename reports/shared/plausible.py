"""One reader of numbers: is a figure one the hardware could have given?

Round one refused what is not a number (NaN, strings). Numbers that parse but no machine can
produce still went through: `bw_GBps: 1e308` beside `per_host_bw_GBps: {"vm": 95}` turned a
failing storage test into PASS; one nccl-tests row at busbw 1e9 made a failing import
`unjudged`; `bytes_per_sample: 1e308` made an infinite demand "within the budget". Each
figure is checked here against a physical range for its unit: no bandwidth above the
fastest link or storage class in the catalog times MARGIN (per rank or per host; an
aggregate times its hosts), no count or size beyond any cluster; and each field is of its
type ("failed": 5, "in_place": "yes" are no record).

A record with such a figure is skipped and named (reason starting with SUSPECT), never
judged; `not_judged` turns those lines into one `missing` line for the verdict, so a run
with them is never `pass` (`incomplete` at best) and a `fail` stays `fail`.
Pure: no IO but the catalog (read once).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

SUSPECT = "beyond physical limits: "
# headroom over the fastest catalog figure: in-switch reduction (NVLS, SHARP) gives busbw
# above the link rate, a page cache reads faster than any disk; 4x covers both with room
MARGIN = 4.0
MAX_BYTES = 1 << 60  # one op or one storage test moving more than an EiB: no
MAX_COUNT = 10_000_000  # ranks, nodes, processes, GPUs
MAX_SECONDS = 366 * 86400.0  # one measurement longer than a year


# a run id names a directory: letters, digits, '.', '_', '-'; the one rule, for
# reports.shared.records.check_run_id and the column reader (an empty one named no run)
RUN_ID_PATTERN = r"[A-Za-z0-9._-]{1,128}"
_RUN_ID = re.compile(RUN_ID_PATTERN)


@functools.cache
def max_GBps() -> float:
    """MARGIN x the fastest link or storage class figure in the catalog (GB/s)."""
    from reports.shared import catalog

    rates = [float(catalog.link(n).GBps) for n in catalog.names("link")]
    for n in catalog.names("storage class"):
        sc = catalog.storage_class(n)
        rates += [float(sc.read_GBps), float(sc.write_GBps)]
    return MARGIN * max(rates)


def _num(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _over(name: str, value: Any, limit: float, unit: str) -> str:
    if _num(value) and value > limit:
        return f"{SUSPECT}{name} is {value:.4g}{unit}, above {limit:.4g}{unit}"
    return ""


# the type of each field a record check reads beyond its figures (reports.shared.records NET_FIGURES,
# IO_FIGURES); tests/unit/test_vocabularies.py holds them to the NetRecord and IoRecord fields
NET_STR = ("run_id", "ts", "op", "scope", "backend", "dtype", "redop", "device")
NET_BOOL = ("in_place",)
NET_INT = ("count", "root", "iters", "warmup", "group", "schema")
IO_STR = ("run_id", "ts", "workload", "direction", "path", "scope", "backend", "failed")
IO_BOOL = ("cache_suspect",)
IO_INT = ("block_size", "schema")


def _types(obj: Mapping[str, Any], strs: Iterable[str], bools: Iterable[str], ints: Iterable[str]) -> str:
    for k in strs:
        if k in obj and not isinstance(obj[k], str):
            return f"{k} is {type(obj[k]).__name__}: expected text"
    for k in bools:
        if k in obj and not isinstance(obj[k], bool):
            return f"{k} is {str(obj[k])[:40]!r}: expected true or false"
    for k in ints:
        if k in obj and (isinstance(obj[k], bool) or not isinstance(obj[k], int) or abs(obj[k]) > MAX_BYTES):
            return f"{k} is {str(obj[k])[:40]!r}: expected an integer"
    return ""


def record_why(kind: str, obj: Mapping[str, Any]) -> str:
    """Why a net or io record object (already through records.check_figures: numbers are
    finite and >= 0) is not a measurement, or "" when it may be judged."""
    rid = obj.get("run_id")
    if isinstance(rid, str) and not _RUN_ID.fullmatch(rid):
        return f"run_id {rid[:40]!r} is not a run id (letters, digits, '.', '_', '-')"
    bw = max_GBps()
    if kind == "net":
        why = _types(obj, NET_STR, NET_BOOL, NET_INT)
        checks = [
            # one rank's figures are a copy in its own memory (nccl-tests on 1 GPU), no link's
            *(
                [("busbw_GBps", bw, " GB/s"), ("algbw_GBps", bw, " GB/s")]
                if not (_num(obj.get("ranks")) and obj["ranks"] < 2)
                else []
            ),
            ("bytes", MAX_BYTES, " B"),
            ("wrong", MAX_BYTES, ""),  # wrong elements: never more than the bytes moved
            ("ranks", MAX_COUNT, ""),
            ("nodes", MAX_COUNT, ""),
            ("time_s", MAX_SECONDS, " s"),
        ]
    else:
        why = _types(obj, IO_STR, IO_BOOL, IO_INT)
        if not why and "direct" in obj and obj["direct"] is not None and not isinstance(obj["direct"], bool):
            why = f"direct is {str(obj['direct'])[:40]!r}: expected true, false or null"
        raw_hosts = obj.get("per_host_bw_GBps")
        per_host: dict[str, Any] = raw_hosts if isinstance(raw_hosts, dict) else {}
        nodes: Any = obj.get("nodes")
        hosts = max(1, len(per_host), nodes if _num(nodes) else 1)
        checks = [
            ("bw_GBps", bw * min(hosts, MAX_COUNT), " GB/s"),
            ("bytes", MAX_BYTES, " B"),
            ("procs", MAX_COUNT, ""),
            ("nodes", MAX_COUNT, ""),
            ("runtime_s", MAX_SECONDS, " s"),
            ("iops", 1e12, ""),
        ]
        for host, v in per_host.items():
            why = why or _over(f"per_host_bw_GBps.{host}", v, bw, " GB/s")
        sum_hosts = sum(v for v in per_host.values() if _num(v))
        if not why and per_host and _num(obj.get("bw_GBps")) and obj["bw_GBps"] > 2 * sum_hosts + 1.0:
            why = (
                f"{SUSPECT}bw_GBps is {obj['bw_GBps']:.4g} GB/s, more than its hosts' "
                f"{sum_hosts:.4g} GB/s together"
            )
    for name, limit, unit in checks:
        why = why or _over(name, obj.get(name), limit, unit)
    return why


def net_table_why(table: Any) -> dict[int, str] | None:
    """The rows of a net table (pyarrow) whose figures are beyond physical limits: row index
    -> reason (the vectorised record_why, for the column reader); None when an optional
    column has the wrong type, so the line reader names each bad line."""
    import pyarrow as pa
    import pyarrow.compute as pc

    t = table.schema
    kinds = (
        (NET_STR, pa.types.is_string),
        (NET_BOOL, pa.types.is_boolean),
        (NET_INT, pa.types.is_int64),
    )
    for names, ok in kinds:
        for n in names:
            if n in t.names and not (ok(t.field(n).type) or pa.types.is_null(t.field(n).type)):
                return None
            if n in t.names and table.column(n).null_count and n not in ("schema",):
                return None
    columns = {n: table.column(n) for n in t.names}
    bad: dict[int, str] = {}
    limits = {
        "busbw_GBps": (max_GBps(), " GB/s"),
        "algbw_GBps": (max_GBps(), " GB/s"),
        "bytes": (MAX_BYTES, " B"),
        "ranks": (MAX_COUNT, ""),
        "nodes": (MAX_COUNT, ""),
        "time_s": (MAX_SECONDS, " s"),
    }
    for name, (limit, unit) in limits.items():
        col = columns.get(name)
        if col is None:
            continue
        over = pc.fill_null(pc.greater(col, limit), False)
        if name in ("algbw_GBps", "busbw_GBps") and "ranks" in columns:  # one rank copies in its own memory
            over = pc.and_(over, pc.fill_null(pc.greater_equal(columns["ranks"], 2), True))
        for i in pc.indices_nonzero(over).to_pylist():
            bad.setdefault(i, _over(name, col[i].as_py(), limit, unit))
    return bad


def not_judged(skipped: Iterable[Any]) -> list[str]:
    """One `missing` line for the verdict when records were skipped as beyond physical
    limits (SkippedLine-like: file, line, reason), else none."""
    sus = [s for s in skipped if str(getattr(s, "reason", "")).startswith(SUSPECT)]
    if not sus:
        return []
    first = sus[0]
    return [
        f"{len(sus)} record(s) with figures beyond physical limits were not judged "
        f"(first {first.file}:{first.line}: {first.reason[len(SUSPECT) :]})"
    ]


def unread_schema(skipped: Iterable[Any]) -> list[str]:
    """One `missing` line for the verdict when records were skipped for a schema this stoker
    does not understand (a newer stoker's): what they measured is not judged, so the verdict
    cannot pass on the rest (SkippedLine-like: file, line, reason)."""
    foreign = [s for s in skipped if _FOREIGN_SCHEMA.fullmatch(str(getattr(s, "reason", "")))]
    if not foreign:
        return []
    first = foreign[0]
    return [
        f"{len(foreign)} record(s) of a schema this stoker does not understand were not judged "
        f"(first {first.file}:{first.line}: {first.reason}); judge them with the stoker that wrote them"
    ]


_FOREIGN_SCHEMA = re.compile(r"schema .* not understood")


# --- settings of specs and workloads: the largest value that still describes a cluster or job.
# A spec's bandwidth may be a whole file system's or a whole node's (a parallel file system
# serves TB/s to a cluster), so its bound is cluster-sized: 10 PB/s; what it catches is the
# overflow (1e308), not an optimistic vendor.
MAX_SETTING_GBPS = 1e7
_SETTING_LIMITS: tuple[tuple[str, float], ...] = (
    ("GBps", MAX_SETTING_GBPS),
    ("Gbps", 8 * MAX_SETTING_GBPS),  # bits
    ("bytes_per_param", 64.0),
    ("bytes_per_token", 1e9),
    ("bytes_per_sample", 1e12),
    ("samples_per_s_per_gpu", 1e9),
    ("params", 1e15),
    ("global_batch_tokens", 1e12),
    ("grad_bytes", float(MAX_BYTES)),
    ("bucket_bytes", float(MAX_BYTES)),
    ("compute_s", MAX_SECONDS),
    ("interval_minutes", MAX_SECONDS / 60),
    ("price_per_gpu_hour", 1e4),
    ("capacity_TiB", 1e7),
    ("bytes", float(MAX_BYTES)),  # a message or file size (after the *_bytes / bytes_per_* above)
    ("gpus_per_node", 1024.0),
)


def setting_why(where: str, value: Any) -> str:
    """Why a number of a spec or workload at `where` (e.g. `dataloader.bytes_per_sample`) is
    beyond any cluster, or "" — what Fields.number / Fields.integer add to their checks."""
    if not _num(value):
        return ""
    leaf = where.rsplit(".", 1)[-1]
    limit = float(MAX_COUNT) if isinstance(value, int) else 1e15
    for key, lim in _SETTING_LIMITS:
        if key in leaf or key in where.split("."):
            limit = lim
            break
    if value > limit:
        return f"at most {limit:.4g} (a larger value is beyond any cluster or job)"
    return ""


def derived_why(what: str, value: float | None) -> str:
    """Why a derived figure (a demand, an idle share) cannot be judged: not finite."""
    if value is not None and not math.isfinite(value):
        return f"{what} is {value}: the workload's figures overflow; check them"
    return ""


def screen(
    records: list[Any], file: str, to_dict: Callable[[Any], Mapping[str, Any]]
) -> tuple[list[Any], list[tuple[str, int, str]]]:
    """Records built elsewhere (imports) through record_why: (kept, [(file, index, reason)]).
    `to_dict` is reports.shared.records.to_dict (passed in: records imports this module)."""
    kept, refused = [], []
    for i, r in enumerate(records, 1):
        why = record_why(str(r.kind), to_dict(r))
        if why:
            refused.append((str(r.extra.get("source", file)), i, why))
        else:
            kept.append(r)
    return kept, refused
