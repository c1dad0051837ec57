"""nccl-tests output -> NetRecords (pure): stdout logs of any version and the `-J` JSON file.

Logs come as people keep them: launcher prefixes (`[1,0]<stdout>:` from `mpirun --tag-output`,
`0: ` from `srun -l`), NCCL INFO/WARN noise between lines, several tests in one file. The
table is read through its own header line (`size count type redop root time algbw busbw
#wrong ...`; old versions say `bytes N type op ... res`), so extra columns (-I per-iteration
statistics, timestamps) and per-op column sets of old versions all line up. Each table row
gives two records: out-of-place and in-place (`in_place`). The size column is the record's
`bytes` as docs/contract.md defines it (nccl-tests' own definition); time is printed in us.
Damaged files are read as far as they are sound: a row that is not all figures (cut short,
a word or `nan` where a number belongs; `reports.ingest.nccl_rows` checks it) gives no record
and is named by its line in the notes; comment markers stripped by a log viewer are no matter.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from reports.ingest import nccl_fast, nccl_per_iter
from reports.ingest.nccl_fast import BACKEND
from reports.ingest.nccl_fast import Context as _Context
from reports.ingest.nccl_log import _iter_sections, _Section
from reports.ingest.nccl_log import _sections as _sections  # re-exported: the line reader was here
from reports.ingest.nccl_log import looks_like_log as looks_like_log
from reports.ingest.nccl_log import strip_prefix as strip_prefix
from reports.ingest.nccl_rows import aligned, figures, is_na, number, row_fields, skipped_note
from reports.ops import OPS, bus_factor, ranks_from_factor
from reports.records import NetRecord, to_dict

# nccl-tests type names -> the dtype names stoker records use.
_DTYPES = {
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


def looks_like_json(obj: Any) -> bool:
    return isinstance(obj, Mapping) and isinstance(obj.get("results"), list) and "config" in obj


def _record(
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
    extra: dict[str, Any] = {"source": ctx.source}
    if ctx.graph is not None:
        extra["graph"] = ctx.graph
    if "error" in f:  # versions before 2.10 printed the largest error, not a count
        extra["max_error"] = f["error"]
    elif "wrong" not in f:
        extra["check"] = "off"
    ranks = ctx.ranks or ranks_from_factor(ctx.op, f["algbw"], f["busbw"])  # -J files name their devices
    per_iter = timing.get("per_iter")  # hook: issue 23, nccl-tests -I (reports/ingest/nccl_per_iter.py)
    if isinstance(per_iter, Mapping):
        if isinstance(per_iter.get("times_us"), list):
            extra["iter_times_us"] = per_iter["times_us"]
        slow = nccl_per_iter.stragglers(per_iter.get("per_process_max_times_us"), ctx.process_hosts)
        if slow is not None:
            extra["stragglers"] = slow
    redop = str(lead.get("redop") or "none")
    return NetRecord(
        run_id=ctx.run_id,
        ts=ctx.ts,
        hosts=ctx.hosts,
        nodes=len(set(ctx.hosts)),
        op=ctx.op,
        scope="world",
        ranks=ranks,
        backend=BACKEND,
        dtype=_DTYPES.get(dtype, dtype),
        bytes=int(f["size"]),
        time_s=f["time"] * 1e-6,
        algbw_GBps=f["algbw"],
        busbw_GBps=f["busbw"],
        wrong=int(f.get("wrong", 0)),
        count=int(f.get("count", 0)),
        redop=redop,
        root=int(f.get("root", -1)),
        in_place=in_place,
        iters=ctx.iters,
        warmup=ctx.warmup,
        device=ctx.device,
        extra=extra,
        **nccl_per_iter.stats(timing),
    )


def _hosts_of(ranks: Mapping[int, tuple[str, str]]) -> tuple[tuple[str, ...], str]:
    hosts = tuple(sorted({h for h, _ in ranks.values()}))
    devices = sorted({d for _, d in ranks.values() if d})
    return hosts, (devices[0] if len(devices) == 1 else ",".join(devices) or "unknown")


def _manifest(
    run_id: str,
    source: str,
    versions: Mapping[str, str],
    ranks: Mapping[int, tuple[str, str]],
    settings: Mapping[str, Any],
) -> dict[str, Any]:
    hosts, _ = _hosts_of(ranks)
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


def _largest_readable(sec: _Section) -> tuple[dict[str, str], dict[str, str]] | None:
    """(leading columns, first timing group) of the last row whose figures are all figures."""
    for _, row in reversed(sec.rows):
        tokens = aligned(sec.header, row)
        if isinstance(tokens, list):
            lead, groups = row_fields(sec.header, tokens)
            if groups and figures(lead, groups[0])[1] is None:
                return lead, groups[0]
    return None


def _infer(sec: _Section) -> str | None:
    """infer_op on the largest readable row (the one with a readable bus factor)."""
    got = _largest_readable(sec)
    return infer_op(got[0], got[1], len(sec.ranks)) if got else None


def _section_ranks(sec: _Section, op: str) -> int:
    """The rank count: the device lines, else the bus factor of the largest row, once for
    the whole table (a row printed as 0.06/0.11 would say 12 ranks; at >= 1 GB/s the two
    printed decimals are within 1%)."""
    if sec.ranks:
        return len(sec.ranks)
    got = _largest_readable(sec)
    algbw, busbw = (number(got[1].get("algbw", "")), number(got[1].get("busbw", ""))) if got else (None, None)
    return ranks_from_factor(op, algbw, busbw) if algbw and busbw and algbw >= 1.0 else 0


def parse_log(text: str, *, run_id: str, ts: str, source_name: str, op: str | None = None) -> Parsed:
    """All tables of an nccl-tests stdout log. `op` overrides what the log and file name say.
    A row that is not all figures (cut short, a word or 'nan' where a number belongs) gives
    no record and is named, with its line, in the notes."""
    # only "\n" ends a line: str.splitlines() also breaks at \x1c-\x1e, \x85 and \u2028, which
    # would shift every line number the notes name
    state = LogState()
    records = list(
        iter_log(text.split("\n"), run_id=run_id, ts=ts, source_name=source_name, op=op, state=state)
    )
    return state.parsed(records, run_id, source_name)


@dataclass(kw_only=True, slots=True)
class LogState:
    """What a streamed log leaves besides its records: notes, versions, averages, ranks."""

    notes: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    total: int = 0
    all_ranks: dict[int, tuple[str, str]] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    avgs: list[float] = field(default_factory=list)
    # a part of a log (reports/ingest/stream_chunks.py): the number of its first line, the
    # table being read before it (in) and at its last line (out; its rows already given)
    first_line: int = 1
    table: _Section | None = None

    def extend(self, part: LogState) -> None:
        """Add what the next part of the same log left, as one reading of both would."""
        self.notes += part.notes
        self.skipped += part.skipped
        self.total += part.total
        self.all_ranks.update(part.all_ranks)
        for k, v in part.versions.items():
            self.versions.setdefault(k, v)
        self.avgs += part.avgs

    def parsed(self, records: list[NetRecord], run_id: str, source_name: str) -> Parsed:
        notes = list(self.notes)
        if self.skipped:
            notes.append(skipped_note(source_name, self.skipped, self.total))
        settings = {"avg_bus_bandwidth_GBps": self.avgs} if self.avgs else {}
        return Parsed(
            records=records,
            manifest=_manifest(run_id, source_name, self.versions, self.all_ranks, settings),
            avg_busbw_GBps=self.avgs,
            notes=notes,
        )


def iter_log(
    lines: Iterable[str], *, run_id: str, ts: str, source_name: str, op: str | None, state: LogState
) -> Iterator[NetRecord]:
    """parse_log's records one by one, reading `lines` as they come (a file of any size in
    the memory of one table); notes and the rest go to `state`."""
    for ctx, got in _tables(lines, run_id=run_id, ts=ts, source_name=source_name, op=op, state=state):
        for item in got:
            yield item if isinstance(item, NetRecord) else nccl_fast.record(ctx, item)


def iter_log_lines(
    lines: Iterable[str], *, run_id: str, ts: str, source_name: str, op: str | None, state: LogState
) -> Iterator[str]:
    """iter_log's records as their JSON lines (json.dumps(to_dict(rec), separators=(",", ":"))),
    a plain row's without ever making its NetRecord."""
    fmt: nccl_fast.Lines | None = None
    for ctx, got in _tables(lines, run_id=run_id, ts=ts, source_name=source_name, op=op, state=state):
        if fmt is None or fmt.ctx != ctx:  # the tables of one log mostly share it: templates kept
            fmt = nccl_fast.Lines(ctx)
        line = fmt.line
        for item in got:
            yield (
                json.dumps(to_dict(item), separators=(",", ":"))
                if isinstance(item, NetRecord)
                else line(item)
            )


