"""What both nccl-tests readers build (pure): the text log's (nccl_tests.py) and the `-J`
JSON's (nccl_json.py): the parse result, op and version names, one record from a row's lead
columns and one timing group, and the manifest line."""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reports.ingest import nccl_per_iter
from reports.ingest.nccl_fast import BACKEND, context_extra, world_record
from reports.ingest.nccl_fast import Context as _Context
from reports.ingest.nccl_rows import busbw_why, figures, is_na, number
from reports.shared.ops import OPS, algbw_share, bus_factor, ranks_from_factor
from reports.shared.records import NetRecord

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
    tables: int = 0  # tables seen, read or skipped (a log of NCCL's lines alone has none)
    refused: int = 0  # tables skipped for their host names: the file then is not read at all


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


# bytes per element of nccl-tests' type names: size / (count * word) is the rank count for the
# ops whose printed count is one rank's share (all_gather, reduce_scatter, alltoall: common.cu
# prints max(sendBytes, expectedBytes) and paramCount), 1 for the others
_WORD = {
    "half": 2, "float": 4, "double": 8, "bfloat16": 2, "int8": 1, "uint8": 1, "int32": 4,
    "uint32": 4, "int64": 8, "uint64": 8, "f8e4m3": 1, "f8e5m2": 1, "char": 1, "int": 4,
}  # fmt: skip


@dataclass(frozen=True, kw_only=True, slots=True)
class Inferred:
    """What a table that never names its test says of itself: the op, the rank count (0: not
    told) and, for each, what it was read from (the record's `inferred`, docs/contract.md)."""

    op: str
    ranks: int
    why: tuple[tuple[str, str], ...]


def _shares(lead: Mapping[str, Any]) -> int | None:
    """size / (count * word): the rank count when the printed count is one rank's share."""
    size, count = number(str(lead.get("size", ""))), number(str(lead.get("count", "")))
    word = _WORD.get(str(lead.get("type", "")))
    if not size or not count or word is None:
        return None
    k = size / (count * word)
    return round(k) if k >= 1 and abs(k - round(k)) < 1e-9 else None


def _ranks_from(f: float | None, twice: bool) -> int:
    """n from a bus factor: 2(n-1)/n (twice) or (n-1)/n; 0 when the factor tells nothing."""
    if f is None:
        return 0
    n = 2 / (2 - f) if twice and 1.03 < f < 2 else 1 / (1 - f) if not twice and 0.3 < f < 0.97 else 0
    return round(n) if n >= 2 else 0


