"""net.jsonl read as columns (reports.columns) gives the records the line reader gives."""

from __future__ import annotations

import json
from pathlib import Path

from reports.columns import NetTable, net_columns, scope_records
from reports.judging.localise import pair_values
from reports.records import RecordWriter, iter_jsonl, read_records, to_dict
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
    assert isinstance(rs.net, NetTable) and not rs.skipped
    by_line = [obj for _, obj, _ in iter_jsonl(tmp_path / "net.jsonl")]
    assert [to_dict(r) for r in rs.net] == by_line
    f = net_columns(rs.net)
    assert list(f["host"]) == ["n1", "n1", "n2", "n2", "n3", "n3", "n1", "n3", "n2", "n1"]
    assert [(a, b) for a, b in zip(f["pair_a"], f["pair_b"]) if isinstance(a, str)] == [
        ("n1", "n2"),
        ("n1", "n3"),
        ("n2", "n3"),
    ]
    assert dict(pair_values(rs.net)) == {("n1", "n2"): 40.0, ("n1", "n3"): 12.0, ("n2", "n3"): 11.0}
    fresh = read_records(tmp_path).net
    assert scope_records(fresh, "groups") == [] and fresh._records is None  # nothing built for nothing
    assert [r.hosts for r in scope_records(fresh, "pair")] == [("n1", "n2"), ("n3", "n1"), ("n2", "n3")]
    assert fresh._records is None  # only the pairs were built
    rs.net += [net("groups", "all_reduce", 2**30, 5.0, ("n1", "n2"), ranks=2)]
    assert len(rs.net + []) == 11 and len([] + rs.net) == 11
    assert len(rs.net) == 11 and [r.busbw_GBps for r in scope_records(rs.net, "groups")] == [5.0]


def test_a_negative_figure_is_named_on_the_column_path(tmp_path: Path) -> None:
    lines = [to_dict(r) for r in _records()]
    lines[3]["busbw_GBps"] = -2.5
    (tmp_path / "net.jsonl").write_text("".join(json.dumps(o) + "\n" for o in lines))
    rs = read_records(tmp_path)
    assert isinstance(rs.net, NetTable) and len(rs.net) == 9
    assert [(s.file, s.line, s.reason) for s in rs.skipped] == [
        ("net.jsonl", 4, "busbw_GBps is -2.5: expected a finite number >= 0")
    ]