def _tables(
    lines: Iterable[str], *, run_id: str, ts: str, source_name: str, op: str | None, state: LogState
) -> Iterator[tuple[_Context, list[NetRecord | nccl_fast.Values]]]:
    """Each table's context and its records: a plain row's as nccl_fast values, any other's
    as the NetRecords _record makes (the general path, which names a row it cannot use)."""
    notes, skipped, all_ranks = state.notes, state.skipped, state.all_ranks
    layouts: dict[tuple[str, ...], nccl_fast.Layout | None] = {}
    end: list[_Section] = []
    sections = _iter_sections(
        lines, state.versions, state.avgs, first=state.first_line, start=state.table, end=end
    )
    for sec in sections:
        name = op or op_from_name(sec.program or "") or op_from_name(source_name) or _infer(sec)
        if name is None:
            notes.append(
                f"{source_name}: cannot tell which test printed the table at line {sec.rows[0][0]}; "
                "name the file after the test (e.g. all_gather_perf.log) or pass --op"
            )
            continue
        hosts, device = _hosts_of(sec.ranks)
        all_ranks.update(sec.ranks)
        ctx = _Context(
            op=name,
            run_id=run_id,
            ts=ts,
            hosts=hosts,
            ranks=_section_ranks(sec, name),
            device=device,
            warmup=sec.warmup,
            iters=sec.iters,
            source=source_name,
            graph=sec.graph,
        )
        if (key := tuple(sec.header)) not in layouts:
            if len(layouts) > 64:  # a garbled log's ever-new headers: bounded
                layouts.clear()
            layouts[key] = nccl_fast.layout(sec.header)
        lay = layouts[key]
        out: list[NetRecord | nccl_fast.Values] = []
        state.total += len(sec.rows)
        for n, row in sec.rows:
            if lay and (fast := nccl_fast.row_values(lay, row, name, ctx.ranks, _DTYPES)) is not None:
                out += fast
                continue
            tokens = aligned(sec.header, row)
            if isinstance(tokens, str):
                skipped.append((f"line {n}", tokens))
                continue
            lead, groups = row_fields(sec.header, tokens)
            got = [_record(ctx, lead, timing, in_place=i == 1) for i, timing in enumerate(groups[:2])]
            if problems := [g for g in got if isinstance(g, str)]:
                skipped.append((f"line {n}", problems[0]))  # a row is kept whole or not at all
                continue
            out += [g for g in got if isinstance(g, NetRecord)]
        yield ctx, out
    state.table = end[0] if end else None


