"""The frame of the column path (reports/table/frame.py, built from integer codes) is the frame
arrow's list and string kernels built before it, dtypes and categories included: that
version is kept here as the oracle, and hypothesis feeds both the tables a reader can meet
(empty host lists, a host twice, more than two hosts in a pair record, optional columns
missing or null, several chunks)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import given, settings
from hypothesis import strategies as st

from reports.table.frame import ALL_COLUMNS, FRAME_COLUMNS, frame_of


def kernels_frame(table: Any) -> pd.DataFrame:
    """The frame as reports/table/read.py built it with arrow's kernels (until this change)."""
    n = table.num_rows
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
        elif name == "device":
            cols[name] = pc.fill_null(table.column(name), value).dictionary_encode()
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
        has = table.column(field) if field in table.column_names else None
        cols[flag] = pc.is_valid(has) if has is not None else pa.array(np.zeros(n, dtype=bool))
    said = table.column("confirmation") if "confirmation" in table.column_names else None
    cols["confirmation"] = (
        pc.fill_null(pc.equal(said, True), False) if said is not None else pa.array(np.zeros(n, dtype=bool))
    )
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
    frame = pa.table({c: cols[c] for c in ALL_COLUMNS}).to_pandas()
    for c in frame.columns:
        if isinstance(frame[c].dtype, pd.CategoricalDtype):
            frame[c] = frame[c].cat.reorder_categories(sorted(frame[c].cat.categories))
    rows = frame.index[frame["n_hosts"] > 2]
    if len(rows):
        lists = hosts.take(pa.array(rows, pa.int64()))
        joined = pc.binary_join(lists, "\x00").dictionary_encode().combine_chunks()
        distinct_lists = [tuple(j.split("\x00")) for j in joined.dictionary.to_pylist()]
        codes = joined.indices.to_numpy(zero_copy_only=False)
        frame["hosts"] = frame["hosts"].astype(object)
        frame.loc[rows, "hosts"] = pd.Series([distinct_lists[c] for c in codes], index=rows, dtype=object)
        for i, code in zip(rows, codes):
            if frame["scope"].iat[i] != "pair":
                continue
            pair = sorted(set(distinct_lists[code]))
            if len(pair) == 2:
                for c, v in zip(("pair_a", "pair_b"), pair):
                    frame[c] = frame[c].astype(object)
                    frame.at[i, c] = v
    return frame


NAMES = ["n1", "n2", "n10", "gpu-a", "Z", "é", ""]  # "" and a non-ASCII name sort among the others
OPTIONAL = {
    "group": st.integers(0, 3),
    "in_place": st.booleans(),
    "pass": st.sampled_from([None, 1, 2]),
    "device": st.sampled_from([None, "cuda", "cpu"]),
    "time_cv": st.sampled_from([None, 0.01, 0.2]),
    "round": st.sampled_from([None, 0, 1]),
    "stragglers": st.sampled_from([None, {"max": 1.0}]),
    "soak_pass": st.sampled_from([None, 3]),
    "confirmation": st.sampled_from([None, True]),
}


TYPES = {
    "hosts": pa.list_(pa.string()),
    "group": pa.int64(),
    "in_place": pa.bool_(),
    "pass": pa.int64(),
    "device": pa.string(),
    "time_cv": pa.float64(),
    "round": pa.int64(),
    "soak_pass": pa.int64(),
    "confirmation": pa.bool_(),
}


@st.composite
def tables(draw: st.DrawFn) -> pa.Table:
    present = draw(st.sets(st.sampled_from(sorted(OPTIONAL))))
    rows = []
    for _ in range(draw(st.integers(1, 25))):
        row = {
            "run_id": draw(st.sampled_from(["r1", "r2"])),
            "op": draw(st.sampled_from(["all_reduce", "sendrecv", "alltoall"])),
            "scope": draw(st.sampled_from(["world", "intra-node", "inter-node", "pair", "groups"])),
            "backend": draw(st.sampled_from(["nccl", "gloo"])),
            "ranks": draw(st.integers(1, 16)),
            "nodes": draw(st.integers(1, 4)),
            "bytes": draw(st.sampled_from([1024, 1 << 20, 1 << 30])),
            "time_s": 0.001,
            "algbw_GBps": 1.0,
            "busbw_GBps": draw(st.floats(0, 100)),
            "wrong": draw(st.integers(0, 1)),
            "hosts": draw(st.lists(st.sampled_from(NAMES), max_size=5)),
        }
        row.update({k: draw(OPTIONAL[k]) for k in present})
        rows.append(row)
    table = pa.Table.from_pylist(rows)
    # the types the parser gives these columns (all-null values infer no type from the rows)
    for name, kind in TYPES.items():
        if name in table.column_names and table.schema.field(name).type != kind:
            table = table.set_column(table.column_names.index(name), name, table.column(name).cast(kind))
    cut = draw(st.integers(0, table.num_rows))  # two chunks, as the parser's blocks give
    return pa.concat_tables([table.slice(0, cut), table.slice(cut)])


def _same(table: pa.Table) -> None:
    want, got = kernels_frame(table), frame_of(table)
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    for c in want.columns:
        if isinstance(want[c].dtype, pd.CategoricalDtype):
            assert list(got[c].cat.categories) == list(want[c].cat.categories), c
            assert got[c].cat.categories.dtype == want[c].cat.categories.dtype, c


@settings(max_examples=80, deadline=None)
@given(tables())
def test_the_frame_is_the_kernels_frame(table: pa.Table) -> None:
    _same(table)


def test_a_world_sweep_shares_one_tuple_of_its_hosts() -> None:
    many = [f"node{i:03d}" for i in range(40)]
    rows = [
        {"run_id": "r", "op": "all_reduce", "scope": s, "backend": "nccl", "ranks": 80, "nodes": 40}
        | {"bytes": 1 << k, "time_s": 0.1, "algbw_GBps": 1.0, "busbw_GBps": 2.0, "wrong": 0, "hosts": many}
        for k in range(10, 20)
        for s in ("world", "inter-node")
    ]
    rows.append(rows[0] | {"scope": "pair", "hosts": ["b", "a", "b"]})  # three names, two distinct
    table = pa.Table.from_pylist(rows)
    _same(table)
    frame = frame_of(table)
    assert frame["hosts"].iat[0] is frame["hosts"].iat[5] and frame["hosts"].iat[0] == tuple(many)
    assert (frame["pair_a"].iat[-1], frame["pair_b"].iat[-1]) == ("a", "b")


def test_a_null_among_the_hosts_goes_to_the_line_reader(tmp_path: Any) -> None:
    from reports.table.read import read_records

    line = (
        '{"schema":1,"kind":"net","run_id":"r","ts":"t","hosts":["n1",null],"nodes":2,"op":"all_reduce",'
        '"scope":"pair","ranks":2,"backend":"nccl","dtype":"f","bytes":1024,"time_s":0.1,'
        '"algbw_GBps":1.0,"busbw_GBps":1.0,"wrong":0}\n'
    )
    (tmp_path / "net.jsonl").write_text(line)
    rs = read_records(tmp_path)
    assert len(rs.net) == 0 and [s.reason for s in rs.skipped] == ["hosts is not a list of host names"]
