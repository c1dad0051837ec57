"""The one reader (reports.table.read): net.jsonl read as columns or line by line gives one type,
NetTable, with the same frame and the same records."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from reports.evidence.pairs import pair_values
from reports.shared.records import RecordWriter, iter_jsonl, to_dict
from reports.table.read import NetTable, read_records
from tests.unit.recordgen import net


def _records() -> list:
    hosts = ("n1", "n2", "n3")
    out = [
        net("intra-node", "all_reduce", 2**k, 300.0 + k, (h,), group=g)
        for g, h in enumerate(hosts)
        for k in (20, 21)
    ]
    out += [
        net("pair", "all_reduce", 2**30, bw, pair, ranks=2)
        for pair, bw in ((("n1", "n2"), 40.0), (("n3", "n1"), 12.0), (("n2", "n3"), 11.0))
    ]
    out += [net("world", "all_reduce", 2**30, 20.0, hosts, ranks=24)]
    return out


def test_columns_and_lines_give_the_same_records(tmp_path: Path) -> None:
    with RecordWriter(tmp_path / "net.jsonl") as w:
        for r in _records():
            w.write({**to_dict(r), "pass": 1} if r.scope == "pair" else r)
    rs = read_records(tmp_path)
    assert isinstance(rs.net, NetTable) and rs.net._table is not None and not rs.skipped  # the column path
    by_line = [obj for _, obj, _ in iter_jsonl(tmp_path / "net.jsonl")]
    assert [to_dict(r) for r in rs.net.records()] == by_line
    f = rs.net.frame
    assert list(f["host"]) == ["n1", "n1", "n2", "n2", "n3", "n3", "n1", "n3", "n2", "n1"]
    assert [(a, b) for a, b in zip(f["pair_a"], f["pair_b"]) if isinstance(a, str)] == [
        ("n1", "n2"),
        ("n1", "n3"),
        ("n2", "n3"),
    ]
    assert dict(pair_values(rs.net.frame)) == {("n1", "n2"): 40.0, ("n1", "n3"): 12.0, ("n2", "n3"): 11.0}
    fresh = read_records(tmp_path).net
    assert fresh.scope("groups") == [] and fresh._records is None  # nothing built for nothing
    assert [r.hosts for r in fresh.scope("pair")] == [("n1", "n2"), ("n3", "n1"), ("n2", "n3")]
    assert fresh._records is None  # only the pairs were built
    rs.net.extend([net("groups", "all_reduce", 2**30, 5.0, ("n1", "n2"), ranks=2)])
    assert len(rs.net) == 11 and [r.busbw_GBps for r in rs.net.scope("groups")] == [5.0]
    # a blank line sends the file down the line path: the same type, frame and records
    (tmp_path / "net.jsonl").write_text((tmp_path / "net.jsonl").read_text() + "\n")
    lines = read_records(tmp_path).net
    assert isinstance(lines, NetTable) and lines._table is None
    assert [to_dict(r) for r in lines.records()] == by_line
    cols = ["run_id", "op", "scope", "bytes", "busbw_GBps", "host", "pair_a", "pair_b", "n_hosts", "pass"]
    want = read_records(tmp_path).net.frame[cols].astype(object).where(lambda d: d.notna(), None)
    fresh_frame = fresh.frame[cols].astype(object).where(lambda d: d.notna(), None)
    assert want.values.tolist() == fresh_frame.values.tolist()


def test_a_negative_figure_is_named_on_the_column_path(tmp_path: Path) -> None:
    lines = [to_dict(r) for r in _records()]
    lines[3]["busbw_GBps"] = -2.5
    (tmp_path / "net.jsonl").write_text("".join(json.dumps(o) + "\n" for o in lines))
    rs = read_records(tmp_path)
    assert isinstance(rs.net, NetTable) and len(rs.net) == 9
    assert [(s.file, s.line, s.reason) for s in rs.skipped] == [
        ("net.jsonl", 4, "busbw_GBps is -2.5: expected a finite number >= 0")
    ]


def test_a_parse_started_early_gives_the_same_table(tmp_path: Path) -> None:
    from reports.table import parse as table_parse
    from reports.table import read as table

    with RecordWriter(tmp_path / "net.jsonl") as w:
        for r in _records():
            w.write(r)
    table.prefetch(tmp_path)
    assert str(tmp_path / "net.jsonl") in table_parse._prefetched
    early = read_records(tmp_path).net
    assert not table_parse._prefetched  # taken once
    late = read_records(tmp_path).net
    assert early._table is not None and early._table.equals(late._table)
    assert [to_dict(r) for r in early.records()] == [to_dict(r) for r in late.records()]


def test_no_early_parse_of_what_is_not_a_regular_file(tmp_path: Path) -> None:
    import os

    from reports.table import parse as table_parse

    os.mkfifo(tmp_path / "net.jsonl")  # a thread reading it would wait for a writer for ever
    table_parse.prefetch(tmp_path)
    table_parse.prefetch(tmp_path / "missing")
    assert not table_parse._prefetched


def test_a_typed_field_of_another_type_goes_to_the_line_reader(tmp_path: Path) -> None:
    with RecordWriter(tmp_path / "net.jsonl") as w:
        for r in _records():
            w.write(r)
    text = (tmp_path / "net.jsonl").read_text().splitlines()
    text[2] = text[2].replace('"bytes":1048576,', '"bytes":1048576.5,')
    assert "1048576.5" in text[2]
    (tmp_path / "net.jsonl").write_text("\n".join(text) + "\n")
    rs = read_records(tmp_path)
    assert rs.net._table is None  # the explicit int64 refused the line: the line reader named it
    assert [s.line for s in rs.skipped] == [3] and "bytes" in rs.skipped[0].reason


def test_a_bad_host_in_a_list_many_records_share_is_named_on_each_line(tmp_path: Path) -> None:
    """The column path checks a list of more than two names once however many records name
    it (a world sweep's records all name every host): each line naming it is still refused,
    with the reason of its first bad name; a list differing only there is checked on its own."""
    lines = [to_dict(r) for r in _records()]
    world = lines[-1]
    bad = {**world, "hosts": ["n1", "n 2", "n3"]}
    other = {**world, "hosts": ["n1", "n2", "n3?"]}
    lines += [bad, dict(bad), other, dict(bad)]  # lines 11, 12, 13, 14
    (tmp_path / "net.jsonl").write_text("".join(json.dumps(o) + "\n" for o in lines))
    rs = read_records(tmp_path)
    assert rs.net._table is not None and len(rs.net) == 10  # the column path; the good ten kept
    plain = "is not one plain node name (letters, digits, '.', '_', '-'; no hostlists, lists or spaces)"
    assert [(s.line, s.reason) for s in rs.skipped] == [
        (11, f"host 'n 2' {plain}"),
        (12, f"host 'n 2' {plain}"),
        (13, f"host 'n3?' {plain}"),
        (14, f"host 'n 2' {plain}"),
    ]


def test_the_line_check_hashes_net_jsonl_for_the_ledger_in_the_same_read(tmp_path: Path) -> None:
    """input_digests takes net.jsonl's SHA-256 from the line check's pass; a file changed
    since is hashed again."""
    import hashlib

    from reports.shared import safe_write
    from reports.table.parse import clean_lines

    path = tmp_path / "net.jsonl"
    path.write_text("".join(json.dumps(to_dict(r)) + "\n" for r in _records()))
    assert clean_lines(path, chunk=100) == 10  # many chunks: the hash spans them
    want = hashlib.sha256(path.read_bytes()).hexdigest()
    assert want in safe_write._DIGESTS.values()
    assert safe_write.file_sha256(path) == want
    with open(path, "a") as fh:
        fh.write("{}\n")
    assert safe_write.file_sha256(path) == hashlib.sha256(path.read_bytes()).hexdigest() != want


def test_the_parse_gives_the_same_table_without_jemalloc(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The parse allocates from pyarrow's jemalloc pool where there is one; a pyarrow built
    without it parses on its default pool, the same table."""
    import pyarrow as pa

    from reports.table import parse

    path = tmp_path / "net.jsonl"
    path.write_text("".join(json.dumps({**to_dict(r), "pass": 1}) + "\n" for r in _records()))
    with_pool = parse.read_json(path)

    def missing() -> None:
        raise NotImplementedError("jemalloc support is not built")

    monkeypatch.setattr(pa, "jemalloc_memory_pool", missing)
    assert parse.parse_pool() is None
    without = parse.read_json(path)
    assert with_pool is not None and without is not None and with_pool.equals(without)
    assert with_pool.num_rows == 10 and with_pool.schema == without.schema


def _lines(objs: list[dict]) -> str:
    return "".join(json.dumps(o) + "\n" for o in objs)


@pytest.mark.parametrize(
    "second_half",
    [
        {"round": 3},  # a field only the second half has: null in the first, as one parse gives
        {"pass": 2.5},  # an integer field in the first half, a float in the second
        {"pass": "two"},  # a number in the first half, text in the second
        {"pass": None},  # null in the second
    ],
)
def test_a_large_file_parsed_in_halves_is_the_whole_files_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, second_half: dict
) -> None:
    """read_json parses a large file as two halves at once; whatever the halves hold, the
    table (or the refusal) is what one parse of the whole file gives."""
    import pyarrow as pa

    from reports.table import parse

    recs = [{**to_dict(r), "pass": 1} for r in _records()]
    path = tmp_path / "net.jsonl"
    path.write_text(_lines(recs * 20) + _lines([{**to_dict(r), **second_half} for r in _records()] * 20))
    whole = parse._parse_stream(pa.OSFile(str(path)))
    monkeypatch.setattr(parse, "SPLIT_BYTES", 1000)
    with open(path, "rb") as fh:
        assert parse._middle_line(fh.fileno()) is not None  # the halves are taken
    halves = parse.read_json(path)
    assert (halves is None) == (whole is None)
    if whole is not None:
        assert halves.equals(whole) and halves.schema.names == whole.schema.names
        assert halves.num_rows == 400


def test_a_bad_line_in_either_half_refuses_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from reports.table import parse

    monkeypatch.setattr(parse, "SPLIT_BYTES", 1000)
    good = _lines([to_dict(r) for r in _records()] * 20)
    for text in ('{"schema": 1, "cut sho\n' + good + good, good + good + '{"schema": 1, "cut sho\n'):
        path = tmp_path / "net.jsonl"
        path.write_text(text)
        assert parse.read_json(path) is None


def test_middle_line_is_past_a_newline_at_or_after_the_middle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reports.table import parse

    monkeypatch.setattr(parse, "SPLIT_BYTES", 10)
    path = tmp_path / "f"
    for text, want in (
        ("aaaa\nbbbb\ncccc\n", 10),  # middle at 7, in "bbbb": past its newline
        ("aaaaaaaaaaaaaaaaaaaa\n", None),  # one line: no second half
        ("aaaaa\nbbbbbbbbbbbbbb", None),  # no newline after the middle
        ("short\n", None),  # under SPLIT_BYTES
    ):
        path.write_text(text)
        fd = os.open(path, os.O_RDONLY)
        try:
            assert parse._middle_line(fd) == want, text
        finally:
            os.close(fd)
