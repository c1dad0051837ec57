"""`stoker import` on the damaged and unusual files of tests/data/import_cases:
each imports with the right numbers (computed by hand from the file's text), or says in
one line which file, which line and what was expected; a partial import says what it skipped."""

from __future__ import annotations

from pathlib import Path

import pytest

from launchers import cli
from reports.ingest.importers import import_file
from reports.ingest.nccl_tests import ranks_from_factor
from reports.shared.errors import UsageError
from reports.table.read import read_records
from tests.conftest import DATA

CASES = DATA / "import_cases"


def _by(recs: list, in_place: bool) -> dict[int, tuple[float, float, float]]:
    return {
        r.bytes: (round(r.time_s * 1e6, 2), r.algbw_GBps, r.busbw_GBps)
        for r in recs
        if r.in_place is in_place
    }


def test_tiny_rows_never_divide_by_zero_and_ranks_come_from_the_largest_row() -> None:
    got = import_file(CASES / "all_reduce_perf_tiny_rows.log")
    assert len(got.net) == 10 and not got.notes
    assert ranks_from_factor("all_reduce", 0.01, 0.02) == 0  # 2 / (2 - 2): was ZeroDivisionError
    # no device lines: 8.34 / 4.77 = 1.748 = 2 (n - 1) / n at n = 8, for every row (0.11 / 0.06 would say 12)
    assert {r.ranks for r in got.net} == {8} and {r.op for r in got.net} == {"all_reduce"}
    assert _by(got.net, False) == {
        8: (30.10, 0.0, 0.0),
        128: (31.00, 0.01, 0.02),
        2048: (33.00, 0.06, 0.11),
        32768: (40.00, 0.82, 1.43),
        524288: (110.00, 4.77, 8.34),
    }
    assert _by(got.net, True)[524288] == (108.00, 4.85, 8.50)


def test_old_alltoall_without_root_with_error_column_and_blank_redop() -> None:
    got = import_file(CASES / "alltoall_perf_v2.0_old.log")
    assert len(got.net) == 6 and not got.notes
    r = got.net[0]
    assert (r.op, r.ranks, r.redop, r.root, r.hosts, r.dtype) == (
        "alltoall",
        4,
        "none",
        -1,
        ("gpu-old1",),
        "float32",
    )
    assert r.extra["max_error"] == 0.0 and r.wrong == 0
    assert _by(got.net, False) == {
        1024: (25.10, 0.04, 0.03),
        32768: (41.00, 0.80, 0.60),
        1048576: (400.00, 2.62, 1.97),
    }
    assert _by(got.net, True) == {
        1024: (24.90, 0.04, 0.03),
        32768: (40.50, 0.81, 0.61),
        1048576: (398.00, 2.63, 1.98),
    }


def test_log_with_stripped_comment_markers() -> None:
    got = import_file(CASES / "all_gather_perf_stripped.log")
    assert len(got.net) == 6 and not got.notes
    assert {(r.op, r.ranks, r.hosts, r.warmup, r.iters) for r in got.net} == {
        ("all_gather", 4, ("dgx-a",), 5, 20)
    }
    assert _by(got.net, False)[16777216] == (340.00, 49.34, 37.01)
    assert got.manifests[0]["versions"] == {"nccl-tests": "2.13.8"}
    assert got.manifests[0]["settings"] == {"avg_bus_bandwidth_GBps": [29.6]}


def test_row_cut_mid_line_is_skipped_and_said() -> None:
    got = import_file(CASES / "slurm-4242.out")
    # the op is read from the last whole row: 201.33 / 134.22 = 1.5 = 2 (4 - 1) / 4 with 4 device lines
    assert {r.op for r in got.net} == {"all_reduce"} and len(got.net) == 6
    assert sorted(_by(got.net, False)) == [1048576, 8388608, 67108864]
    assert got.notes == ["slurm-4242.out: skipped 1 of 4 rows: line 16: 7 of 13 columns (a line cut short?)"]
    with_op = import_file(CASES / "slurm-4242.out", op="all_reduce")
    assert len(with_op.net) == 6 and with_op.notes == got.notes


