"""nccl-tests outputs of several versions -> NetRecords; numbers checked by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reports.ingest import nccl_json, nccl_records
from reports.ingest.nccl_log import strip_prefix
from reports.ingest.nccl_records import op_from_name
from reports.ingest.nccl_tests import parse_text, ranks_from_factor
from tests.conftest import DATA

SAMPLES = DATA / "nccl_tests"


def _parse(name: str, op: str | None = None) -> nccl_records.Parsed:
    parsed = parse_text(
        (SAMPLES / name).read_text(), run_id="r", ts="2026-01-01T00:00:00Z", source_name=name, op=op
    )
    assert parsed is not None
    return parsed


def test_new_style_log_with_mpirun_prefixes_and_nccl_noise() -> None:
    p = _parse("v2.13_mpirun_all_reduce.log")
    assert len(p.records) == 12  # 6 sizes x (out-of-place, in-place)
    r = next(r for r in p.records if r.bytes == 67108864 and not r.in_place)
    # 64 MiB in 2900 us: 67108864 / 2.9e-3 / 1e9 = 23.14 GB/s; x 2*15/16 = 43.39
    assert (r.op, r.scope, r.backend, r.ranks, r.nodes) == ("all_reduce", "world", "nccl-tests", 16, 2)
    assert r.hosts == ("gpu-a01", "gpu-a02")
    assert r.time_s == pytest.approx(2900e-6)
    assert r.algbw_GBps == pytest.approx(23.14) and r.busbw_GBps == pytest.approx(43.39)
    assert (r.count, r.dtype, r.redop, r.root, r.wrong, r.iters, r.warmup) == (
        16777216,
        "float32",
        "sum",
        -1,
        0,
        20,
        5,
    )
    assert r.device == "NVIDIA H100 80GB HBM3"
    inplace = next(r for r in p.records if r.bytes == 67108864 and r.in_place)
    assert inplace.time_s == pytest.approx(2929e-6) and inplace.busbw_GBps == pytest.approx(42.96)
    assert p.avg_busbw_GBps == [35.47]
    assert p.manifest["versions"] == {"nccl": "2.18.3+cuda12.2"}
    assert len(p.manifest["devices"]) == 16


def test_old_style_log_without_root_column_and_max_error() -> None:
    p = _parse("all_reduce_perf_v2.4_old.txt")
    big = next(r for r in p.records if r.bytes == 134217728 and not r.in_place)
    # 128 MiB in 1320 us = 101.68 GB/s; x 2*7/8 = 177.94
    assert (big.algbw_GBps, big.busbw_GBps, big.ranks, big.hosts) == (101.68, 177.94, 8, ("dgx1-7",))
    assert big.root == -1 and big.extra["max_error"] == 0.0 and big.wrong == 0
    small = next(r for r in p.records if r.bytes == 8)
    assert small.extra["max_error"] == pytest.approx(1e-7)
    assert small.device == "Tesla V100-SXM2-32GB"


def test_srun_prefixes_two_tests_in_one_file_and_check_off() -> None:
    p = _parse("v2.17_srun_allgather_alltoall.log")
    assert {r.op for r in p.records} == {"all_gather", "alltoall"}
    ag = next(r for r in p.records if r.op == "all_gather" and r.bytes == 536870912 and not r.in_place)
    # 512 MiB in 24000 us = 22.37 GB/s; x 3/4 = 16.78
    assert (ag.algbw_GBps, ag.busbw_GBps, ag.ranks, ag.nodes) == (22.37, 16.78, 4, 2)
    assert ag.extra["check"] == "off" and ag.wrong == 0
    a2a = next(r for r in p.records if r.op == "alltoall" and r.bytes == 536870912 and not r.in_place)
    # 1.5 x the time: 36000 us -> 14.91 GB/s, busbw 11.18
    assert (a2a.time_s, a2a.algbw_GBps, a2a.busbw_GBps) == (pytest.approx(0.036), 14.91, 11.18)
    assert p.manifest["versions"] == {"nccl-tests": "2.17.1"}


def test_json_output_and_environment_not_copied() -> None:
    p = _parse("v2.17_all_reduce.json")
    assert len(p.records) == 6
    r = next(r for r in p.records if r.bytes == 1073741824 and not r.in_place)
    # 1 GiB in 6200 us: 1073741824 / 6.2e-3 / 1e9 = 173.18 GB/s; x 2*7/8 = 303.07
    assert r.algbw_GBps == pytest.approx(173.184, abs=1e-3) and r.busbw_GBps == pytest.approx(
        303.072, abs=1e-3
    )
    assert (r.ranks, r.hosts, r.dtype, r.count, r.root) == (8, ("h200-n1",), "bfloat16", 536870912, -1)
    assert p.manifest["versions"] == {"nccl": "2.27.3"}
    assert "shouldnotleak" not in json.dumps(p.manifest)
    assert p.avg_busbw_GBps == [250.1]


def test_per_iteration_columns_and_timestamps_line_up_by_header() -> None:
    text = "\n".join(
        [
            "# Collective test starting: reduce_scatter_perf",
            "#  Rank  0 Group  0 Pid 1 on a device  0 [0000:01:00] GPU",
            "#  Rank  1 Group  0 Pid 2 on b device  0 [0000:01:00] GPU",
            "#       size         count      type   redop    root     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%           timestamp",
            "     2097152        262144     float     sum      -1   100.00   20.97   10.49       0    95.00   120.00   119.00     3.10   200.00   10.49    5.24       0   190.00   210.00   209.00     2.00 2026-01-01 10:00:00",
        ]
    )
    p = parse_text(text, run_id="r", ts="t", source_name="x.log")
    assert p is not None
    out, inp = p.records
    # reduce_scatter, 2 ranks: 2 MiB / 100 us = 20.97 GB/s, x 1/2 = 10.49
    assert (out.busbw_GBps, inp.busbw_GBps, out.time_s, inp.in_place) == (
        10.49,
        5.24,
        pytest.approx(1e-4),
        True,
    )
    assert out.nodes == 2 and out.op == "reduce_scatter"


def test_unnamed_table_op_inferred_from_root_redop_and_bus_factor() -> None:
    body = (SAMPLES / "all_reduce_perf_v2.4_old.txt").read_text()
    p = parse_text(body, run_id="r", ts="t", source_name="slurm-1234.out")
    # redop sum, no root, busbw/algbw = 177.94/101.68 = 1.75 = 2*7/8 on 8 ranks: all_reduce
    assert p is not None and {r.op for r in p.records} == {"all_reduce"}


def test_ambiguous_unnamed_table_is_read_and_marked_inferred() -> None:
    text = (SAMPLES / "v2.17_srun_allgather_alltoall.log").read_text()
    text = "\n".join(line for line in text.splitlines() if "Collective test" not in line)
    p = parse_text(text, run_id="r", ts="t", source_name="slurm-99.out")
    # all_gather and alltoall both print redop none, root -1 and factor 3/4: both tables are
    # read as all_gather (the same busbw), and each record says the op was inferred and may be alltoall
    assert p is not None and len(p.records) == 12 and {r.op for r in p.records} == {"all_gather"}
    assert all("alltoall" in r.extra["inferred"]["op"] for r in p.records)
    forced = parse_text(text, run_id="r", ts="t", source_name="slurm-99.out", op="all_gather")
    assert forced is not None and len(forced.records) == 12
    assert all("inferred" not in r.extra for r in forced.records)


@pytest.mark.parametrize(
    ("lead", "timing", "ranks", "op"),
    [
        ({"redop": "sum", "root": "-1"}, {"algbw": "10", "busbw": "15"}, 4, "all_reduce"),
        ({"redop": "sum", "root": "-1"}, {"algbw": "10", "busbw": "7.5"}, 4, "reduce_scatter"),
        ({"redop": "none", "root": "-1"}, {"algbw": "10", "busbw": "7.5"}, 4, "all_gather"),
        ({"redop": "none", "root": "-1"}, {"algbw": "10", "busbw": "7.5"}, 0, "all_gather"),  # n = 1/(1-0.75)
        ({"redop": "sum", "root": "-1"}, {"algbw": "10", "busbw": "17.5"}, 0, "all_reduce"),  # n = 2/(2-1.75)
        ({"redop": "sum", "root": "0"}, {"algbw": "10", "busbw": "10"}, 4, "reduce"),
        ({"redop": "none", "root": "0"}, {"algbw": "10", "busbw": "10"}, 4, "broadcast"),
        ({"redop": "none", "root": "-1"}, {"algbw": "10", "busbw": "10"}, 4, "sendrecv"),
        ({"redop": "sum", "root": "-1"}, {"algbw": "0.00", "busbw": "0.00"}, 4, None),
    ],
)
def test_infer_op(lead: dict[str, str], timing: dict[str, str], ranks: int, op: str | None) -> None:
    assert nccl_records.infer_op(lead, timing, ranks) == op


def test_ranks_from_bus_factor_when_device_lines_are_missing() -> None:
    assert ranks_from_factor("all_reduce", 23.14, 43.39) == 16  # 2(n-1)/n = 1.875
    assert ranks_from_factor("all_gather", 22.37, 16.78) == 4  # (n-1)/n = 0.75
    assert ranks_from_factor("broadcast", 10.0, 10.0) == 0  # factor 1 tells nothing


@pytest.mark.parametrize(
    ("name", "op"),
    [
        ("all_reduce_perf", "all_reduce"),
        ("/opt/build/alltoall_perf_mpi", "alltoall"),
        ("AllReduce", "all_reduce"),
        ("reduce_scatter_perf", "reduce_scatter"),
        ("reduce_perf", "reduce"),
        ("sendrecv_perf", "sendrecv"),
        ("hypercube_perf", "hypercube"),
        ("multimem_perf", None),
    ],
)
def test_op_from_name(name: str, op: str | None) -> None:
    assert op_from_name(name) == op


@pytest.mark.parametrize(
    ("line", "out"),
    [
        ("[1,0]<stdout>:#  Rank  0 Group", "#  Rank  0 Group"),
        ("0: # nThread 1", "# nThread 1"),
        ("12: gpu:1:1 [0] NCCL INFO", "gpu:1:1 [0] NCCL INFO"),
        ("     8       2  float", "     8       2  float"),
    ],
)
def test_strip_prefix(line: str, out: str) -> None:
    assert strip_prefix(line) == out


def test_neither_format_is_none() -> None:
    assert parse_text("hello\n", run_id="r", ts="t", source_name="x") is None
    assert parse_text('{"a": 1}', run_id="r", ts="t", source_name="x") is None


def test_nccl_version_codes() -> None:
    assert nccl_records.nccl_version(22703) == "2.27.3" and nccl_records.nccl_version(2804) == "2.8.4"


def test_samples_exist() -> None:
    assert len(list(Path(SAMPLES).iterdir())) >= 4


def test_json_op_from_experiment_name_when_args_are_missing() -> None:
    obj = json.loads((SAMPLES / "v2.17_all_reduce.json").read_text())
    obj["args"] = []
    p = nccl_json.parse_json(obj, run_id="r", ts="t", source_name="out.json")
    assert {r.op for r in p.records} == {"all_reduce"}  # experiment_name "AllReduce"


def test_graph_mode_is_read_from_the_header_or_json_config() -> None:
    # "graph: 0" in the v2.13 header and config.graph 0 in the JSON: eager; a -G 1 run says 1;
    # the v2.4 header has no graph field, so its records do not claim either way
    assert {r.extra.get("graph") for r in _parse("v2.13_mpirun_all_reduce.log").records} == {False}
    assert {r.extra.get("graph") for r in _parse("v2.17_all_reduce.json").records} == {False}
    assert {"graph" in r.extra for r in _parse("all_reduce_perf_v2.4_old.txt").records} == {False}
    text = (SAMPLES / "v2.13_mpirun_all_reduce.log").read_text().replace("graph: 0", "graph: 1")
    parsed = parse_text(text, run_id="r", ts="t", source_name="all_reduce_perf.log")
    assert parsed is not None and {r.extra["graph"] for r in parsed.records} == {True}
