"""nccl-tests output -> NetRecords (pure): stdout logs of any version and the `-J` JSON file.

Logs come as people keep them: launcher prefixes (`[1,0]<stdout>:` from `mpirun --tag-output`,
`0: ` from `srun -l`), NCCL INFO/WARN noise between lines, several tests in one file. The
table is read through its own header line (`size count type redop root time algbw busbw
#wrong ...`; old versions say `bytes N type op ... res`), so extra columns (-I per-iteration
statistics, timestamps) and per-op column sets of old versions all line up. Each table row
gives two records: out-of-place and in-place (`in_place`). The size column is the record's
`bytes` as CONTRACT.md defines it (nccl-tests' own definition); time is printed in us.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reports.records import OPS, NetRecord

BACKEND = "nccl-tests"
# nccl-tests type names -> the dtype names stoker records use.
_DTYPES = {"half": "float16", "float": "float32", "double": "float64", "bfloat16": "bfloat16",
           "int8": "int8", "uint8": "uint8", "int32": "int32", "uint32": "uint32", "int64": "int64",
           "uint64": "uint64", "f8e4m3": "float8_e4m3", "f8e5m2": "float8_e5m2", "char": "int8", "int": "int32"}
_PREFIX = re.compile(r"^(?:\[\d+,\d+\]<std(?:out|err)>:\s?|\s*\d+:\s)")
_RANK = re.compile(r"^#\s+Rank\s+(\d+)(?:\s+Group\s+\d+)?\s+Pid\s+\d+\s+on\s+(\S+)\s+device\s+(\d+)\s+\[[^\]]*\]\s*(.*?)\s*$")
_START = re.compile(r"^#\s*Collective test starting:\s*(\S+)")
_PARAMS = re.compile(r"warmup iters:\s*(\d+)\s+iters:\s*(\d+)")
_GRAPH = re.compile(r"\bgraph:\s*(\d+)")   # -G N: N launches of a captured CUDA graph (absent before 2.9)
_TESTS_VERSION = re.compile(r"^#\s*nccl-tests version\s+(\S+)")
_NCCL_VERSION = re.compile(r"NCCL version\s+(\S+)")
_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*([0-9.eE+-]+)")
_HEADER = re.compile(r"#\s+(?:size|bytes)\s+(?:count|N)\s")
_COLS = {"size": "size", "bytes": "size", "count": "count", "n": "count", "type": "type", "redop": "redop",
         "op": "redop", "root": "root", "time": "time", "cputime": "time", "algbw": "algbw", "busbw": "busbw",
         "#wrong": "wrong", "wrong": "wrong", "error": "error", "res": "error"}


@dataclass(frozen=True, kw_only=True, slots=True)
class Parsed:
    """What one file held: the records, the environment it names, and the summary lines."""

    records: list[NetRecord]
    manifest: dict[str, Any]
    avg_busbw_GBps: list[float] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def op_from_name(name: str) -> str | None:
    """'all_reduce_perf' / '/opt/nccl-tests/build/alltoall_perf_mpi' / 'AllReduce' -> op name."""
    base = re.sub(r"[^a-z_]", "", name.rsplit("/", 1)[-1].lower().replace("-", "_"))
    squashed = base.replace("_", "")
    for op in sorted(OPS, key=len, reverse=True):  # longest first: all_reduce before reduce
        if op in base or op.replace("_", "") in squashed:
            return op
    return None


def ranks_from_factor(op: str, algbw: float, busbw: float) -> int:
    """Invert the bus factor when the log lost its device lines (0 when it cannot be told)."""
    if algbw <= 0 or busbw <= 0 or op in ("broadcast", "reduce", "sendrecv"):
        return 0
    f = busbw / algbw
    n = 2 / (2 - f) if op == "all_reduce" else 1 / (1 - f) if f < 1 else 0
    return max(0, round(n)) if n < 1e6 else 0


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
    algbw, busbw = _num(str(timing.get("algbw", ""))), _num(str(timing.get("busbw", "")))
    root = _num(str(lead.get("root", "-1")))
    reduces = str(lead.get("redop", "none")).lower() not in ("none", "")
    if root is not None and root >= 0:
        return "reduce" if reduces else "broadcast"
    if not algbw or not busbw or algbw < 0.05 or ranks < 2:
        return None  # tiny sizes print 0.00: no factor to read
    f = busbw / algbw
    near = lambda x: abs(f - x) <= 0.03 * x  # noqa: E731 - printed values carry 2 decimals
    if near(2 * (ranks - 1) / ranks) and ranks > 2:
        return "all_reduce"
    if near((ranks - 1) / ranks) and ranks > 2:
        return "reduce_scatter" if reduces else None
    if near(1.0) and not reduces and ranks != 2:
        return "sendrecv"
    return None


def strip_prefix(line: str) -> str:
    return _PREFIX.sub("", line, count=1).rstrip("\r\n")


def looks_like_log(text: str) -> bool:
    head = text[:200_000]
    return "busbw" in head and "algbw" in head and _HEADER.search(head) is not None


def looks_like_json(obj: Any) -> bool:
    return isinstance(obj, Mapping) and isinstance(obj.get("results"), list) and "config" in obj


def _num(tok: str) -> float | None:
    try:
        return float(tok)
    except ValueError:
        return None


@dataclass(kw_only=True, slots=True)
class _Section:
    """One test's worth of a log, gathered while reading."""

    program: str | None = None
    ranks: dict[int, tuple[str, str]] = field(default_factory=dict)   # rank -> (host, device name)
    header: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    warmup: int = 0
    iters: int = 0
    graph: bool | None = None


