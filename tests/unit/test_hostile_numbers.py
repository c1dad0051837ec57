"""Numbers no machine gives, records of the wrong shape, and files that
are no files. Each is skipped and named or refused in one line (exit 2); a suspect figure
never turns a fail into anything else; nothing crashes (exit 70) or hangs."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from reports.judging.workload.workload import load_workload
from reports.shared.errors import UsageError
from reports.shared.records import to_dict
from reports.shared.spec import load_spec
from reports.table.read import read_records
from tests.conftest import DATA, STOKER
from tests.unit.recordgen import io, net

SPEC = "name: h100\naccelerator: h100-sxm\n"  # intra-node NVLink4, 450 GB/s


def _stoker(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*STOKER, *args], capture_output=True, text=True, timeout=timeout)


def _write(path: Path, objs: list[dict]) -> None:
    path.write_text("".join(json.dumps(o) + "\n" for o in objs))


def _slow_dir(tmp_path: Path, extra: list[dict] = ()) -> Path:
    """intra-node all_reduce at 200 GB/s on NVLink4 (450): a fail."""
    d = tmp_path / "r"
    d.mkdir()
    _write(
        d / "net.jsonl",
        [to_dict(net("intra-node", "all_reduce", 2**k, 200.0)) for k in range(20, 31)] + list(extra),
    )
    (d / "spec.yaml").write_text(SPEC)
    return d


def _one_line_2(p: subprocess.CompletedProcess[str], needle: str = "") -> None:
    assert p.returncode == 2, (p.returncode, p.stderr[-2000:])
    assert len(p.stderr.strip().splitlines()) == 1 and needle in p.stderr, p.stderr


def test_case7_one_impossible_row_keeps_the_fail(tmp_path: Path) -> None:
    big = {**to_dict(net("intra-node", "all_reduce", 2**31, 200.0)), "busbw_GBps": 1e9, "algbw_GBps": 5e8}
    d = _slow_dir(tmp_path, [big])
    p = _stoker("report", str(d))
    assert p.returncode == 1, p.stdout + p.stderr
    v = json.loads((d / "verdict.json").read_text())
    assert v["verdict"] == "fail" and v["skipped_lines"] == 1
    assert "beyond physical limits" in (d / "report.md").read_text()


def test_case7_impossible_row_alone_is_never_pass(tmp_path: Path) -> None:
    d = tmp_path / "r"
    d.mkdir()
    fast = [to_dict(net("intra-node", "all_reduce", 2**k, 440.0)) for k in range(20, 31)]
    _write(d / "net.jsonl", [*fast, {**fast[-1], "busbw_GBps": 1e9}])
    (d / "spec.yaml").write_text(SPEC)
    p = _stoker("report", str(d))
    assert p.returncode == 3, p.stdout + p.stderr  # incomplete: a record could not be judged
    assert json.loads((d / "verdict.json").read_text())["verdict"] == "incomplete"


def test_case6_impossible_aggregate_is_skipped_and_named(tmp_path: Path) -> None:
    rec = {**to_dict(io("checkpoint", "write", "/data", 95.0, per_host={"vm": 95.0})), "bw_GBps": 1e308}
    d = tmp_path / "r"
    d.mkdir()
    _write(d / "io.jsonl", [rec])
    rs = read_records(d)
    assert rs.io == [] and rs.skipped[0].reason.startswith("beyond physical limits: bw_GBps is 1e+308")
    p = _stoker("report", str(d))
    assert p.returncode != 0 and "PASS" not in p.stdout, p.stdout + p.stderr


def test_case6_records_of_two_runs_need_runs(tmp_path: Path) -> None:
    other = {**to_dict(net("intra-node", "all_reduce", 2**30, 440.0)), "run_id": "other-run"}
    d = _slow_dir(tmp_path, [other])
    _one_line_2(_stoker("report", str(d)), "--runs")
    p = _stoker("report", str(d), "--runs", "r1")
    assert p.returncode == 1, p.stdout + p.stderr
    _one_line_2(_stoker("report", str(d), "--runs", "nope"), "no records of that run")


@pytest.mark.parametrize(
    "line",
    [
        '{"busbw_GBps": ' + "9" * 5000 + "}",
        "[" * 100_000 + "]" * 100_000,
        None,  # "failed": 5 and friends, below
    ],
)
def test_case8_hostile_record_lines_are_skipped(tmp_path: Path, line: str | None) -> None:
    d = _slow_dir(tmp_path)
    base = to_dict(net("intra-node", "all_reduce", 2**20, 200.0))
    lines = (
        [line]
        if line
        else [
            json.dumps({**base, "in_place": "yes"}),
            json.dumps({**base, "op": 7}),
            '{"run_id": "\\ud800", "x": 1}',
        ]
    )
    with open(d / "net.jsonl", "a") as fh:
        fh.write("".join(x + "\n" for x in lines))
    iorec = to_dict(io("checkpoint", "write", "/data", 1.0))
    _write(d / "io.jsonl", [{**iorec, "failed": 5}, {**iorec, "workload": 7}])
    p = _stoker("report", str(d))
    assert p.returncode == 1, p.stdout + p.stderr[-3000:]
    assert json.loads((d / "verdict.json").read_text())["skipped_lines"] == len(lines) + 2


@pytest.mark.parametrize(
    "text,needle",
    [
        ("name: x\naccelerator: h100-sxm\ngpus_per_node: " + "9" * 400 + "\n", "gpus_per_node"),
        ("name: x\n" + "a:\n" * 0 + "k: " + "[" * 5000 + "]" * 5000 + "\n", "deep"),
        ("name: x\nk:" + "".join("\n" + " " * i + "a:" for i in range(1, 300)) + " 1\n", "deep"),
        (b"name: caf\xe9\n", "not UTF-8"),
        (b"\x00\x01\x02\xff\xfe", "not UTF-8"),
    ],
)
def test_case8_hostile_spec_is_one_line(tmp_path: Path, text: str | bytes, needle: str) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(UsageError, match=needle):
        load_spec(spec)
    d = _slow_dir(tmp_path)
    _one_line_2(_stoker("report", str(d), "--spec", str(spec)), needle)


LAUGHS = "a0: &a0 [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]\n" for i in range(1, 10)
)


@pytest.mark.parametrize("kind", ["spec", "workload"])
def test_case9_billion_laughs_refused_fast(tmp_path: Path, kind: str) -> None:
    f = tmp_path / f"{kind}.yaml"
    f.write_text("name: x\n" + LAUGHS)
    with pytest.raises(UsageError, match="expands to more than"):
        (load_spec if kind == "spec" else load_workload)(f)
    d = _slow_dir(tmp_path)
    _one_line_2(_stoker("report", str(d), f"--{kind}", str(f), timeout=30), "expands to more than")


@pytest.mark.parametrize("field,value", [("bytes_per_sample", 1e308), ("params", 1e308)])
def test_case5_overflowing_demand_refused(tmp_path: Path, field: str, value: float) -> None:
    wl = tmp_path / "w.yaml"
    if field == "params":
        wl.write_text(f"name: big\nparams: {value}\ngpus: 8\nglobal_batch_tokens: 1000000\n")
    else:
        wl.write_text(f"name: big\ndataloader: {{bytes_per_sample: {value}, samples_per_s_per_gpu: 10}}\n")
    d = _slow_dir(tmp_path)
    p = _stoker("report", str(d), "--workload", str(wl))
    _one_line_2(p, field)
    assert not (d / "report.md").exists()


def test_case5_derived_overflow_is_refused() -> None:
    from reports.judging.workload.model_rows import row as _row

    with pytest.raises(UsageError, match="overflow"):
        _row(
            "dataloader",
            "shared storage",
            "dataloader read",
            float("inf"),
            1.0,
            "GB/s",
            float("inf"),
            1.0,
            0.05,
            None,
        )


@pytest.mark.parametrize("make", ["fifo", "devzero", "dir"])
def test_case8_records_that_are_no_file(tmp_path: Path, make: str) -> None:
    d = _slow_dir(tmp_path)
    target = d / "io.jsonl"
    if make == "fifo":
        os.mkfifo(target)
    elif make == "devzero":
        target.symlink_to("/dev/zero")
    else:
        target.mkdir()
    _one_line_2(_stoker("report", str(d), timeout=30), "regular file")


def test_case8_spec_fifo_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "spec.yaml"
    os.mkfifo(fifo)
    with pytest.raises(UsageError, match="FIFO"):
        load_spec(fifo)


def test_case6_compare_refuses_a_dir_of_two_runs(tmp_path: Path) -> None:
    other = {**to_dict(net("intra-node", "all_reduce", 2**30, 440.0)), "run_id": "other-run"}
    d = _slow_dir(tmp_path, [other])
    b = tmp_path / "b"
    b.mkdir()
    _write(b / "net.jsonl", [to_dict(net("intra-node", "all_reduce", 2**k, 300.0)) for k in range(20, 31)])
    _one_line_2(_stoker("compare", str(d), str(b), "--out", str(tmp_path / "o")), "one run per directory")


def test_case7_imported_nccl_row_at_1e9_keeps_the_fail(tmp_path: Path) -> None:
    # the mpirun log (hand-written in the real format, tests/data/SOURCES.md; 2 nodes x 8 H100,
    # ~46 GB/s busbw) against 8 x XDR per node: a fail;
    # its largest row's in-place busbw made 1e9 — it made the import `unjudged`, exit 0
    log = (DATA / "nccl_tests" / "v2.13_mpirun_all_reduce.log").read_text()
    spec = (
        "name: ndr\naccelerator: h100-sxm\ngpus_per_node: 8\n"
        "network: {intra_node: nvlink4, inter_node: {link: ib-xdr, count: 8}}\n"
    )
    for name, text in (
        ("honest", log),
        ("hostile", log.replace("43935.0   24.44   45.82", "43935.0   24.44   1e9")),
    ):
        d = tmp_path / name
        d.mkdir()
        (d / "all_reduce_perf.log").write_text(text)
        (d / "spec.yaml").write_text(spec)
        p = _stoker("report", str(d))
        v = json.loads((d / "verdict.json").read_text())
        assert (p.returncode, v["verdict"]) == (1, "fail"), (name, p.stdout, v["findings"])
    # the row is dropped at import, named: its busbw is not its algbw x the bus factor
    report = (tmp_path / "hostile" / "report.md").read_text()
    assert "1e9" not in log and "line 33: busbw 1e+09 is not algbw 24.44 x 1.875" in report
