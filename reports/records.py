"""The record schema (docs/contract.md "Records"): the only thing that joins measurement to
judgement. `net.jsonl` and `io.jsonl` hold one JSON object per line, appended and flushed
as each measurement finishes, so an interrupted run keeps what it measured.

Records are frozen dataclasses. Fields beyond the contract's minimum are optional; keys
this version does not know (from a newer stoker, or imported tools) are kept in `extra`
and written back out unchanged.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
import re
import secrets
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO, TypeVar

from reports.errors import UsageError

SCHEMA = 1
NET_FILE = "net.jsonl"
IO_FILE = "io.jsonl"
MANIFEST_FILE = "manifest.jsonl"
HOST_FILE = "host.jsonl"  # node inventory, `kind: "host"` (netbench/inventory)
COMPUTE_FILE = "compute.jsonl"  # matmul appetite, `kind: "compute"` (netbench/compute; issue 27)

OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall", "sendrecv")
NET_SCOPES = ("world", "intra-node", "inter-node", "pair", "groups")
IO_SCOPES = ("local", "shared")


# A run id names directories (stoker-results/<run_id>, <path>/.stoker-<run_id>/): one
# path component, never "." or "..", so it cannot climb out of where it is put.
_RUN_ID = re.compile(r"[A-Za-z0-9._-]{1,128}")


def check_run_id(run_id: str, what: str = "STOKER_RUN_ID") -> str:
    """`run_id` unchanged when it is letters, digits, '.', '_' and '-' only, else UsageError."""
    if not _RUN_ID.fullmatch(run_id) or set(run_id) == {"."}:
        raise UsageError(
            f"{what}={run_id!r}: a run id is 1-128 letters, digits, '.', '_' or '-' "
            "(and not only dots); unset it or give one such as 'acceptance-42'"
        )
    return run_id


def new_run_id(environ: Mapping[str, str] | None = None) -> str:
    """A run id shared by every record of one run. Launchers export STOKER_RUN_ID so that
    every rank and node of one job agrees without talking first."""
    env = os.environ if environ is None else environ
    given = env.get("STOKER_RUN_ID", "").strip()
    if given:
        return check_run_id(given)
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + secrets.token_hex(3)


def utc_now() -> str:
    """ISO-8601 UTC with seconds, e.g. 2026-11-22T04:15:45Z."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


@dataclass(frozen=True, kw_only=True, slots=True)
class NetRecord:
    """One collective at one size in one scope (one line of an nccl-tests table)."""

    run_id: str
    ts: str
    hosts: tuple[str, ...]
    nodes: int
    op: str
    scope: str
    ranks: int
    backend: str
    dtype: str
    bytes: int
    time_s: float  # mean time of one op, averaged across ranks (nccl-tests -a 1)
    algbw_GBps: float  # bytes / time_s / 1e9
    busbw_GBps: float  # algbw * bus factor(op, ranks)
    wrong: int  # wrong elements found by the correctness check
    count: int = 0  # elements, as nccl-tests' "count" column
    redop: str = "none"
    root: int = -1
    in_place: bool = False
    iters: int = 0
    warmup: int = 0
    group: int = 0  # which group of this scope (e.g. node index for intra-node)
    time_min_s: float | None = None  # per-iteration statistics of the slowest rank
    time_p50_s: float | None = None
    time_p99_s: float | None = None
    time_cv: float | None = None
    device: str = "cpu"
    extra: dict[str, Any] = field(default_factory=dict)
    schema: int = SCHEMA
    kind: str = "net"


@dataclass(frozen=True, kw_only=True, slots=True)
class IoRecord:
    """One storage workload in one direction on one path, all nodes together."""

    run_id: str
    ts: str
    hosts: tuple[str, ...]
    nodes: int
    workload: str
    direction: str
    path: str
    scope: str
    procs: int
    bytes: int
    bw_GBps: float
    per_host_bw_GBps: dict[str, float]
    iops: float
    lat_ms: dict[str, float]
    runtime_s: float = 0.0
    backend: str = "fio"
    block_size: int = 0
    direct: bool | None = None
    cache_suspect: bool = False
    failed: str = ""  # why the measurement failed (e.g. disk full); empty when it did not
    extra: dict[str, Any] = field(default_factory=dict)
    schema: int = SCHEMA
    kind: str = "io"