def _int(value: Any, default: int = 0) -> int:
    v = number(str(value))
    return int(v) if v is not None and abs(v) < 2**62 else default


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def parse_json(
    obj: Mapping[str, Any], *, run_id: str, ts: str, source_name: str, op: str | None = None
) -> Parsed:
    """The `-J` file of nccl-tests >= 2.17: {config: {devices: [...]}, results: [...], ...}.
    Its `env` list (the whole environment of rank 0) is never copied anywhere. A result
    with a figure missing or not a number gives no record and is named in the notes."""
    config = _mapping(obj.get("config"))
    args = obj.get("args") if isinstance(obj.get("args"), list) else []
    program = str(args[0]) if args else ""
    results = obj.get("results") if isinstance(obj.get("results"), list) else []
    first = _mapping(results[0]) if results else {}
    name = (
        op
        or op_from_name(program)
        or op_from_name(str(first.get("experiment_name", "")))
        or op_from_name(source_name)
    )
    devices = config.get("devices") if isinstance(config.get("devices"), list) else []
    ranks = {
        _int(d.get("rank", i), i): (str(d.get("hostname", "unknown")), str(d.get("device_info", "")))
        for i, d in enumerate(devices)
        if isinstance(d, Mapping)
    }
    if name is None:
        return Parsed(
            records=[], manifest={}, notes=[f"{source_name}: cannot tell which test wrote it; pass --op"]
        )
    hosts, device = _hosts_of(ranks)
    ctx = _Context(
        op=name,
        run_id=run_id,
        ts=ts,
        hosts=hosts,
        ranks=len(ranks),
        device=device,
        warmup=_int(config.get("warmup_iters")),
        iters=_int(config.get("iterations")),
        source=source_name,
        graph=bool(config["graph"]) if "graph" in config else None,
        process_hosts=tuple(nccl_per_iter.process_hosts([d for d in devices if isinstance(d, Mapping)])),
    )
    records: list[NetRecord] = []
    skipped: list[tuple[str, str]] = []
    for n, res in enumerate(results):
        if not isinstance(res, Mapping):
            skipped.append((f"results[{n}]", "not an object"))
            continue
        lead = {k: res.get(k) for k in ("size", "count", "type", "redop", "root")}
        got: list[NetRecord | str | None] = []
        for key, in_place in (("out_of_place", False), ("in_place", True)):
            t = res.get(key)
            if not isinstance(t, Mapping):
                continue  # a test without that mode
            timing = {
                "time": t.get("time", t.get("cpu_time")),
                "algbw": t.get("alg_bw"),
                "busbw": t.get("bus_bw"),
                "wrong": t.get("nwrong"),
                "per_iter": res.get(f"{key}_per_iter"),
            }
            missing = [
                f
                for f, v in (
                    ("time", timing["time"]),
                    ("alg_bw", timing["algbw"]),
                    ("bus_bw", timing["busbw"]),
                )
                if v is None
            ]
            got.append(
                f"{key} has no {', '.join(missing)}" if missing else _record(ctx, lead, timing, in_place)
            )
        if problems := [g for g in got if isinstance(g, str)]:
            skipped.append((f"results[{n}]", problems[0]))
            continue
        if not any(isinstance(g, NetRecord) for g in got):
            skipped.append((f"results[{n}]", "no out_of_place or in_place figures"))
        records += [g for g in got if isinstance(g, NetRecord)]
    avg = number(str(_mapping(obj.get("average_bus_bandwidth")).get("bandwidth")))
    avgs = [avg] if avg is not None else []
    versions = {"nccl": nccl_version(obj["nccl_version"])} if "nccl_version" in obj else {}
    settings = {
        k: config[k] for k in ("warmup_iters", "iterations", "minimum_bytes", "maximum_bytes") if k in config
    }
    notes = (
        [skipped_note(source_name, skipped, len(results)).replace(" rows: ", " results: ")] if skipped else []
    )
    return Parsed(
        records=records,
        manifest=_manifest(run_id, source_name, versions, ranks, settings),
        avg_busbw_GBps=avgs,
        notes=notes,
    )


def parse_text(text: str, *, run_id: str, ts: str, source_name: str, op: str | None = None) -> Parsed | None:
    """Either format, told apart by content; None when it is neither."""
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            obj = json.loads(stripped)
        except (ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError
            obj = None
            if '"results"' in stripped[:1_000_000] and (
                '"config"' in stripped or '"nccl_version"' in stripped
            ):
                where = (
                    f" at line {exc.lineno}, column {exc.colno}"
                    if isinstance(exc, json.JSONDecodeError)
                    else ""
                )
                return Parsed(
                    records=[],
                    manifest={},
                    notes=[
                        f"{source_name}: nccl-tests -J JSON not readable{where} (cut short?); expected a whole JSON document"
                    ],
                )
        if looks_like_json(obj):
            return parse_json(obj, run_id=run_id, ts=ts, source_name=source_name, op=op)
    if looks_like_log(text):
        return parse_log(text, run_id=run_id, ts=ts, source_name=source_name, op=op)
    return None