def infer_table(lead: Mapping[str, Any], timing: Mapping[str, Any], ranks: int) -> Inferred | None:
    """The op (and, unless `ranks` is known, the rank count) of a table whose log never names
    its test, from what only one op prints: the root and redop columns, the printed count's
    share of the size (`_shares`), and the bus factor busbw/algbw (nccl-tests'
    doc/PERFORMANCE.md: 2(n-1)/n for all_reduce, (n-1)/n for all_gather / reduce_scatter /
    alltoall, 1 for broadcast / reduce / sendrecv). all_gather and alltoall print the same
    columns and factor: the table is read as all_gather, and `why` says it may be alltoall
    (their busbw means the same). None when nothing tells (an old layout's 2-rank table)."""
    algbw, busbw = number(str(timing.get("algbw", ""))), number(str(timing.get("busbw", "")))
    root = number(str(lead.get("root", "-1")))
    has_root, has_redop = "root" in lead, "redop" in lead
    reduces = str(lead.get("redop", "none")).lower() not in ("none", "")
    f = busbw / algbw if algbw and busbw and algbw >= 0.05 else None
    near = lambda x: f is not None and abs(f - x) <= 0.03 * x  # noqa: E731 - 2 printed decimals
    shares = _shares(lead)
    # the columns decide where they are printed: 2.x prints root for every op; before it, the
    # ops with a root printed it and the rest a redop
    cols = has_root or has_redop
    if ranks == 1 or (f is not None and f < 0.05 and algbw and algbw >= 1):
        return None  # one rank: every op's busbw is 0 and its count its whole buffer
    if root is not None and root >= 0:
        return Inferred(
            op="reduce" if reduces else "broadcast",
            ranks=ranks,
            why=(("op", "a root >= 0 and the redop column"),),
        )
    # the family: one rank's share printed (shares > 1), else the whole buffer; then the factor
    if shares is not None and shares > 1:
        family = "share"
    elif shares == 1 and cols:
        family = "whole"
    elif f is not None and f > 1.03:
        family = "whole"
    elif f is not None and f < 0.97:
        family = "share"
    else:
        family = "whole" if f is not None and near(1.0) and has_root else ""
    if family == "share":
        n = ranks or shares or _ranks_from(f, False)
        if n and f is not None and not near(bus_factor("all_gather", n)):
            return None  # the count and the factor disagree: not this reader's to settle
        op = "reduce_scatter" if reduces else "all_gather"
        told = "the count is one rank's share of the size" if shares else "busbw / algbw"
    elif family == "whole" and (reduces or not has_redop):
        n = ranks or _ranks_from(f, True) or (2 if near(1.0) and has_root else 0)
        if n and f is not None and not near(bus_factor("all_reduce", n)):
            return None
        op, told = "all_reduce", "busbw / algbw"
    elif family == "whole" and has_redop and has_root:
        n, op, told = ranks, "sendrecv", ""
    else:
        return None
    why: list[tuple[str, str]] = [
        (
            "op",
            "all_gather or alltoall: redop none, root -1, one rank's share"
            if op == "all_gather"
            else "the redop and root columns and busbw / algbw",
        )
    ]
    if n and not ranks and told:
        why.append(("ranks", told))
    return Inferred(op=op, ranks=n if told or ranks else ranks, why=tuple(why))


def same_factor(op: str, got: Inferred) -> bool:
    """Whether `op` prints the columns and bus factor the table was read as (a file named
    alltoall_perf.log holding what reads as all_gather: yes; one named all_reduce: no)."""
    n = got.ranks or 8
    return bus_factor(op, n) == bus_factor(got.op, n) and (op in ("reduce", "broadcast")) == (
        got.op in ("reduce", "broadcast")
    )


def infer_op(lead: Mapping[str, Any], timing: Mapping[str, Any], ranks: int) -> str | None:
    """infer_table's op alone."""
    got = infer_table(lead, timing, ranks)
    return got.op if got else None


def row_record(
    ctx: _Context, lead: Mapping[str, Any], timing: Mapping[str, Any], in_place: bool
) -> NetRecord | str | None:
    """One record; None for a group printed as N/A (tests without an in-place mode); a
    string saying what is wrong when the figures are not figures."""
    if all(is_na(timing.get(k)) for k in ("time", "algbw", "busbw")):
        return None
    f, problem = figures(lead, timing, algbw_share(ctx.op, ctx.ranks))
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


def place_on_nodes(records: Sequence[NetRecord], gpus_per_node: int | None) -> list[NetRecord]:
    """Imported tables that name no host and no node count (a table pasted alone) placed by
    the spec: more ranks than a node has GPUs span ceil(ranks / gpus_per_node) nodes, so a
    24-rank table on a spec of 8 GPUs per node is judged as the 3-node run it was, never as
    one node's links. Marked in `inferred`; records that say where they ran are kept as they are."""
    if not gpus_per_node:
        return list(records)
    out = []
    for r in records:
        if r.backend != BACKEND or r.hosts or r.nodes or r.ranks <= gpus_per_node:
            out.append(r)
            continue
        nodes = -(-r.ranks // gpus_per_node)
        said = {
            **r.extra.get("inferred", {}),
            "nodes": f"{r.ranks} ranks over the spec's {gpus_per_node} GPUs per node",
        }
        out.append(dataclasses.replace(r, nodes=nodes, extra={**r.extra, "inferred": said}))
    return out
