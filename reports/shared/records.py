"""The record schema (docs/contract.md "Records"): the only thing that joins measurement to
judgement. `net.jsonl` and `io.jsonl` hold one JSON object per line, appended and flushed
as each measurement finishes, so an interrupted run keeps what it measured.

Records are frozen dataclasses. Fields beyond the contract's minimum are optional; keys
this version does not know (from a newer stoker, or imported tools) are kept in `extra`
and written back out unchanged.
"""

from __future__ import annotations

import dataclasses
import json
import math
import operator
import os
import posixpath
import re
import secrets
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO, TypeVar

from reports.shared import ops
from reports.shared.errors import UsageError
from reports.shared.hostnames import why_not_plain
from reports.shared.plausible import RUN_ID_PATTERN

SCHEMA = 1
NET_FILE = "net.jsonl"
IO_FILE = "io.jsonl"
MANIFEST_FILE = "manifest.jsonl"
HOST_FILE = "host.jsonl"  # node inventory, `kind: "host"` (netbench/inventory)
COUNTER_FILE = "counters.jsonl"  # soak: counter deltas per pass, `kind: "counter"` (netbench/soak.py)
COMPUTE_FILE = "compute.jsonl"  # matmul appetite, `kind: "compute"` (netbench/compute)
# NCCL's own account of stoker's GPU runs: NCCL_DEBUG=INFO, one file per rank (%h.%p.log),
# read by the report as an imported log's NCCL lines are (reports/ingest/nccl_debug_files.py)
NCCL_DEBUG_DIR = "nccl-debug"

OPS = ops.OPS  # the op names, defined once in reports/shared/ops.py
# the `scope` a net record carries; `stoker net --scopes` names the same scopes, but says
# `pairs` for the records of scope `pair` (CLI_NET_SCOPES, derived)
NET_SCOPES = ("world", "intra-node", "inter-node", "pair", "groups")
CLI_NET_SCOPES = tuple("pairs" if s == "pair" else s for s in NET_SCOPES)
# the scopes swept as one test each, which a figure under its threshold sweeps again
# (`confirmation`); the pairs and the groups search confirm their own way (second pass, search)
CONFIRMED_SCOPES = tuple(s for s in NET_SCOPES if s not in ("pair", "groups"))
IO_SCOPES = ("local", "shared")  # the `scope` an io record carries: a node's own disk, or shared
# the `backend` a net record of stoker's own carries; `--backend` also takes `auto`
BACKENDS = ("nccl", "gloo", "mpi")
# Every tool a record or a baseline names, one spelling each: what a person or another
# program writes (`NCCL`, `FIO`, `nccl_tests`) read as it. A tool not here is compared as
# written, case-folded.
TOOL_ALIASES: Mapping[str, str] = {
    **{t: t for t in (*BACKENDS, "fio", "torch.save", "torch.dcp", "nccl-tests")},
    "nccl_tests": "nccl-tests",
    "nccltests": "nccl-tests",
    "torch_save": "torch.save",
    "torch_dcp": "torch.dcp",
    "openmpi": "mpi",
    "mpi4py": "mpi",
}
# The tools that measure the same collectives with the same library: nccl-tests drives NCCL
# as stoker's own nccl backend does, so their busbw is one figure.
SAME_FIGURE: Mapping[str, str] = {"nccl-tests": "nccl"}


def tool_name(name: str) -> str:
    """The one spelling of a tool (TOOL_ALIASES), for comparing figures; "" stays ""."""
    folded = name.strip().casefold()
    return TOOL_ALIASES.get(folded, folded)


def tool_figure(name: str) -> str:
    """The tool as a figure's identity: tools that measure one figure (SAME_FIGURE) are one."""
    t = tool_name(name)
    return SAME_FIGURE.get(t, t)


def norm_path(path: str) -> str:
    """One spelling of a directory: `/scratch/`, `//scratch` and `/scratch/.` are `/scratch`."""
    if not path:
        return path
    p = posixpath.normpath(path)
    return "/" + p.lstrip("/") if p.startswith("/") else p


BACKEND_CHOICES = ("auto", *BACKENDS)
# the storage workload families `stoker io --workloads` takes, and the `workload` names of the
# io records each family writes (launchers, iobench and the judgement all read these)
IO_WORKLOADS_OF = {
    "checkpoint": ("checkpoint_write", "checkpoint_read"),
    "dataloader": ("dataloader_read",),
    "metadata": ("metadata",),
}
IO_FAMILIES = tuple(IO_WORKLOADS_OF)
IO_WORKLOADS = tuple(w for ws in IO_WORKLOADS_OF.values() for w in ws)


