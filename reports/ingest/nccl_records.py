"""What both nccl-tests readers build (pure): the text log's (nccl_tests.py) and the `-J`
JSON's (nccl_json.py): the parse result, op and version names, one record from a row's lead
columns and one timing group, and the manifest line."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from reports.ingest import nccl_per_iter
from reports.ingest.nccl_fast import BACKEND, context_extra, world_record
from reports.ingest.nccl_fast import Context as _Context
from reports.ingest.nccl_rows import busbw_why, figures, is_na, number
from reports.ops import OPS, bus_factor, ranks_from_factor
from reports.records import NetRecord

# nccl-tests type names -> the dtype names stoker records use.
NCCL_DTYPES = {
    "half": "float16",
    "float": "float32",
    "double": "float64",
    "bfloat16": "bfloat16",
    "int8": "int8",
    "uint8": "uint8",
    "int32": "int32",
    "uint32": "uint32",
    "int64": "int64",
    "uint64": "uint64",
    "f8e4m3": "float8_e4m3",
    "f8e5m2": "float8_e5m2",
    "char": "int8",
    "int": "int32",
}


@dataclass(frozen=True, kw_only=True, slots=True)
class Parsed:
    """What one file held: the records, the environment it names, and the summary lines."""

    records: list[NetRecord]
    manifest: dict[str, Any]
    avg_busbw_GBps: list[float] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@functools.lru_cache(maxsize=256)  # asked once per table: a 250 MB log has ~50k tables
def op_from_name(name: str) -> str | None:
    """'all_reduce_perf' / '/opt/nccl-tests/build/alltoall_perf_mpi' / 'AllReduce' -> op name."""
    base = re.sub(r"[^a-z_]", "", name.rsplit("/", 1)[-1].lower().replace("-", "_"))
    squashed = base.replace("_", "")
    for op in sorted(OPS, key=len, reverse=True):  # longest first: all_reduce before reduce
        if op in base or op.replace("_", "") in squashed:
            return op
    return None


def nccl_version(code: Any) -> str:
    """NCCL_VERSION_CODE -> '2.27.3' (major*10000 + minor*100 + patch since 2.9; 1000/100 before)."""
    try:
        c = int(code)
    except (TypeError, ValueError):
        return str(code)
    if c >= 20900:
        return f"{c // 10000}.{c % 10000 // 100}.{c % 100}"
    return f"{c // 1000}.{c % 1000 // 100}.{c % 100}"


def infer_op(lead: Mapping[str, Any], timing: Mapping[str, Any], ranks: int) -> str | None:
    """The op of a table whose log never names its test (e.g. `slurm-1234.out` without the
    "Collective test starting" line of recent versions), from what only one op prints:
    root and redop columns and the bus factor busbw/algbw. None when still ambiguous
    (all_gather vs alltoall both print redop none, root -1 and factor (n-1)/n)."""
    algbw, busbw = number(str(timing.get("algbw", ""))), number(str(timing.get("busbw", "")))
    root = number(str(lead.get("root", "-1")))
    reduces = str(lead.get("redop", "none")).lower() not in ("none", "")
    if root is not None and root >= 0:
        return "reduce" if reduces else "broadcast"
    if not algbw or not busbw or algbw < 0.05 or ranks < 2:
        return None  # tiny sizes print 0.00: no factor to read
    f = busbw / algbw
    near = lambda x: abs(f - x) <= 0.03 * x  # noqa: E731 - printed values carry 2 decimals
    if near(bus_factor("all_reduce", ranks)) and ranks > 2:
        return "all_reduce"
    if near(bus_factor("reduce_scatter", ranks)) and ranks > 2:
        return "reduce_scatter" if reduces else None
    if near(bus_factor("sendrecv", ranks)) and not reduces and ranks != 2:
        return "sendrecv"
    return None


def row_record(
    ctx: _Context, lead: Mapping[str, Any], timing: Mapping[str, Any], in_place: bool
) -> NetRecord | str | None:
    """One record; None for a group printed as N/A (tests without an in-place mode); a
    string saying what is wrong when the figures are not figures."""
    if all(is_na(timing.get(k)) for k in ("time", "algbw", "busbw")):
        return None
    f, problem = figures(lead, timing)
    if problem:
        return problem
    dtype = str(lead.get("type", "unknown"))
    extra = context_extra(ctx)
    if "error" in f:  # versions before 2.10 printed the largest error, not a count
        extra["max_error"] = f["error"]
    elif "wrong" not in f:
        extra["check"] = "off"
    ranks = ctx.ranks or ranks_from_factor(ctx.op, f["algbw"], f["busbw"])  # -J files name their devices
    if not ctx.split and (
        why := busbw_why(
            ctx.op, ctx.ranks, f["algbw"], f["busbw"], str(timing.get("algbw")), str(timing.get("busbw"))
        )
    ):
        return why
    per_iter = timing.get("per_iter")  # nccl-tests -I (reports/ingest/nccl_per_iter.py)
    if isinstance(per_iter, Mapping):
        if isinstance(per_iter.get("times_us"), list):
            extra["iter_times_us"] = per_iter["times_us"]
        slow = nccl_per_iter.stragglers(per_iter.get("per_process_max_times_us"), ctx.process_hosts)
        if slow is not None:
            extra["stragglers"] = slow
    redop = str(lead.get("redop") or "none")
    return world_record(
        ctx,
        extra,
        ranks=ranks,
        dtype=NCCL_DTYPES.get(dtype, dtype),
        bytes=int(f["size"]),
        time_s=f["time"] * 1e-6,
        algbw_GBps=f["algbw"],
        busbw_GBps=f["busbw"],
        wrong=int(f.get("wrong", 0)),
        count=int(f.get("count", 0)),
        redop=redop,
        root=int(f.get("root", -1)),
        in_place=in_place,
        **nccl_per_iter.stats(timing),
    )


def hosts_of(ranks: Mapping[int, tuple[str, str]]) -> tuple[tuple[str, ...], str]:
    hosts = tuple(sorted({h for h, _ in ranks.values()}))
    devices = sorted({d for _, d in ranks.values() if d})
    return hosts, (devices[0] if len(devices) == 1 else ",".join(devices) or "unknown")


def import_manifest(
    run_id: str,
    source: str,
    versions: Mapping[str, str],
    ranks: Mapping[int, tuple[str, str]],
    settings: Mapping[str, Any],
) -> dict[str, Any]:
    hosts, _ = hosts_of(ranks)
    return {
        "schema": 1,
        "kind": "manifest",
        "tool": BACKEND,
        "run_id": run_id,
        "source": source,
        "host": hosts[0] if hosts else "unknown",
        "hosts": list(hosts),
        "versions": dict(sorted(versions.items())),
        "devices": [{"rank": r, "host": h, "name": d} for r, (h, d) in sorted(ranks.items())],
        "settings": dict(settings),
    }