def _header_columns(body: str) -> list[str] | None:
    toks = body.lstrip("#").split()
    lowered = [t.lower() for t in toks]
    if "algbw" not in lowered or "busbw" not in lowered or not ({"size", "bytes"} & set(lowered)):
        return None
    return [_COLS.get(t, t) for t in lowered]


def _sections(lines: Iterable[str]) -> tuple[list[_Section], dict[str, str], list[float]]:
    sections: list[_Section] = [_Section()]
    versions: dict[str, str] = {}
    avgs: list[float] = []
    for raw in lines:
        line = strip_prefix(raw)
        body = line.strip()
        if not body:
            continue
        if m := _NCCL_VERSION.search(body):
            versions.setdefault("nccl", m.group(1))
        if not body.startswith("#"):
            if sections[-1].header and body.split()[0].isdigit():
                sections[-1].rows.append(body.split())
            continue
        cur = sections[-1]
        if m := _TESTS_VERSION.match(body):
            versions.setdefault("nccl-tests", m.group(1))
        elif m := _START.match(body):
            if cur.rows or cur.program:
                sections.append(cur := _Section())
            cur.program = m.group(1)
        elif m := _PARAMS.search(body):
            if cur.rows:  # a second test in the same file without a "starting" line
                sections.append(cur := _Section())
            cur.warmup, cur.iters = int(m.group(1)), int(m.group(2))
            if g := _GRAPH.search(body):
                cur.graph = int(g.group(1)) > 0
        elif m := _RANK.match(body):
            cur.ranks[int(m.group(1))] = (m.group(2), m.group(4))
        elif m := _AVG.match(body):
            avgs.append(float(m.group(1)))
        elif (cols := _header_columns(body)) is not None:
            cur.header = cols
    return [s for s in sections if s.rows], versions, avgs


def _row_fields(header: Sequence[str], row: Sequence[str]) -> tuple[dict[str, str], list[dict[str, str]]]:
    """Split a row by the header into its leading columns and one timing group per mode."""
    lead: dict[str, str] = {}
    groups: list[dict[str, str]] = []
    for name, tok in zip(header, row):
        if name == "time":
            groups.append({})
        if groups:
            groups[-1].setdefault(name, tok)
        else:
            lead[name] = tok
    return lead, groups