# A run id names directories (stoker-results/<run_id>, <path>/.stoker-<run_id>/): one
# path component, never "." or "..", so it cannot climb out of where it is put.
_RUN_ID = re.compile(RUN_ID_PATTERN)


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
    """One collective at one size in one scope (one line of an nccl-tests table). Pair and
    groups records also carry `rail` (the local rank index of every member) among the extra
    keys, written at the top level like `pass` and `round`; `rail_of` reads it."""

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


def rail_of(rec: NetRecord) -> int:
    """The rail a record measured: its `rail`, or 0 for records of one rank per node and those
    written before rails were measured."""
    rail = rec.extra.get("rail", 0)
    return rail if isinstance(rail, int) and rail >= 0 else 0


def is_confirmation(extra: Mapping[str, Any]) -> bool:
    """A record of a test measured again because its first figure was under its threshold
    (`confirmation: true`, docs/contract.md): judged beside the first measurement, never pooled
    with it (reports.judging.confirm)."""
    return extra.get("confirmation") is True


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


def per_node(count: int, nodes: int) -> int:
    """`count` processes (ranks, writers, workers) of all `nodes` together, per node: the one
    derivation, for a net sweep (its ranks) and for an io record that does not say (procs_per_node)."""
    return max(1, round(count / max(1, nodes)))


def procs_per_node(rec: IoRecord) -> int:
    """The processes (checkpoint writers, dataloader workers, fio jobs) each node of an io record ran:
    its `procs_per_node`, written when it was measured where every node ran as many; else, for a
    record without it (imported, older, nodes that ran different numbers), `per_node` of its procs."""
    given = rec.extra.get("procs_per_node")
    if isinstance(given, int) and not isinstance(given, bool) and 1 <= given <= max(1, rec.procs):
        return given
    return per_node(rec.procs, rec.nodes)


Record = NetRecord | IoRecord
R = TypeVar("R", NetRecord, IoRecord)


def to_dict(rec: Record) -> dict[str, Any]:
    """The JSON object of a record; `extra` keys are flattened back to the top level."""
    names, values = _getter(type(rec))  # one getter per class: dataclasses.fields() per record is slow
    out = dict(zip(names, values(rec)))
    for name, value in out.items():
        if isinstance(value, tuple):  # hosts
            out[name] = list(value)
    for k, v in rec.extra.items():
        out.setdefault(k, v)
    return out


def _json_object(rec: Record) -> dict[str, Any]:
    """to_dict for json alone: a tuple is left a tuple (json writes it as the list to_dict
    makes of it), which spares an isinstance per field per record."""
    names, values = _getter(type(rec))
    out = dict(zip(names, values(rec)))
    for k, v in rec.extra.items():
        out.setdefault(k, v)
    return out


_FIELD_NAMES: dict[type, frozenset[str]] = {}
_ORDERED: dict[type, tuple[str, ...]] = {}
_GETTERS: dict[type, tuple[tuple[str, ...], Callable[[Any], tuple[Any, ...]]]] = {}


def _ordered_fields(cls: type) -> tuple[str, ...]:
    # dataclasses.fields() per record cost imports 10%: once per class
    if cls not in _ORDERED:
        _ORDERED[cls] = tuple(f.name for f in dataclasses.fields(cls) if f.name != "extra")
    return _ORDERED[cls]


def _getter(cls: type) -> tuple[tuple[str, ...], Callable[[Any], tuple[Any, ...]]]:
    # the field names and one attrgetter for all of them: a getattr per field per record was
    # a third of writing 10^6 imported records
    if cls not in _GETTERS:
        names = _ordered_fields(cls)
        get = operator.attrgetter(*names)  # one name would give the value, not a 1-tuple
        _GETTERS[cls] = (names, get if len(names) > 1 else lambda rec: (get(rec),))
    return _GETTERS[cls]


def _field_names(cls: type) -> frozenset[str]:
    # dataclasses.fields() is slow enough to matter when reading 10^5 records.
    if cls not in _FIELD_NAMES:
        _FIELD_NAMES[cls] = frozenset(f.name for f in dataclasses.fields(cls)) - {"extra"}
    return _FIELD_NAMES[cls]


def from_dict(cls: type[R], obj: Mapping[str, Any]) -> R:
    """Build a record from a JSON object; raises ValueError naming a missing field."""
    names = _field_names(cls)
    known = {k: v for k, v in obj.items() if k in names}
    extra = {k: v for k, v in obj.items() if k not in names}
    if "hosts" in known:
        known["hosts"] = tuple(str(h) for h in known["hosts"])
    for name in IO_MAPS:  # a map written as null holds nothing: an empty one, never None
        if name in known and known[name] is None:
            known[name] = {}
    try:
        return cls(**known, extra=extra)
    except TypeError as exc:  # missing required field
        raise ValueError(str(exc)) from None


