"""The frame of a net table read as columns (reports/table/read.py's column path): one pandas row
per record, the names categorical with their categories in name order, and each record's
hosts reduced to `host` (the first), `host2` (the second of two), `pair_a` < `pair_b` (two
distinct names) and `hosts` (the tuple of a record naming more than two).

Built from integer codes, not strings: every host name of the file is dictionary-encoded once
and numbered in name order, so the first and second host of each record are numpy lookups at
the list offsets and the pair in name order is the min and max of two codes. A 1,000-node run
names ~2.5M hosts (one or two per intra-node and pair record, 1,000 per world and inter-node
record); arrow's list kernels (if_else over lists, element-wise min over strings) spent ~0.9 s
there, these lookups ~0.1 s. The frame is the one the kernels built, dtypes and categories
included (tests/unit/test_table_frame.py holds the kernels' version as its oracle).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

# Columns evidence reads from the frame (hosts are reduced to `host`, `pair_a`, `pair_b`).
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
    "time_cv",
    "round",
    "per_iter",  # the record carries nccl-tests' per-iteration, per-process times (-I)
    "soak",  # the record is one of a soak's passes (extra.soak_pass)
    "rail",  # pair and groups records: the local rank index (null: rail 0, as before rails)
    "confirmation",  # the record measured a test again: its first figure was under its threshold
)
# host: the first; host2: the second of a two-host record; hosts: the tuple of a record of
# more (few: world and inter-node sweeps); pair_a < pair_b: a record's two distinct hosts.
ALL_COLUMNS = (*FRAME_COLUMNS, "host", "host2", "hosts", "pair_a", "pair_b", "n_hosts")


def frame_of(table: Any) -> pd.DataFrame:
    """The frame of a non-empty pyarrow table of net records whose `hosts` lists hold no null
    (table_parse.typed sends those to the line reader)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    n = table.num_rows
    names = table.column_names
    cols: dict[str, Any] = {}
    for name in FRAME_COLUMNS:
        if name in names:
            col = table.column(name)
            cols[name] = _by_name(col) if pa.types.is_string(col.type) else col
    for name, value in (("group", 0), ("in_place", False), ("device", "cpu")):
        if name not in cols:
            cols[name] = pa.repeat(pa.scalar(value), n)
        elif name == "device":  # fill before encoding: a dictionary column takes no plain fill
            cols[name] = _by_name(pc.fill_null(table.column(name), value))
        else:
            cols[name] = pc.fill_null(cols[name], value)
    for name, kind in (
        ("pass", pa.int64()),
        ("round", pa.int64()),
        ("time_cv", pa.float64()),
        ("rail", pa.int64()),
    ):
        if name not in cols:
            cols[name] = pa.nulls(n, kind)
    for flag, field in (("per_iter", "stragglers"), ("soak", "soak_pass")):
        has = table.column(field) if field in names else None
        cols[flag] = pc.is_valid(has) if has is not None else pa.array(np.zeros(n, dtype=bool))
    said = table.column("confirmation") if "confirmation" in names else None
    cols["confirmation"] = (
        pc.fill_null(pc.equal(said, True), False)  # `confirmation: true` only (records.is_confirmation)
        if said is not None and pa.types.is_boolean(said.type)
        else pa.array(np.zeros(n, dtype=bool))
    )

    # chunk by chunk, never combined: at 10,000 nodes the names are ~250 MB of the table
    hosts = table.column("hosts")
    chunks = [c for c in hosts.chunks if len(c)]
    offs = [np.asarray(c.offsets, dtype=np.int64) for c in chunks]  # into c.values, whatever the slice
    count = np.concatenate([np.diff(off) for off in offs])
    first, second, words = _first_two([c.values for c in chunks], offs, count)
    distinct = (count == 2) & (first != second)
    cols["host"] = _categorical(first, words)
    cols["host2"] = _categorical(second, words)
    cols["hosts"] = pa.nulls(n)
    cols["pair_a"] = _categorical(np.where(distinct, np.minimum(first, second), -1), words)
    cols["pair_b"] = _categorical(np.where(distinct, np.maximum(first, second), -1), words)
    cols["n_hosts"] = pc.list_value_length(hosts)
    frame = pa.table({c: cols[c] for c in ALL_COLUMNS}).to_pandas()
    many = np.flatnonzero(count > 2)
    if len(many):
        _many_hosts(frame, many, [(c.values, off) for c, off in zip(chunks, offs)])
    return frame


