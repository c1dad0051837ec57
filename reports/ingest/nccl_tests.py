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

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from reports.ingest import nccl_fast
from reports.ingest.nccl_debug import DebugFacts, settings_of
from reports.ingest.nccl_fast import Context as _Context
from reports.ingest.nccl_json import looks_like_json, parse_json
from reports.ingest.nccl_log import Section, iter_sections, looks_like_log
from reports.ingest.nccl_records import (
    NCCL_DTYPES,
    Inferred,
    Parsed,
    hosts_of,
    import_manifest,
    infer_table,
    op_from_name,
    row_record,
    same_factor,
)
from reports.ingest.nccl_rows import aligned, figures, number, row_fields, skipped_note
from reports.shared.ops import ranks_from_factor
from reports.shared.records import NetRecord, hosts_why, to_dict


def _largest_readable(sec: Section) -> tuple[dict[str, str], dict[str, str]] | None:
    """(leading columns, first timing group) of the last row whose figures are all figures."""
    for _, row in reversed(sec.rows):
        tokens = aligned(sec.header, row)
        if isinstance(tokens, list):
            lead, groups = row_fields(sec.header, tokens)
            if groups and figures(lead, groups[0])[1] is None:
                return lead, groups[0]
    return None


def _infer(sec: Section) -> Inferred | None:
    """infer_table on the largest readable row (the one with a readable bus factor)."""
    got = _largest_readable(sec)
    return infer_table(got[0], got[1], known_ranks(sec)) if got else None


def known_ranks(sec: Section) -> int:
    """The rank count the device lines give when they are all there (ranks 0..n-1); 0 when
    some were cut off (a pasted excerpt that starts at `Rank 71`): the bus factor tells then."""
    n = len(sec.ranks)
    return n if n and max(sec.ranks) == n - 1 else 0


def _section_ranks(sec: Section, op: str) -> int:
    """The rank count: the device lines, else the bus factor of the largest row, once for
    the whole table (a row printed as 0.06/0.11 would say 12 ranks; at >= 1 GB/s the two
    printed decimals are within 1%)."""
    if n := known_ranks(sec):
        return n
    got = _largest_readable(sec)
    algbw, busbw = (number(got[1].get("algbw", "")), number(got[1].get("busbw", ""))) if got else (None, None)
    return ranks_from_factor(op, algbw, busbw) if algbw and busbw and algbw >= 1.0 else 0


