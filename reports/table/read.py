"""The one reader: a results directory's records as a typed table (docs/architecture.md:
records -> table -> evidence -> judgement -> render).

`net.jsonl` is read as columns (pyarrow) when it is clean JSON of the contract's types: a
1,000-node acceptance run writes ~680k net records (~300 MB), and one Python object per
record costs ~20 µs to parse and build. Anything else (NaN, a string where a figure belongs,
a truncated line, a blank line) is read line by line, each bad line named — and gives the
same type: `NetTable`, whose `frame` (pandas, one row per record) is what evidence is
computed from, and whose `records()` are the NetRecord objects, built on first use and only
for the rows asked for (`where`). The figures are checked by one rule table
(reports.shared.records.NET_FIGURES), vectorised here and per line there.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reports.shared.errors import UsageError
from reports.shared.records import (
    COMPUTE_FILE,
    COUNTER_FILE,
    HOST_FILE,
    IO_FILE,
    MANIFEST_FILE,
    NET_FIGURES,
    NET_FILE,
    NET_OPTIONAL,
    SCHEMA,
    IoRecord,
    NetRecord,
    check_figures,
    from_dict,
    hosts_why,
    is_confirmation,
    iter_jsonl,
)
from reports.table.frame import ALL_COLUMNS as _ALL_COLUMNS
from reports.table.frame import FRAME_COLUMNS as FRAME_COLUMNS  # the columns evidence reads
from reports.table.frame import frame_of
from reports.table.parse import NOT_PREFETCHED, parse, take_prefetched, typed
from reports.table.parse import forget_prefetched as forget_prefetched  # ... and drops it untaken
from reports.table.parse import prefetch as prefetch  # `stoker report` starts the parse early

if TYPE_CHECKING:
    import pandas as pd


class NetTable:
    """The net records of a results directory as columns. Not a list: code that needs
    NetRecord objects asks for them (`records()`, `where(mask)`), so a 1,000-node run builds
    only the few it looks at."""

    def __init__(
        self, frame: pd.DataFrame, table: Any = None, records: list[NetRecord] | None = None
    ) -> None:
        self.frame = frame  # FRAME_COLUMNS + host, host2, hosts, pair_a, pair_b, n_hosts
        self._table = table  # pyarrow.Table of the rows read as columns (None: built from records)
        self._records = records  # the NetRecords of the rows, once built
        self._tail: list[NetRecord] = []  # records appended after the read (imports)

    @classmethod
    def of(cls, records: Iterable[NetRecord]) -> NetTable:
        """The table of records already built (the line reader, imports, tests)."""
        recs = list(records)
        return cls(records_frame(recs), None, recs)

    def __len__(self) -> int:
        return len(self.frame)

    def _head(self) -> list[NetRecord]:
        if self._records is None:
            names = self._table.column_names
            cols = [self._table.column(n).to_pylist() for n in names]
            # arrow fills a key a line lacks with null: leave it out, as the line did
            self._records = [
                from_dict(NetRecord, {k: v for k, v in zip(names, row) if v is not None})
                for row in zip(*cols)
            ]
        return self._records

    def records(self) -> list[NetRecord]:
        """Every record, in file order (imports last)."""
        return self._head() + self._tail

    def where(self, mask: Any) -> list[NetRecord]:
        """The records of the rows where `mask` (a boolean array over `frame`) is true, built
        for those rows only."""
        import numpy as np

        rows = np.flatnonzero(np.asarray(mask, dtype=bool))
        if not len(rows):
            return []
        if self._records is not None or self._table is None:
            every = self.records()
            return [every[i] for i in rows]
        n = self._table.num_rows
        part = NetTable(self.frame.iloc[:0], _rows_of(self._table, rows[rows < n]))
        return [*part._head(), *(self._tail[i - n] for i in rows[rows >= n])]

    def subset(self, mask: Any) -> NetTable:
        """The table of the rows where `mask` (a boolean array over `frame`) is true."""
        import numpy as np

        rows = np.flatnonzero(np.asarray(mask, dtype=bool))
        if len(rows) == len(self.frame):
            return self
        frame = self.frame.iloc[rows].reset_index(drop=True)
        if self._records is not None or self._table is None:
            every = self.records()
            return NetTable(frame, None, [every[i] for i in rows])
        n = self._table.num_rows
        part = NetTable(frame, _rows_of(self._table, rows[rows < n]))
        part._tail = [self._tail[i - n] for i in rows[rows >= n]]
        return part

    def scope(self, *scopes: str) -> list[NetRecord]:
        """The records of these scopes (the groups search has tens of records among 10^5)."""
        return self.where(self.frame["scope"].isin(scopes).to_numpy())

    def extend(self, more: Iterable[NetRecord]) -> None:
        """Append records (imports) after those read."""
        import pandas as pd

        more = list(more)
        if more:
            self._tail += more
            self.frame = pd.concat([self.frame, records_frame(more)], ignore_index=True)

    def run_ids(self) -> set[str]:
        return {str(x) for x in self.frame["run_id"].unique()}


def _rows_of(table: Any, rows: Any) -> Any:
    """The rows `rows` (ascending, distinct) of a pyarrow table, by a mask: a filter works
    chunk by chunk, where a take joins each column's chunks first (~0.3 s for 42 rows of
    1.75M)."""
    import numpy as np
    import pyarrow as pa

    keep = np.zeros(table.num_rows, dtype=bool)
    keep[rows] = True
    return table.filter(pa.array(keep))


def records_frame(net: Iterable[NetRecord]) -> pd.DataFrame:
    """The frame of records already built (small inputs: the line reader, tests, imports)."""
    import pandas as pd

    rows = []
    for r in net:
        distinct = sorted(set(r.hosts))
        a, b = (distinct[0], distinct[1]) if len(distinct) == 2 else (None, None)
        rows.append(
            (
                r.run_id,
                r.op,
                r.scope,
                r.backend,
                r.ranks,
                r.nodes,
                r.bytes,
                r.time_s,
                r.algbw_GBps,
                r.busbw_GBps,
                r.wrong,
                r.group,
                r.in_place,
                r.extra.get("pass"),
                r.device,
                r.time_cv,
                r.extra.get("round"),
                "stragglers" in r.extra,
                "soak_pass" in r.extra,
                r.extra.get("rail"),
                is_confirmation(r.extra),
                r.hosts[0] if r.hosts else "",
                r.hosts[1] if len(r.hosts) == 2 else None,
                tuple(r.hosts) if len(r.hosts) > 2 else None,
                a,
                b,
                len(r.hosts),
            )
        )
    return pd.DataFrame(rows, columns=_ALL_COLUMNS)


def hosts_in(frame: pd.DataFrame) -> set[str]:
    """Every host named by the rows of `frame`."""
    out = {str(h) for h in frame.loc[frame["n_hosts"] > 0, "host"].unique()}
    out |= {str(h) for h in frame["host2"].dropna().unique()}
    # the records of a sweep share one tuple (frame.py): each tuple once, not 10,000 names per record
    for many in {id(t): t for t in frame["hosts"].dropna()}.values():
        out.update(many)
    return out


def _read_columns(path: Path) -> tuple[NetTable, list[tuple[int, str]]] | None:
    """The records of a clean net.jsonl as a NetTable, with the (line, reason) of lines
    refused for a negative figure or a foreign schema; None when the file needs the
    line-by-line reader (or pyarrow is not installed)."""
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
    except ImportError:
        return None
    from reports.shared.safe_read import check_regular  # a FIFO or /dev/zero link is refused, not read

    check_regular(path, "records file")
    parsed = take_prefetched(path)
    if parsed is NOT_PREFETCHED:
        parsed = parse(path)
    if parsed is None:
        return None
    lines, table = parsed
    if table.num_rows != lines or not typed(table):
        return None
    bad: dict[int, str] = {}
    schema = table.column("schema") if "schema" in table.column_names else None
    if schema is not None:
        for i in pc.indices_nonzero(pc.fill_null(pc.not_equal(schema, SCHEMA), False)).to_pylist():
            bad[i] = f"schema {schema[i].as_py()} not understood"
    # the rules and order of reports.shared.records.check_figures, so both paths give one reason
    for name_, integer in (*NET_FIGURES, *((c, False) for c in NET_OPTIONAL if c in table.column_names)):
        col = table.column(name_)
        if pa.types.is_null(col.type):
            continue
        want = "an integer >= 0" if integer else "a finite number >= 0"
        wrong = pc.less(col, 0)
        if pa.types.is_floating(col.type):  # pyarrow reads NaN and Infinity as numbers
            wrong = pc.or_(wrong, pc.invert(pc.is_finite(col)))
        for i in pc.indices_nonzero(pc.fill_null(wrong, False)).to_pylist():
            bad.setdefault(i, f"{name_} is {col[i].as_py()!r}: expected {want}")
    for i, why in _host_names_why(table.column("hosts")).items():  # records.hosts_why, as columns
        bad.setdefault(i, why)
    # field types and physical range (one reader of numbers: reports/shared/plausible.py); None sends
    # the file to the line reader, which names each line
    from reports.shared.plausible import RUN_ID_PATTERN, net_table_why

    if (suspect := net_table_why(table)) is None:
        return None
    for i, why in suspect.items():
        bad.setdefault(i, why)
    rid = table.column("run_id")  # a run id names a directory: letters, digits, '.', '_', '-'
    for i in pc.indices_nonzero(pc.invert(pc.match_substring_regex(rid, f"^{RUN_ID_PATTERN}$"))).to_pylist():
        bad.setdefault(i, f"run_id {rid[i].as_py()[:40]!r} is not a run id (letters, digits, '.', '_', '-')")
    skipped = [(i + 1, bad[i]) for i in sorted(bad)]
    if bad:
        keep = pa.array([i not in bad for i in range(table.num_rows)])
        table = table.filter(keep)
    return NetTable(_frame(table), table), skipped


def _host_names_why(hosts: Any) -> dict[int, str]:
    """Row -> reason for the rows of a `hosts` column (pyarrow lists of strings) naming a host
    that is not one plain node name (reports/shared/hostnames.py), the reason records.hosts_why gives."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from reports.shared.hostnames import KEYWORDS, MAX_HOST_LEN, PLAIN_HOST

    # chunk by chunk, nothing copied whole. A list of more than two names is checked once: the
    # records of a world or inter-node sweep all name every host (10,000 nodes: ~17M names in
    # ~1,600 records, ~10,000 distinct)
    first: dict[bytes, int] = {}  # a list's bytes -> the first row naming it
    flats, parents, sames = [], [], []
    base = 0
    for chunk in hosts.chunks if hasattr(hosts, "chunks") else [hosts]:
        off = np.asarray(chunk.offsets, dtype=np.int64)  # into chunk.values, whatever the slice
        count = np.diff(off)
        same = _same_lists(chunk.values, off, np.flatnonzero(count > 2), first, base)
        rows = np.flatnonzero((count > 0) & (same < 0))
        lengths = count[rows]
        at = np.repeat(off[rows] - np.cumsum(lengths) + lengths, lengths) + np.arange(int(lengths.sum()))
        flats.append(chunk.values.take(pa.array(at, pa.int64())))
        parents.append(np.repeat(rows + base, lengths))
        sames.append(same)
        base += len(chunk)
    if not flats or not sum(len(f) for f in flats):
        return {}
    flat = pa.concat_arrays(flats)
    parent = np.concatenate(parents)
    # each distinct name checked once: a 1,000-node run names ~2.5M hosts, ~1,000 of them distinct
    enc = flat.dictionary_encode()
    names = enc.dictionary
    good = pc.and_(
        pc.less_equal(pc.utf8_length(names), MAX_HOST_LEN),
        pc.match_substring_regex(names, f"^(?:{PLAIN_HOST.pattern})$"),
    )
    good = pc.and_(good, pc.invert(pc.is_in(pc.utf8_lower(names), value_set=_strings(KEYWORDS))))
    bad_names = np.flatnonzero(~np.asarray(pc.fill_null(good, False), dtype=bool))
    if not len(bad_names):
        return {}
    wrong = np.flatnonzero(np.isin(np.asarray(enc.indices), bad_names))
    out: dict[int, str] = {}
    for i, row in zip(wrong.tolist(), parent[wrong].tolist()):
        if row not in out:
            out[row] = hosts_why([flat[i].as_py()])
    same = np.concatenate(sames)
    for row in np.flatnonzero(same >= 0).tolist():  # a list checked on an earlier row: its reason
        if (why := out.get(int(same[row]))) is not None:
            out[row] = why
    return dict(sorted(out.items()))