def _first_two(
    values: list[Any], offs: list[np.ndarray], count: np.ndarray
) -> tuple[np.ndarray, np.ndarray, Any]:
    """(code of each row's first host, "" for an empty list; code of the second host of a
    two-host row, else -1; the names in name order), from the chunks' names and list offsets.
    Only these names are encoded: a world or inter-node record's other 998 names are the
    tuple of _many_hosts."""
    import numpy as np
    import pyarrow as pa

    some, two = np.flatnonzero(count > 0), np.flatnonzero(count == 2)
    firsts, seconds = [], []  # each chunk's, in row order: all the first names, then the second ones
    for names, off in zip(values, offs):
        n = np.diff(off)
        firsts.append(names.take(pa.array(off[:-1][n > 0], pa.int64())))
        seconds.append(names.take(pa.array(off[:-1][n == 2] + 1, pa.int64())))
    kind = values[0].type if values else pa.string()
    picked = pa.concat_arrays([*firsts, *seconds]) if values else pa.array([], kind)
    if len(some) < len(count):  # an empty list's first host is "" (as the line reader's frame has it)
        picked = pa.concat_arrays([picked, pa.array([""], picked.type)])
    words, codes = _sorted(picked.dictionary_encode())
    first = np.full(len(count), codes[-1] if len(some) < len(count) else -1, dtype=np.int64)
    first[some] = codes[: len(some)]
    second = np.full(len(count), -1, dtype=np.int64)
    second[two] = codes[len(some) : len(some) + len(two)]
    return first, second, words


def _by_name(col: Any) -> Any:
    """A string column dictionary-encoded with its dictionary in name order (the categories
    evidence groups by: grouping by a name orders by it)."""
    import numpy as np
    import pyarrow as pa

    enc = (
        col.combine_chunks().dictionary_encode()
        if hasattr(col, "combine_chunks")
        else col.dictionary_encode()
    )
    words, codes = _sorted(enc)
    return pa.DictionaryArray.from_arrays(pa.array(codes.astype(np.int32), mask=codes < 0), words)


def _sorted(enc: Any) -> tuple[Any, np.ndarray]:
    """A dictionary array's dictionary in name order (arrow sorts strings by their UTF-8
    bytes: code point order, Python's) and its indices renumbered to match; -1 for null."""
    import numpy as np
    import pyarrow.compute as pc

    order = pc.sort_indices(enc.dictionary).to_numpy()
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    idx = enc.indices
    raw = np.asarray(pc.fill_null(idx, 0), dtype=np.int64) if idx.null_count else np.asarray(idx, np.int64)
    codes = rank[raw] if len(rank) else raw
    if idx.null_count:
        codes[np.asarray(idx.is_null())] = -1
    return enc.dictionary.take(order), codes


def _categorical(codes: np.ndarray, words: Any) -> Any:
    """A dictionary array of `codes` (-1: null) whose dictionary holds only the names used,
    in name order: the categories the kernels' dictionary_encode gave, sorted."""
    import numpy as np
    import pyarrow as pa

    valid = codes >= 0
    used = np.bincount(codes[valid], minlength=len(words)) > 0
    compact = np.cumsum(used) - 1
    out = np.where(valid, compact[np.where(valid, codes, 0)], 0).astype(np.int32)
    return pa.DictionaryArray.from_arrays(
        pa.array(out, mask=~valid), words.filter(pa.array(used)) if len(words) else words
    )


def _many_hosts(frame: pd.DataFrame, rows: np.ndarray, chunks: list[tuple[Any, np.ndarray]]) -> None:
    """The `hosts` tuple of records naming more than two hosts, and pair_a / pair_b of a pair
    record among them with only two distinct names (the record path counts it), from the
    chunks' (names, list offsets). A world or inter-node record names every host of the run
    (1,000 of them), and the records of one sweep name the same list: each distinct list (by
    its bytes and name lengths) becomes one tuple, shared."""
    import numpy as np
    import pyarrow as pa

    shared: dict[bytes, tuple[str, ...]] = {}
    out = np.empty(len(rows), dtype=object)
    k, base = 0, 0  # rows[k] is the next row to fill; the chunk's first row is `base`
    for values, off in chunks:
        end = base + len(off) - 1
        if k < len(rows) and rows[k] < end:
            _, offsets, data = values.buffers()[:3]
            width = np.int64 if pa.types.is_large_string(values.type) else np.int32
            ends = np.frombuffer(offsets, dtype=width)[values.offset :].astype(np.int64)  # name bytes in data
            while k < len(rows) and rows[k] < end:
                a, b = off[rows[k] - base], off[rows[k] - base + 1]
                lengths = np.diff(ends[a : b + 1])
                key = lengths.tobytes() + data[ends[a] : ends[b]].to_pybytes()
                got = shared.get(key)
                if got is None:
                    got = shared[key] = tuple(values.slice(a, b - a).to_pylist())
                out[k] = got
                k += 1
        base = end
    column = frame["hosts"].to_numpy(dtype=object, copy=True)
    column[rows] = out
    frame["hosts"] = column
    pair = (frame["scope"].take(rows) == "pair").to_numpy()
    for i, many in zip(rows[pair], out[pair]):
        two = sorted(set(many))
        if len(two) == 2:
            for c, v in zip(("pair_a", "pair_b"), two):
                frame[c] = frame[c].astype(object)
                frame.at[i, c] = v
