"""Records with unusable figures (NaN, infinite, negative, wrongly typed) are refused where
they are read, named by file and line, and never change a verdict."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reports import pipeline
from reports.shared.errors import UsageError
from reports.shared.records import RecordWriter, to_dict
from reports.shared.spec import parse_spec
from reports.table.read import read_records
from tests.unit.recordgen import io, judge_records, net

SPEC = parse_spec({"name": "h100", "accelerator": "h100-sxm"}, "spec.yaml")  # intra-node: NVLink4, 450 GB/s


def _write(path: Path, objs: list[dict]) -> None:
    # json.dumps writes NaN / Infinity as Python's json does (and as a careless writer would)
    path.write_text("".join(json.dumps(o) + "\n" for o in objs))


def _slow_sweep() -> list[dict]:
    """intra-node all_reduce at 200 GB/s from 1 MiB to 1 GiB: 44% of 450, below spec."""
    return [to_dict(net("intra-node", "all_reduce", 2**k, 200.0)) for k in range(20, 31)]


def test_nan_busbw_never_turns_a_slow_component_ok(tmp_path: Path) -> None:
    # A second group at the top sizes with NaN busbw: the old reader took it, the median
    # of [200, nan] was nan, and nan < 0.8 x 450 is False: "ok".
    nans = [
        {**to_dict(net("intra-node", "all_reduce", 2**k, 1.0, group=1)), "busbw_GBps": float("nan")}
        for k in range(28, 31)
    ]
    _write(tmp_path / "net.jsonl", _slow_sweep() + nans)
    rs = read_records(tmp_path)
    assert len(rs.net.records()) == 11
    assert [(s.file, s.line) for s in rs.skipped] == [("net.jsonl", 12), ("net.jsonl", 13), ("net.jsonl", 14)]
    assert rs.skipped[0].reason == "busbw_GBps is nan: expected a finite number >= 0"
    j = judge_records(rs, SPEC, None)
    (intra,) = [f for f in j.findings if f.component == "intra-node network"]
    assert (intra.status, intra.measured, intra.expected) == ("below_spec", 200.0, 450.0)
    assert j.verdict == "fail"
    assert any(n.startswith("3 unreadable line(s) skipped: net.jsonl:12 busbw_GBps is nan") for n in j.notes)


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("busbw_GBps", "fast", 'busbw_GBps is "fast": expected a finite number >= 0'),
        ("busbw_GBps", float("inf"), "busbw_GBps is inf: expected a finite number >= 0"),
        ("busbw_GBps", -3.0, "busbw_GBps is -3.0: expected a finite number >= 0"),
        ("algbw_GBps", None, "algbw_GBps is null: expected a finite number >= 0"),
        ("time_s", True, "time_s is true: expected a finite number >= 0"),
        ("time_s", float("-inf"), "time_s is -inf: expected a finite number >= 0"),
        ("bytes", 1024.5, "bytes is 1024.5: expected an integer >= 0"),
        ("bytes", "1M", 'bytes is "1M": expected an integer >= 0'),
        ("wrong", -1, "wrong is -1: expected an integer >= 0"),
        ("ranks", [8], "ranks is [8]: expected an integer >= 0"),
        ("time_p99_s", float("nan"), "time_p99_s is nan: expected a finite number >= 0"),
        ("hosts", "n1", "hosts is not a list of host names"),
    ],
)
def test_each_bad_net_figure_is_named_with_file_and_line(
    tmp_path: Path, field: str, value: object, reason: str
) -> None:
    good = _slow_sweep()
    bad = {**good[-1], field: value, "bytes": 2**31} if field != "bytes" else {**good[-1], field: value}
    _write(tmp_path / "net.jsonl", [*good, bad])
    rs = read_records(tmp_path)
    assert [(s.file, s.line, s.reason) for s in rs.skipped] == [("net.jsonl", 12, reason)]
    assert [r.bytes for r in rs.net.records()] == [2**k for k in range(20, 31)]
    (intra,) = [f for f in judge_records(rs, SPEC, None).findings if f.component == "intra-node network"]
    assert (intra.status, intra.measured) == ("below_spec", 200.0)  # as if the line were not there


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"bw_GBps": float("nan")}, "bw_GBps is nan: expected a finite number >= 0"),
        ({"bw_GBps": -18.0}, "bw_GBps is -18.0: expected a finite number >= 0"),
        ({"iops": "many"}, 'iops is "many": expected a finite number >= 0'),
        (
            {"per_host_bw_GBps": {"n1": 9.0, "n2": float("nan")}},
            "per_host_bw_GBps.n2 is nan: expected a finite number >= 0",
        ),
        ({"per_host_bw_GBps": [9.0]}, "per_host_bw_GBps is not an object of figures"),
        ({"lat_ms": {"p50": -1.0}}, "lat_ms.p50 is -1.0: expected a finite number >= 0"),
        ({"procs": 2.5}, "procs is 2.5: expected an integer >= 0"),
    ],
)
def test_each_bad_io_figure_is_named_with_file_and_line(tmp_path: Path, change: dict, reason: str) -> None:
    good = to_dict(io("checkpoint_write", "write", "/data/ckpt", 18.0))
    _write(tmp_path / "io.jsonl", [good, {**good, **change}])
    rs = read_records(tmp_path)
    assert [(s.file, s.line, s.reason) for s in rs.skipped] == [("io.jsonl", 2, reason)]
    assert [r.bw_GBps for r in rs.io] == [18.0]


def test_a_failed_io_record_with_zero_figures_is_still_read(tmp_path: Path) -> None:
    with RecordWriter(tmp_path / "io.jsonl") as w:
        w.write(io("checkpoint_write", "write", "/data/ckpt", 0.0, failed="disk full", per_host={"n1": 0.0}))
    rs = read_records(tmp_path)
    assert not rs.skipped and rs.io[0].failed == "disk full"


def test_an_all_nan_file_is_one_line_naming_the_first_bad_line(tmp_path: Path) -> None:
    _write(
        tmp_path / "net.jsonl",
        [{**o, "busbw_GBps": float("nan"), "algbw_GBps": float("nan")} for o in _slow_sweep()],
    )
    with pytest.raises(UsageError) as e:
        pipeline.build(tmp_path)
    msg = str(e.value)
    assert "\n" not in msg and e.value.exit_code == 2
    assert (
        "no records (11 unreadable lines; first net.jsonl:1: algbw_GBps is nan: expected a finite number >= 0)"
        in msg
    )


def test_report_counts_the_skipped_lines_and_renders(tmp_path: Path) -> None:
    _write(tmp_path / "net.jsonl", [*_slow_sweep(), {**_slow_sweep()[0], "busbw_GBps": "fast"}])
    out = pipeline.build(tmp_path, None, None)
    assert out.verdict["skipped_lines"] == 1
    assert "1 line(s) could not be read" in out.markdown and "net.jsonl" in out.markdown
    assert out.html.startswith("<!DOCTYPE html>")