def _same_lists(values: Any, off: Any, rows: Any, first: dict[bytes, int], base: int) -> Any:
    """For each row of a chunk: the earlier row (numbered from the column's start; the chunk's
    first is `base`) whose list of names is the same (its bytes and name lengths), else -1.
    `first` holds the lists seen so far, across chunks."""
    import numpy as np
    import pyarrow as pa

    same = np.full(len(off) - 1, -1, dtype=np.int64)
    if not len(rows):
        return same
    _, offsets, data = values.buffers()[:3]
    width = np.int64 if pa.types.is_large_string(values.type) else np.int32
    ends = np.frombuffer(offsets, dtype=width)[values.offset :].astype(np.int64)  # each name's bytes in data
    for i in rows.tolist():
        a, b = off[i], off[i + 1]
        key = np.diff(ends[a : b + 1]).tobytes() + data[ends[a] : ends[b]].to_pybytes()
        if (j := first.setdefault(key, base + i)) != base + i:
            same[i] = j
    return same


def _strings(words: Iterable[str]) -> Any:
    import pyarrow as pa

    return pa.array(sorted(words), pa.string())


def _frame(table: Any) -> pd.DataFrame:
    return frame_of(table) if table.num_rows else records_frame([])


# -- the directory -------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True, slots=True)
class SkippedLine:
    file: str
    line: int
    reason: str