def test_word_and_nan_cells_skip_their_rows_and_are_named() -> None:
    got = import_file(CASES / "sendrecv_perf_bad_cells.log")
    assert len(got.net) == 20  # 12 rows, 2 skipped whole, 2 records each
    assert sorted({r.bytes for r in got.net}) == [8 << i for i in range(12) if i not in (4, 7)]
    assert got.notes == [
        "sendrecv_perf_bad_cells.log: skipped 2 of 12 rows: line 12: time 'fast' is not a "
        "number >= 0; line 15: busbw 'nan' is not a number >= 0"
    ]
    assert {(r.ranks, r.nodes) for r in got.net} == {(2, 2)}


def test_json_with_missing_fields_says_which_results() -> None:
    got = import_file(CASES / "all_reduce_missing_fields.json")
    assert len(got.net) == 2 and {r.bytes for r in got.net} == {1048576}
    assert _by(got.net, False) == {1048576: (20.0, 52.43, 52.43)}
    assert got.notes == [
        "all_reduce_missing_fields.json: skipped 2 of 3 results: results[1]: out_of_place has "
        "no bus_bw; results[2]: out_of_place has no time"
    ]


def test_fio_client_server_with_global_options_as_a_list() -> None:
    got = import_file(CASES / "fio-3.36_client_server_global_list.json")
    (r,) = got.io
    # 2 x 64 MiB over the longest runtime, 800 ms; per host 64 MiB / 500 ms and / 800 ms
    assert (r.direction, r.hosts, r.bytes, r.failed) == ("write", ("io-a", "io-b"), 134217728, "")
    assert r.bw_GBps == pytest.approx(134217728 / 0.8 / 1e9, abs=1e-6)  # records keep 6 decimals
    assert r.per_host_bw_GBps == {
        "io-a": pytest.approx(0.134217728, abs=1e-6),
        "io-b": pytest.approx(0.08388608, abs=1e-6),
    }
    # no histogram: p50 the I/O-weighted mean (64 I/Os each) of 2 and 3 ms, p99 the larger one
    assert r.lat_ms == {"p50": pytest.approx(2.5), "p99": pytest.approx(9.0)}


def test_fio_negative_bandwidth_and_zero_runtime_is_marked_failed() -> None:
    got = import_file(CASES / "fio-3.33_negative_bw_zero_runtime.json")
    by = {r.workload: r for r in got.io}
    assert by["good"].failed == "" and by["good"].bw_GBps == pytest.approx(0.1048576, abs=1e-6)
    assert by["broken"].failed == "fio printed a negative bw" and by["broken"].bw_GBps == 0.0


def test_truncated_fio_json_names_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(UsageError, match=r"^fio-3.33_truncated.json: no complete fio JSON document"):
        import_file(CASES / "fio-3.33_truncated.json")
    rc = cli.main(["import", str(CASES / "fio-3.33_truncated.json"), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "fio-3.33_truncated.json" in err
    assert not (tmp_path / "o").exists()


def test_partial_import_says_what_it_skipped_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc = cli.main(["import", str(CASES / "sendrecv_perf_bad_cells.log"), "--out", str(tmp_path)])
    out, err = capsys.readouterr()
    assert rc == 0 and "20 net and 0 io records" in out
    assert "skipped 2 of 12 rows: line 12" in err
    assert len(read_records(tmp_path).net) == 20


def test_a_file_of_only_bad_rows_is_exit_2_naming_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "all_reduce_perf.log"
    bad.write_text(
        "#       size         count      type   redop    root     time   algbw   busbw #wrong\n"
        "        1024           256     float     sum      -1     nan    0.10    0.10      0\n"
    )
    rc = cli.main(["import", str(bad), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1
    assert "all_reduce_perf.log: skipped 1 of 1 rows: line 2: time 'nan' is not a number >= 0" in err