@dataclass(frozen=True, kw_only=True, slots=True)
class _Context:
    op: str
    run_id: str
    ts: str
    hosts: tuple[str, ...]
    ranks: int
    device: str
    warmup: int
    iters: int
    source: str
    graph: bool | None = None     # None: the log does not say


def _record(ctx: _Context, lead: Mapping[str, Any], timing: Mapping[str, Any], in_place: bool) -> NetRecord | None:
    size, time_us = _num(str(lead.get("size", ""))), _num(str(timing.get("time", "")))
    algbw, busbw = _num(str(timing.get("algbw", ""))), _num(str(timing.get("busbw", "")))
    if size is None or time_us is None or algbw is None or busbw is None:
        return None  # "N/A" in-place columns of tests without an in-place mode
    wrong = _num(str(timing.get("wrong", "")))
    max_error = _num(str(timing.get("error", "")))
    ranks = ctx.ranks or ranks_from_factor(ctx.op, algbw, busbw)
    root = _num(str(lead.get("root", "-1")))
    dtype = str(lead.get("type", "unknown"))
    extra: dict[str, Any] = {"source": ctx.source}
    if ctx.graph is not None:
        extra["graph"] = ctx.graph
    if max_error is not None:  # versions before 2.10 printed the largest error, not a count
        extra["max_error"] = max_error
    elif wrong is None:
        extra["check"] = "off"
    return NetRecord(
        run_id=ctx.run_id, ts=ctx.ts, hosts=ctx.hosts, nodes=len(set(ctx.hosts)), op=ctx.op, scope="world",
        ranks=ranks, backend=BACKEND, dtype=_DTYPES.get(dtype, dtype), bytes=int(size), time_s=time_us * 1e-6,
        algbw_GBps=algbw, busbw_GBps=busbw, wrong=int(wrong or 0), count=int(_num(str(lead.get("count", "0"))) or 0),
        redop=str(lead.get("redop", "none")), root=int(root if root is not None else -1), in_place=in_place,
        iters=ctx.iters, warmup=ctx.warmup, device=ctx.device, extra=extra,
    )


def _hosts_of(ranks: Mapping[int, tuple[str, str]]) -> tuple[tuple[str, ...], str]:
    hosts = tuple(sorted({h for h, _ in ranks.values()}))
    devices = sorted({d for _, d in ranks.values() if d})
    return hosts, (devices[0] if len(devices) == 1 else ",".join(devices) or "unknown")


def _manifest(run_id: str, source: str, versions: Mapping[str, str], ranks: Mapping[int, tuple[str, str]],
              settings: Mapping[str, Any]) -> dict[str, Any]:
    hosts, _ = _hosts_of(ranks)
    return {
        "schema": 1, "kind": "manifest", "tool": BACKEND, "run_id": run_id, "source": source,
        "host": hosts[0] if hosts else "unknown", "hosts": list(hosts), "versions": dict(sorted(versions.items())),
        "devices": [{"rank": r, "host": h, "name": d} for r, (h, d) in sorted(ranks.items())],
        "settings": dict(settings),
    }


def _infer(sec: _Section) -> str | None:
    """infer_op on the largest row (the one with a readable bus factor)."""
    for row in reversed(sec.rows):
        lead, groups = _row_fields(sec.header, row)
        if groups:
            return infer_op(lead, groups[0], len(sec.ranks))
    return None