Record = NetRecord | IoRecord
R = TypeVar("R", NetRecord, IoRecord)


def to_dict(rec: Record) -> dict[str, Any]:
    """The JSON object of a record; `extra` keys are flattened back to the top level."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(rec):
        if f.name == "extra":
            continue
        value = getattr(rec, f.name)
        out[f.name] = list(value) if isinstance(value, tuple) else value
    for k, v in rec.extra.items():
        out.setdefault(k, v)
    return out


@functools.cache
def _field_names(cls: type) -> frozenset[str]:
    # dataclasses.fields() is slow enough to matter when reading 10^5 records.
    return frozenset(f.name for f in dataclasses.fields(cls)) - {"extra"}


def from_dict(cls: type[R], obj: Mapping[str, Any]) -> R:
    """Build a record from a JSON object; raises ValueError naming a missing field."""
    names = _field_names(cls)
    known = {k: v for k, v in obj.items() if k in names}
    extra = {k: v for k, v in obj.items() if k not in names}
    if "hosts" in known:
        known["hosts"] = tuple(str(h) for h in known["hosts"])
    try:
        return cls(**known, extra=extra)
    except TypeError as exc:  # missing required field
        raise ValueError(str(exc)) from None


# Figures a record's judgement rests on. A NaN compares False with everything, so one NaN
# busbw made a starving component "ok"; a string made the judgement raise. Such a record
# is refused where it is read (reason naming the field), never judged.
_NET_FLOATS = ("time_s", "algbw_GBps", "busbw_GBps")
_NET_INTS = ("nodes", "ranks", "bytes", "wrong")
_NET_OPTIONAL = ("time_min_s", "time_p50_s", "time_p99_s", "time_cv")
_IO_FLOATS = ("bw_GBps", "iops", "runtime_s")
_IO_INTS = ("nodes", "procs", "bytes")
_IO_MAPS = ("per_host_bw_GBps", "lat_ms")


def _bad_number(name: str, value: Any, integer: bool = False) -> str:
    """Why `value` is not a valid figure ("" when it is): a finite number >= 0 (an integer
    where `integer`). JSON true/false are not numbers here, though Python says they are."""
    want = "an integer >= 0" if integer else "a finite number >= 0"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"{name} is {json.dumps(value)[:40]}: expected {want}"
    if integer and not isinstance(value, int):
        return f"{name} is {value!r}: expected {want}"
    if not math.isfinite(value) or value < 0:
        return f"{name} is {value!r}: expected {want}"
    return ""


def check_figures(kind: str, obj: Mapping[str, Any]) -> str:
    """Why the figures of a net or io record object are unusable, or "" when they are fine.
    Fields that are absent are left to from_dict (which names a missing required field)."""
    if "hosts" in obj and not (
        isinstance(obj["hosts"], list) and all(isinstance(h, str) for h in obj["hosts"])
    ):
        return "hosts is not a list of host names"
    if kind == "net":
        floats, ints, optional, maps = _NET_FLOATS, _NET_INTS, _NET_OPTIONAL, ()
    else:
        floats, ints, optional, maps = _IO_FLOATS, _IO_INTS, (), _IO_MAPS
    for name in floats:
        if name in obj and (why := _bad_number(name, obj[name])):
            return why
    for name in ints:
        if name in obj and (why := _bad_number(name, obj[name], integer=True)):
            return why
    for name in optional:
        if obj.get(name) is not None and (why := _bad_number(name, obj[name])):
            return why
    for name in maps:
        value = obj.get(name)
        if value is None:
            continue
        if not isinstance(value, dict):
            return f"{name} is not an object of figures"
        for k, v in value.items():
            if v is not None and (why := _bad_number(f"{name}.{k}", v)):
                return why
    return ""


class RecordWriter:
    """Appends records to a JSONL file, flushing and fsyncing each line so that a crash
    or Ctrl-C never loses a finished measurement."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh: TextIO = open(self.path, "a", encoding="utf-8")

    def write(self, rec: Record | Mapping[str, Any]) -> None:
        obj = dict(rec) if isinstance(rec, Mapping) else to_dict(rec)
        self._fh.write(json.dumps(obj, sort_keys=False, separators=(",", ":")) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(frozen=True, kw_only=True, slots=True)
class SkippedLine:
    file: str
    line: int
    reason: str


@dataclass(kw_only=True, slots=True)
class RecordSet:
    """Everything read from a results directory, with the lines that could not be read."""

    net: list[NetRecord] = field(default_factory=list)
    io: list[IoRecord] = field(default_factory=list)
    manifests: list[dict[str, Any]] = field(default_factory=list)
    host: list[dict[str, Any]] = field(
        default_factory=list
    )  # host.jsonl, kept as read (judging/inventory.py)
    compute: list[dict[str, Any]] = field(default_factory=list)  # compute.jsonl, as read (judging/compute.py)
    skipped: list[SkippedLine] = field(default_factory=list)


def iter_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any] | None, str]]:
    """(line number, object or None, reason) for each non-blank line; never raises on bad data."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                yield n, None, f"not JSON ({exc.msg})"
                continue
            if not isinstance(obj, dict):
                yield n, None, "not a JSON object"
                continue
            yield n, obj, ""


def read_records(directory: str | os.PathLike[str]) -> RecordSet:
    """Read net.jsonl, io.jsonl, host.jsonl and manifest.jsonl from `directory`. Truncated or garbled
    lines are skipped and listed in `skipped`, never raised."""
    from reports.columns import read_net

    d = Path(directory)
    out = RecordSet()
    for name, cls, kind, sink in ((NET_FILE, NetRecord, "net", out.net), (IO_FILE, IoRecord, "io", out.io)):
        p = d / name
        if not p.exists():
            continue
        if (
            kind == "net"
            and (read := read_net(p, functools.partial(from_dict, NetRecord), SCHEMA)) is not None
        ):
            out.net, refused = read  # type: ignore[assignment]  # a Sequence[NetRecord] read as columns
            out.skipped += [SkippedLine(file=name, line=n, reason=why) for n, why in refused]
            continue
        for n, obj, reason in iter_jsonl(p):
            if obj is None:
                out.skipped.append(SkippedLine(file=name, line=n, reason=reason))
                continue
            if obj.get("schema", SCHEMA) != SCHEMA:
                out.skipped.append(
                    SkippedLine(file=name, line=n, reason=f"schema {obj.get('schema')} not understood")
                )
                continue
            why = check_figures(kind, obj)
            if why:
                out.skipped.append(SkippedLine(file=name, line=n, reason=why))
                continue
            try:
                sink.append(from_dict(cls, obj))  # type: ignore[arg-type]
            except ValueError as exc:
                out.skipped.append(SkippedLine(file=name, line=n, reason=str(exc)))
    h = d / HOST_FILE
    if h.exists():
        for n, obj, reason in iter_jsonl(h):
            if obj is None or obj.get("kind") != "host":
                out.skipped.append(
                    SkippedLine(file=HOST_FILE, line=n, reason=reason or "not a kind: host record")
                )
            else:
                out.host.append(obj)
    _read_kind(d / COMPUTE_FILE, "compute", out.compute, out.skipped)  # issue 27
    m = d / MANIFEST_FILE
    if m.exists():
        for n, obj, reason in iter_jsonl(m):
            if obj is None:
                out.skipped.append(SkippedLine(file=MANIFEST_FILE, line=n, reason=reason))
            else:
                out.manifests.append(obj)
    return out


def _read_kind(path: Path, kind: str, sink: list[dict[str, Any]], skipped: list[SkippedLine]) -> None:
    """Append the `kind` records of a JSONL file to `sink`, as read; other lines to `skipped`."""
    if not path.exists():
        return
    for n, obj, reason in iter_jsonl(path):
        if obj is None or obj.get("kind") != kind:
            skipped.append(SkippedLine(file=path.name, line=n, reason=reason or f"not a kind: {kind} record"))
        else:
            sink.append(obj)


def write_all(path: str | os.PathLike[str], records: Iterable[Record]) -> int:
    """Append many records (used by importers); returns how many were written."""
    n = 0
    with RecordWriter(path) as w:
        for rec in records:
            w.write(rec)
            n += 1
    return n