def _where(
    sec: Section, debug: DebugFacts
) -> tuple[tuple[str, ...], int | None, tuple[tuple[str, str], ...]]:
    """The hosts, the node count (None: as many as the hosts) and what was inferred: the device
    lines name the hosts; without them, NCCL's INFO lines (`nRanks 16 nNodes 2`, the host in
    each `host:pid:tid [dev] NCCL INFO` prefix) say how many nodes ran, which scope the table is."""
    hosts, _ = hosts_of(sec.ranks)
    if hosts and known_ranks(sec):
        return hosts, None, ()
    if hosts:  # some device lines cut off: the hosts they name are not all the run's
        hosts = ()
    seen = tuple(sorted(debug.hosts))
    if debug.nnodes:
        if len(seen) == debug.nnodes:
            return seen, None, (("nodes", "NCCL INFO: nNodes and the hosts of its lines"),)
        return (), debug.nnodes, (("nodes", "NCCL INFO: nNodes"),)
    if seen:
        return seen, None, (("nodes", "the hosts of the NCCL INFO lines"),)
    return (), None, ()


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
    tables: int = 0
    refused: int = 0  # tables skipped for a host name no scheduler takes
    all_ranks: dict[int, tuple[str, str]] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    avgs: list[float] = field(default_factory=list)
    # a part of a log (reports/ingest/stream_chunks.py): the number of its first line, the
    # table being read before it (in) and at its last line (out; its rows already given)
    first_line: int = 1
    table: Section | None = None
    debug: DebugFacts = field(default_factory=DebugFacts)  # NCCL's own lines (nccl_debug.py)

    def extend(self, part: LogState) -> None:
        """Add what the next part of the same log left, as one reading of both would."""
        self.debug.extend(part.debug)
        self.notes += part.notes
        self.skipped += part.skipped
        self.total += part.total
        self.tables += part.tables
        self.refused += part.refused
        self.all_ranks.update(part.all_ranks)
        for k, v in part.versions.items():
            self.versions.setdefault(k, v)
        self.avgs += part.avgs

    def parsed(self, records: list[NetRecord], run_id: str, source_name: str) -> Parsed:
        notes = list(self.notes)
        if self.skipped:
            notes.append(skipped_note(source_name, self.skipped, self.total))
        settings: dict[str, Any] = {"avg_bus_bandwidth_GBps": self.avgs} if self.avgs else {}
        settings.update(settings_of(self.debug))  # NCCL_ALGO and the rest, as NCCL printed them
        manifest = import_manifest(run_id, source_name, self.versions, self.all_ranks, settings)
        if not self.debug.empty():
            manifest["nccl_debug"] = self.debug.to_dict()
        return Parsed(
            records=records,
            manifest=manifest,
            avg_busbw_GBps=self.avgs,
            notes=notes,
            tables=self.tables,
            refused=self.refused,
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
    as the NetRecords row_record makes (the general path, which names a row it cannot use)."""
    notes, skipped, all_ranks = state.notes, state.skipped, state.all_ranks
    layouts: dict[tuple[str, ...], nccl_fast.Layout | None] = {}
    end: list[Section] = []
    sections = iter_sections(
        lines,
        state.versions,
        state.avgs,
        first=state.first_line,
        start=state.table,
        end=end,
        debug=state.debug,
    )
    for sec in sections:
        state.tables += 1
        name = op or op_from_name(sec.program or "")
        guess = None if name else _infer(sec)
        named = None if name else op_from_name(source_name)
        if guess is not None and named is not None and not same_factor(named, guess):
            named = None  # the table's own columns and bus factor before the file's name
        name = name or named or (guess.op if guess else None)
        if name is None:
            notes.append(
                f"{source_name}: cannot tell which test printed the table at line {sec.rows[0][0]} "
                "(its columns and bus factor fit no one test); pass --op"
            )
            continue
        _, device = hosts_of(sec.ranks)
        hosts, nodes, inferred = _where(sec, sec.debug)
        if why := hosts_why(hosts):  # never judged, never acted on (reports/shared/hostnames.py)
            notes.append(f"{source_name}: skipped the table at line {sec.rows[0][0]}: {why}")
            state.refused += 1
            continue
        all_ranks.update(sec.ranks)
        ranks = _section_ranks(sec, name)
        if sec.assumed:
            inferred = (("columns", "no header line: nccl-tests' standard columns"), *inferred)
        if guess is not None and guess.op == name and named is None:
            inferred = (*guess.why, *inferred)
            ranks = ranks or guess.ranks
        if not ranks and sec.debug.nranks:
            ranks, inferred = sec.debug.nranks, (*inferred, ("ranks", "NCCL INFO: nRanks"))
        ctx = _Context(
            op=name,
            run_id=run_id,
            ts=ts,
            hosts=hosts,
            nodes=nodes,
            inferred=tuple(dict(inferred).items()),
            ranks=ranks,
            device=device,
            warmup=sec.warmup,
            iters=sec.iters,
            source=source_name,
            graph=sec.graph,
            split=len(sec.groups) > 1,
        )
        if (key := tuple(sec.header)) not in layouts:
            if len(layouts) > 64:  # a garbled log's ever-new headers: bounded
                layouts.clear()
            layouts[key] = nccl_fast.layout(sec.header)
        lay = layouts[key]
        out: list[NetRecord | nccl_fast.Values] = []
        state.total += len(sec.rows)
        for n, row in sec.rows:
            if (
                lay
                and (fast := nccl_fast.row_values(lay, row, name, ctx.ranks, NCCL_DTYPES, not ctx.split))
                is not None
            ):
                out += fast
                continue
            tokens = aligned(sec.header, row)
            if isinstance(tokens, str):
                skipped.append((f"line {n}", tokens))
                continue
            lead, groups = row_fields(sec.header, tokens)
            got = [row_record(ctx, lead, timing, in_place=i == 1) for i, timing in enumerate(groups[:2])]
            if problems := [g for g in got if isinstance(g, str)]:
                skipped.append((f"line {n}", problems[0]))  # a row is kept whole or not at all
                continue
            out += [g for g in got if isinstance(g, NetRecord)]
        yield ctx, out
    state.table = end[0] if end else None


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