def _no_net() -> NetTable:
    return NetTable.of([])


@dataclass(kw_only=True, slots=True)
class RecordSet:
    """Everything read from a results directory, with the lines that could not be read."""

    net: NetTable = field(default_factory=_no_net)
    io: list[IoRecord] = field(default_factory=list)
    manifests: list[dict[str, Any]] = field(default_factory=list)
    host: list[dict[str, Any]] = field(default_factory=list)  # host.jsonl, kept as read
    counters: list[dict[str, Any]] = field(default_factory=list)  # counters.jsonl (a soak's deltas)
    compute: list[dict[str, Any]] = field(default_factory=list)  # compute.jsonl (the matmul appetite)
    skipped: list[SkippedLine] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not isinstance(self.net, NetTable):  # records built elsewhere (imports, tests): the same type
            self.net = NetTable.of(self.net)

    def run_ids(self) -> list[str]:
        return sorted(self.net.run_ids() | {r.run_id for r in self.io})


def _read_lines(path: Path, kind: str, skipped: list[SkippedLine]) -> list[Any]:
    """The records of a file read line by line, each bad line named in `skipped`."""
    cls = NetRecord if kind == "net" else IoRecord
    out: list[Any] = []
    for n, obj, reason in iter_jsonl(path):
        if obj is None:
            why = reason
        elif obj.get("schema", SCHEMA) != SCHEMA:
            why = f"schema {obj.get('schema')} not understood"
        else:
            why = check_figures(kind, obj)
            if not why:
                try:
                    out.append(from_dict(cls, obj))  # type: ignore[type-var]
                except ValueError as exc:
                    why = str(exc)
        if why:
            skipped.append(SkippedLine(file=path.name, line=n, reason=why))
    return out