def parse_log(text: str, *, run_id: str, ts: str, source_name: str, op: str | None = None) -> Parsed:
    """All tables of an nccl-tests stdout log. `op` overrides what the log and file name say."""
    sections, versions, avgs = _sections(text.splitlines())
    records: list[NetRecord] = []
    notes: list[str] = []
    all_ranks: dict[int, tuple[str, str]] = {}
    for sec in sections:
        name = op or op_from_name(sec.program or "") or op_from_name(source_name) or _infer(sec)
        if name is None:
            notes.append(f"{source_name}: cannot tell which test printed a table; name the file after the "
                         "test (e.g. all_gather_perf.log) or pass --op")
            continue
        hosts, device = _hosts_of(sec.ranks)
        all_ranks.update(sec.ranks)
        ctx = _Context(op=name, run_id=run_id, ts=ts, hosts=hosts, ranks=len(sec.ranks), device=device,
                       warmup=sec.warmup, iters=sec.iters, source=source_name, graph=sec.graph)
        for row in sec.rows:
            lead, groups = _row_fields(sec.header, row)
            for i, timing in enumerate(groups[:2]):
                if (rec := _record(ctx, lead, timing, in_place=i == 1)) is not None:
                    records.append(rec)
    settings = {"avg_bus_bandwidth_GBps": avgs} if avgs else {}
    return Parsed(records=records, manifest=_manifest(run_id, source_name, versions, all_ranks, settings),
                  avg_busbw_GBps=avgs, notes=notes)


def parse_json(obj: Mapping[str, Any], *, run_id: str, ts: str, source_name: str, op: str | None = None) -> Parsed:
    """The `-J` file of nccl-tests >= 2.17: {config: {devices: [...]}, results: [...], ...}.
    Its `env` list (the whole environment of rank 0) is never copied anywhere."""
    config = obj.get("config") or {}
    args = obj.get("args") or []
    program = str(args[0]) if args else ""
    results = [r for r in obj.get("results") or [] if isinstance(r, Mapping)]
    experiment = str(results[0].get("experiment_name", "")) if results else ""
    name = op or op_from_name(program) or op_from_name(experiment) or op_from_name(source_name)
    ranks = {int(d.get("rank", i)): (str(d.get("hostname", "unknown")), str(d.get("device_info", "")))
             for i, d in enumerate(config.get("devices") or []) if isinstance(d, Mapping)}
    if name is None:
        return Parsed(records=[], manifest={}, notes=[f"{source_name}: cannot tell which test wrote it; pass --op"])
    hosts, device = _hosts_of(ranks)
    ctx = _Context(op=name, run_id=run_id, ts=ts, hosts=hosts, ranks=len(ranks), device=device,
                   warmup=int(config.get("warmup_iters", 0)), iters=int(config.get("iterations", 0)), source=source_name,
                   graph=bool(config["graph"]) if "graph" in config else None)
    records: list[NetRecord] = []
    for res in results:
        for key, in_place in (("out_of_place", False), ("in_place", True)):
            t = res.get(key)
            if not isinstance(t, Mapping):
                continue
            timing = {"time": t.get("time", t.get("cpu_time")), "algbw": t.get("alg_bw"), "busbw": t.get("bus_bw"),
                      "wrong": t.get("nwrong")}
            lead = {k: res.get(k) for k in ("size", "count", "type", "redop", "root")}
            if (rec := _record(ctx, lead, timing, in_place)) is not None:
                records.append(rec)
    avg = (obj.get("average_bus_bandwidth") or {}).get("bandwidth")
    avgs = [float(avg)] if isinstance(avg, (int, float)) else []
    versions = {"nccl": nccl_version(obj["nccl_version"])} if "nccl_version" in obj else {}
    settings = {k: config[k] for k in ("warmup_iters", "iterations", "minimum_bytes", "maximum_bytes") if k in config}
    return Parsed(records=records, manifest=_manifest(run_id, source_name, versions, ranks, settings),
                  avg_busbw_GBps=avgs)


def parse_text(text: str, *, run_id: str, ts: str, source_name: str, op: str | None = None) -> Parsed | None:
    """Either format, told apart by content; None when it is neither."""
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            obj = json.loads(stripped)
        except json.JSONDecodeError:
            obj = None
        if looks_like_json(obj):
            return parse_json(obj, run_id=run_id, ts=ts, source_name=source_name, op=op)
    if looks_like_log(text):
        return parse_log(text, run_id=run_id, ts=ts, source_name=source_name, op=op)
    return None
