"""net.jsonl read as columns (pyarrow), for results of 1,000 nodes and more.

A 1,000-node acceptance run writes ~650k net records (~270 MB). One Python object per
record costs ~20 µs to parse and build, so the judgement reads columns instead: `NetTable`
is the sequence of records that `RecordSet.net` holds, with `frame` (pandas, one row per
record) for the judgement's hot paths (reports.judging.compare.build_curves,
reports.judging.localise, reports.judging.frames.net_frame). Iterating it still gives
`NetRecord`s, built on first use, so any code written against records keeps working.

The file is parsed by pyarrow only when it is clean JSON of the expected types; anything
else (NaN, a string where a figure belongs, a truncated line, a blank line) sends the whole
file to the line-by-line reader (reports.records), which names each bad line. Negative
figures and foreign schema versions are found here, vectorised, and named by line too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, overload

if TYPE_CHECKING:
    import pandas as pd

# The record type (reports.records.NetRecord): this module sits below the schema and does
# not import it, so that reports.records can use it without a cycle.
NetRecord = TypeVar("NetRecord")
Build = Callable[[Mapping[str, Any]], Any]

# Columns every row must have (the contract's minimum), by arrow type family.
_STRINGS = ("run_id", "ts", "op", "scope", "backend", "dtype")
_INTS = ("nodes", "ranks", "bytes", "wrong")
_FLOATS = ("time_s", "algbw_GBps", "busbw_GBps")
_OPTIONAL_FLOATS = ("time_min_s", "time_p50_s", "time_p99_s", "time_cv")
# Columns the judgement reads from the frame (hosts are reduced to `host`, `pair_a`, `pair_b`).
FRAME_COLUMNS = (
    "run_id",
    "op",
    "scope",
    "backend",
    "ranks",
    "nodes",
    "bytes",
    "time_s",
    "algbw_GBps",
    "busbw_GBps",
    "wrong",
    "group",
    "in_place",
    "pass",
    "device",
)
# host: the first; host2: the second of a two-host record; hosts: the tuple of a record of
# more (few: world and inter-node sweeps); pair_a < pair_b: a record's two distinct hosts.
_ALL_COLUMNS = (*FRAME_COLUMNS, "host", "host2", "hosts", "pair_a", "pair_b", "n_hosts")


class NetTable(Sequence[Any]):
    """The net records of one file as columns; a read-only sequence of NetRecord that
    `+=` can extend (imports are appended to what was read)."""

    def __init__(self, table: Any, frame: pd.DataFrame, build: Build) -> None:
        self._table = table  # pyarrow.Table of the clean rows, for building records
        self._build = build  # JSON object -> NetRecord (reports.records.from_dict)
        self.frame = frame  # FRAME_COLUMNS + host, pair_a, pair_b, n_hosts
        self._records: list[Any] | None = None
        self._tail: list[Any] = []
        self.memo: dict[str, Any] = {}  # results computed once per table (the pair matrix)

    def _all(self) -> list[Any]:
        if self._records is None:
            names = self._table.column_names
            cols = [self._table.column(n).to_pylist() for n in names]
            # arrow fills a key a line lacks with null: leave it out, as the line did
            self._records = [
                self._build({k: v for k, v in zip(names, row) if v is not None}) for row in zip(*cols)
            ]
        return self._records + self._tail if self._tail else self._records

    def __len__(self) -> int:
        return len(self.frame)

    @overload
    def __getitem__(self, i: int) -> NetRecord: ...
    @overload
    def __getitem__(self, i: slice) -> list[NetRecord]: ...
    def __getitem__(self, i: int | slice) -> NetRecord | list[NetRecord]:
        return self._all()[i]

    def __iter__(self) -> Iterator[NetRecord]:
        return iter(self._all())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]

    def where(self, mask: Any) -> list[Any]:
        """The records of the rows where `mask` (a boolean array over `frame`) is true, built
        for those rows only."""
        import numpy as np
        import pyarrow as pa

        rows = np.flatnonzero(np.asarray(mask, dtype=bool))
        if not len(rows):
            return []
        if self._records is not None:
            every = self._all()
            return [every[i] for i in rows]
        n = self._table.num_rows
        head = rows[rows < n]
        part = NetTable(self._table.take(pa.array(head, pa.int64())), self.frame.iloc[:0], self._build)
        return [*part._all(), *(self._tail[i - n] for i in rows[rows >= n])]

    def __add__(self, other: Sequence[NetRecord]) -> list[Any]:
        return [*self, *other]

    def __radd__(self, other: Sequence[NetRecord]) -> list[Any]:
        return [*other, *self]

    def __iadd__(self, other: Sequence[NetRecord]) -> NetTable:
        import pandas as pd

        more = list(other)
        if more:
            self._tail += more
            self.frame = pd.concat([self.frame, records_frame(more)], ignore_index=True)
            self.memo.clear()
        return self


def records_frame(net: Sequence[NetRecord]) -> pd.DataFrame:
    """The frame of a list of records (small inputs: tests, imports)."""
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
    for many in frame["hosts"].dropna():
        out.update(many)
    return out


def net_columns(net: Sequence[NetRecord]) -> pd.DataFrame:
    """One row per record: FRAME_COLUMNS, `host` (the first), `pair_a` < `pair_b` (the two
    distinct hosts of a two-host record, else None) and `n_hosts`."""
    return net.frame if isinstance(net, NetTable) else records_frame(net)


def scope_records(net: Sequence[NetRecord], *scopes: str) -> list[Any]:
    """The records of these scopes; from a NetTable only those are built (the groups search
    has tens of records among a fleet's 10^5)."""
    if isinstance(net, NetTable):
        return net.where(net.frame["scope"].isin(scopes).to_numpy())
    return [r for r in net if r.scope in scopes]  # type: ignore[attr-defined]


def memo(net: Sequence[NetRecord], key: str, compute: Any) -> Any:
    """compute() once per NetTable (the report asks for the pair matrix three times)."""
    if not isinstance(net, NetTable):
        return compute()
    if key not in net.memo:
        net.memo[key] = compute()
    return net.memo[key]


def read_net(path: Path, build: Build, schema_version: int) -> tuple[NetTable, list[tuple[int, str]]] | None:
    """The records of a clean net.jsonl as a NetTable, with the (line, reason) of lines
    refused for a negative figure or a foreign schema; None when the file needs the
    line-by-line reader (or pyarrow is not installed)."""
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.json as pj
    except ImportError:
        return None
    from reports.safe_read import read_bytes  # issue 22: a FIFO or /dev/zero link is refused, not read

    data = read_bytes(path, "records file")
    # Line numbers are row numbers + 1 only without blank lines; a missing final newline is
    # a line cut short by a crash (the line reader says so).
    if not data or b"\n\n" in data or b"\r" in data or data.startswith(b"\n") or not data.endswith(b"\n"):
        return None
    try:
        table = pj.read_json(
            pa.BufferReader(data),
            read_options=pj.ReadOptions(block_size=16 << 20),
            parse_options=pj.ParseOptions(explicit_schema=pa.schema([("ts", pa.string())])),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    lines = data.count(b"\n")
    del data  # 270 MB of text no longer needed: peak memory is the goal's other half
    if table.num_rows != lines or not _typed(table):
        return None
    bad: dict[int, str] = {}
    schema = table.column("schema") if "schema" in table.column_names else None
    if schema is not None:
        for i in pc.indices_nonzero(pc.fill_null(pc.not_equal(schema, schema_version), False)).to_pylist():
            bad[i] = f"schema {schema[i].as_py()} not understood"
    # the order reports.records.check_figures tests them in, so both readers give one reason
    for name_ in (*_FLOATS, *_INTS, *(c for c in _OPTIONAL_FLOATS if c in table.column_names)):
        col = table.column(name_)
        if pa.types.is_null(col.type):
            continue
        want = "an integer >= 0" if name_ in _INTS else "a finite number >= 0"
        wrong = pc.less(col, 0)
        if pa.types.is_floating(col.type):  # pyarrow reads NaN and Infinity as numbers
            wrong = pc.or_(wrong, pc.invert(pc.is_finite(col)))
        for i in pc.indices_nonzero(pc.fill_null(wrong, False)).to_pylist():
            bad.setdefault(i, f"{name_} is {col[i].as_py()!r}: expected {want}")
    # --- issue 22: field types and physical range (one reader of numbers: reports/plausible.py)
    from reports.plausible import net_table_why

    if (suspect := net_table_why(table)) is None:
        return None
    for i, why in suspect.items():
        bad.setdefault(i, why)
    # --- end issue 22
    skipped = [(i + 1, bad[i]) for i in sorted(bad)]
    if bad:
        keep = pa.array([i not in bad for i in range(table.num_rows)])
        table = table.filter(keep)
    return NetTable(table, _frame(table), build), skipped


def _typed(table: Any) -> bool:
    """Every required column present, without nulls, of the type the contract says; else
    the line reader gives each bad line its own reason."""
    import pyarrow as pa

    t = table.schema
    for name in (*_STRINGS, *_INTS, *_FLOATS, "hosts"):
        if name not in t.names or table.column(name).null_count:
            return False
    if not all(pa.types.is_string(t.field(n).type) for n in _STRINGS):
        return False
    if not all(pa.types.is_int64(t.field(n).type) for n in _INTS):
        return False
    if not all(pa.types.is_floating(t.field(n).type) or pa.types.is_int64(t.field(n).type) for n in _FLOATS):
        return False
    # optional statistics may be null on every line (imported results carry none)
    optional = [t.field(n).type for n in _OPTIONAL_FLOATS if n in t.names]
    if not all(pa.types.is_floating(x) or pa.types.is_int64(x) or pa.types.is_null(x) for x in optional):
        return False
    hosts = t.field("hosts").type
    return pa.types.is_list(hosts) and pa.types.is_string(hosts.value_type)


def _frame(table: Any) -> pd.DataFrame:
    import pyarrow as pa
    import pyarrow.compute as pc

    n = table.num_rows
    if n == 0:
        return records_frame([])
    hosts = table.column("hosts")
    n_hosts = pc.list_value_length(hosts)
    cols: dict[str, Any] = {}
    for name in FRAME_COLUMNS:
        if name in table.column_names:
            col = table.column(name)
            cols[name] = col.dictionary_encode() if pa.types.is_string(col.type) else col
    for name, value in (("group", 0), ("in_place", False), ("device", "cpu")):
        if name not in cols:
            cols[name] = pa.array([value] * n)
        elif name == "device":  # fill before encoding: a dictionary column takes no plain fill
            cols[name] = pc.fill_null(table.column(name), value).dictionary_encode()
        else:
            cols[name] = pc.fill_null(cols[name], value)
    if "pass" not in cols:
        cols["pass"] = pa.nulls(n, pa.int64())
    # The first host (per-node scopes) and, for two-host records, the pair in name order.
    # An empty list has no element 0: pad it with "" first.
    padded = pc.if_else(pc.greater(n_hosts, 0), hosts, pa.scalar([""], hosts.type))
    cols["host"] = pc.list_element(padded, 0).dictionary_encode()
    two = pc.equal(n_hosts, 2)
    padded2 = pc.if_else(two, hosts, pa.scalar(["", ""], hosts.type))
    h0, h1 = pc.list_element(padded2, 0), pc.list_element(padded2, 1)
    cols["host2"] = pc.if_else(two, h1, None).dictionary_encode()
    cols["hosts"] = pa.nulls(n)
    distinct = pc.and_(two, pc.not_equal(h0, h1))
    cols["pair_a"] = pc.if_else(distinct, pc.min_element_wise(h0, h1), None).dictionary_encode()
    cols["pair_b"] = pc.if_else(distinct, pc.max_element_wise(h0, h1), None).dictionary_encode()
    cols["n_hosts"] = n_hosts
    frame = pa.table({c: cols[c] for c in _ALL_COLUMNS}).to_pandas()
    many = frame.index[frame["n_hosts"] > 2]
    if len(many):
        _pairs_among_many(frame, many, hosts)
    return frame


def _pairs_among_many(frame: pd.DataFrame, rows: Any, hosts: Any) -> None:
    """The `hosts` tuple of records naming more than two hosts, and pair_a / pair_b of a
    pair record among them with only two distinct names (the record path counts it)."""
    import pyarrow as pa

    names = [tuple(h) for h in hosts.take(pa.array(rows, pa.int64())).to_pylist()]
    frame["hosts"] = frame["hosts"].astype(object)
    frame.loc[rows, "hosts"] = pd_series(names, rows)
    scope = frame["scope"]
    for i, many in zip(rows, names):
        distinct = sorted(set(many))
        if scope.iat[i] == "pair" and len(distinct) == 2:
            for c, v in zip(("pair_a", "pair_b"), distinct):
                frame[c] = frame[c].astype(object)
                frame.at[i, c] = v


def pd_series(values: list[Any], index: Any) -> Any:
    import pandas as pd

    return pd.Series(values, index=index, dtype=object)