def _read_objects(path: Path, kind: str, skipped: list[SkippedLine]) -> list[dict[str, Any]]:
    """host.jsonl / manifest.jsonl: objects kept as read (host records must say `kind: host`)."""
    out = []
    for n, obj, reason in iter_jsonl(path):
        if obj is None or (kind != "manifest" and obj.get("kind") != kind):
            skipped.append(SkippedLine(file=path.name, line=n, reason=reason or f"not a kind: {kind} record"))
        elif kind != "manifest" and "host" in obj and (why := hosts_why([obj["host"]])):
            skipped.append(SkippedLine(file=path.name, line=n, reason=why))
        else:
            out.append(obj)
    return out


def read_records(directory: str | os.PathLike[str]) -> RecordSet:
    """Read net.jsonl, io.jsonl, host.jsonl and manifest.jsonl from `directory`. Truncated or
    garbled lines are skipped and listed in `skipped`, never raised."""
    d = Path(directory)
    for name in (NET_FILE, IO_FILE, HOST_FILE, COUNTER_FILE, COMPUTE_FILE, MANIFEST_FILE):
        if (d / name).is_symlink():  # another run's records, or anything, through a link: never read
            raise UsageError(
                f"{d / name}: is a symlink; stoker reads records only from regular files in the results "
                "directory (copy the file in, or report on the directory it points into)"
            )
    out = RecordSet()
    p = d / NET_FILE
    if p.exists():
        read = _read_columns(p)
        if read is not None:
            out.net = read[0]
            out.skipped += [SkippedLine(file=NET_FILE, line=n, reason=why) for n, why in read[1]]
        else:
            out.net = NetTable.of(_read_lines(p, "net", out.skipped))
    if (d / IO_FILE).exists():
        out.io = _read_lines(d / IO_FILE, "io", out.skipped)
    if (d / HOST_FILE).exists():
        out.host = _read_objects(d / HOST_FILE, "host", out.skipped)
    if (d / COUNTER_FILE).exists():
        out.counters = _read_objects(d / COUNTER_FILE, "counter", out.skipped)
    if (d / COMPUTE_FILE).exists():
        out.compute = _read_objects(d / COMPUTE_FILE, "compute", out.skipped)
    if (d / MANIFEST_FILE).exists():
        out.manifests = _read_objects(d / MANIFEST_FILE, "manifest", out.skipped)
    return out