# Figures a record's judgement rests on, as (name, integer): one rule table for both reading
# paths (reports.table.read checks them as columns, check_figures line by line), in the order they
# are tested so that both name the same reason. A NaN compares False with everything, so one
# NaN busbw made a starving component "ok"; a string made the judgement raise. Such a record
# is refused where it is read (reason naming the field), never judged.
NET_FIGURES = (
    ("time_s", False),
    ("algbw_GBps", False),
    ("busbw_GBps", False),
    ("nodes", True),
    ("ranks", True),
    ("bytes", True),
    ("wrong", True),
)
NET_OPTIONAL = ("time_min_s", "time_p50_s", "time_p99_s", "time_cv")
IO_FIGURES = (
    ("bw_GBps", False),
    ("iops", False),
    ("runtime_s", False),
    ("nodes", True),
    ("procs", True),
    ("bytes", True),
)
IO_MAPS = ("per_host_bw_GBps", "lat_ms")


def _required(cls: type) -> tuple[str, ...]:
    none = dataclasses.MISSING
    return tuple(f.name for f in dataclasses.fields(cls) if f.default is none and f.default_factory is none)


# the contract's minimum: the fields a net record must have, in the dataclass's order
NET_REQUIRED = _required(NetRecord)
assert {n for n, _ in NET_FIGURES} <= set(NET_REQUIRED)  # the column reader requires every net figure


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
    figures, optional, maps = (NET_FIGURES, NET_OPTIONAL, ()) if kind == "net" else (IO_FIGURES, (), IO_MAPS)
    for name, integer in figures:
        if name in obj and (why := _bad_number(name, obj[name], integer)):
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
    if why := hosts_why(obj.get("hosts") or ()):
        return why
    if kind != "net" and (why := hosts_why(obj.get("per_host_bw_GBps") or {})):
        return why
    # field types and physical range (one reader of numbers: reports/shared/plausible.py)
    from reports.shared.plausible import record_why

    return record_why(kind, obj)


def hosts_why(hosts: Iterable[str]) -> str:
    """Why a record's host names cannot be judged or acted on (reports/shared/hostnames.py: one
    plain node name each, at most MAX_HOST_LEN characters), or "" when they are fine."""
    for h in hosts:
        if why := why_not_plain(h):
            return f"host {str(h)[:40]!r} {why}"
    return ""


# json.dumps(obj, separators=(",", ":")) without making a JSONEncoder per call (a tenth of
# writing an imported record); the same output
_ENCODER = json.JSONEncoder(separators=(",", ":"))


class RecordWriter:
    """Appends records to a JSONL file, flushing and fsyncing each line so that a crash
    or Ctrl-C never loses a finished measurement."""

    def __init__(self, path: str | os.PathLike[str], *, sync_each: bool = True) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # never appended through a symlink planted at the record file's name
        nofollow = getattr(os, "O_NOFOLLOW", 0)
        self._fh: TextIO = open(
            self.path, "a", encoding="utf-8", opener=lambda p, flags: os.open(p, flags | nofollow, 0o644)
        )
        self._sync_each = sync_each  # False: one fsync at close (imports: 10^6 records, not 10^6 fsyncs)

    def write(self, rec: Record | Mapping[str, Any]) -> None:
        obj = dict(rec) if isinstance(rec, Mapping) else _json_object(rec)
        self._fh.write(_ENCODER.encode(obj) + "\n")
        if self._sync_each:
            self._fh.flush()
            os.fsync(self._fh.fileno())

    def close(self) -> None:
        if not self._sync_each and not self._fh.closed:
            self._fh.flush()
            os.fsync(self._fh.fileno())
        self._fh.close()

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def iter_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any] | None, str]]:
    """(line number, object or None, reason) for each non-blank line; never raises on bad data."""
    from reports.shared.safe_read import iter_lines, loads_line  # regular files, bounded JSON

    for n, line in iter_lines(path):
        if not line.strip():
            continue
        obj, why = loads_line(line)
        if why:
            yield n, None, why
            continue
        if not isinstance(obj, dict):
            yield n, None, "not a JSON object"
            continue
        yield n, obj, ""


def write_all(path: str | os.PathLike[str], records: Iterable[Record | Mapping[str, Any]]) -> int:
    """Append many records (used by importers); returns how many were written."""
    n = 0
    with RecordWriter(path, sync_each=False) as w:
        for rec in records:
            w.write(rec)
            n += 1
    return n
