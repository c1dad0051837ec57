"""`stoker report` and `stoker import` as users run them: real processes, exit codes,
one-line errors, files written."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from tests.conftest import DATA, STOKER, needs_tool

SAMPLES = DATA / "nccl_tests"


def _stoker(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*STOKER, *args], capture_output=True, text=True, timeout=120, cwd=DATA.parent.parent
    )


def test_report_fail_exit_1_and_three_files(tmp_path: Path) -> None:
    d = tmp_path / "results"
    shutil.copytree(DATA / "reports" / "basic", d)
    p = _stoker("report", str(d))
    assert p.returncode == 1, p.stderr
    # the golden set (tests/data/reports/golden/verdict.json): 5 figures under spec; its checkpoint,
    # from fio plus each of 32 ranks serialising its own shard, does not starve the workload
    assert p.stdout.startswith("verdict: fail — 5 findings to act on (5 below_spec). -> ")
    v = json.loads((d / "verdict.json").read_text())
    assert v["verdict"] == "fail" and set(v) >= {"verdict", "run_id", "findings"}
    assert (d / "report.md").read_text().startswith("# stoker report: golden-h100")
    assert (d / "report.html").read_text().startswith("<!DOCTYPE html>")


def test_report_pass_exit_0_from_a_dropped_in_nccl_tests_json(tmp_path: Path) -> None:
    shutil.copy(SAMPLES / "v2.17_all_reduce.json", tmp_path / "ar.json")
    p = _stoker("report", str(tmp_path))
    assert p.returncode == 0, p.stderr
    md = (tmp_path / "report.md").read_text()
    assert "8 ranks on 1 node · nccl-tests" in md and "303.07" in md
    assert "shouldnotleak" not in md and "shouldnotleak" not in (tmp_path / "report.html").read_text()


def test_report_bad_input_is_one_line_exit_2(tmp_path: Path) -> None:
    p = _stoker("report", str(tmp_path / "missing"))
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "no such results directory" in p.stderr
    p = _stoker("report", str(tmp_path))
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "no records" in p.stderr
    (tmp_path / "net.jsonl").write_text('{"schema": 1, "kind": "net", "op": "all_re\n\x00\n')
    p = _stoker("report", str(tmp_path))
    assert p.returncode == 2 and "2 unreadable lines" in p.stderr
    assert not (tmp_path / "report.md").exists()


def test_import_appends_records_once_and_report_reads_them(tmp_path: Path) -> None:
    out = tmp_path / "res"
    files = [str(SAMPLES / n) for n in ("v2.13_mpirun_all_reduce.log", "v2.17_srun_allgather_alltoall.log")]
    p = _stoker("import", *files, "--out", str(out))
    assert p.returncode == 0, p.stderr
    assert "12 net and 0 io records" in p.stdout
    lines = (out / "net.jsonl").read_text().splitlines()
    assert len(lines) == 24 and all(json.loads(x)["backend"] == "nccl-tests" for x in lines)
    assert len((out / "manifest.jsonl").read_text().splitlines()) == 2
    again = _stoker("import", files[0], "--out", str(out))
    assert again.returncode == 0 and "already imported" in again.stdout
    assert len((out / "net.jsonl").read_text().splitlines()) == 24
    # a copy of an imported log left in the directory is not counted twice
    shutil.copy(files[0], out / "ar.log")
    rep = _stoker("report", str(out))
    assert rep.returncode == 0, rep.stderr
    assert "24 network and 0 storage records" in (out / "report.md").read_text()


def test_import_unknown_or_missing_file_is_exit_2(tmp_path: Path) -> None:
    junk = tmp_path / "notes.txt"
    junk.write_text("nothing to see\n")
    p = _stoker("import", str(junk), "--out", str(tmp_path / "o"))
    assert p.returncode == 2 and "neither an nccl-tests log" in p.stderr and p.stderr.count("\n") == 1
    p = _stoker("import", str(tmp_path / "nope.log"), "--out", str(tmp_path / "o"))
    assert p.returncode == 2 and "no such file" in p.stderr
    assert not (tmp_path / "o").exists()


@needs_tool("fio")
def test_real_fio_json_dropped_in_is_imported_and_reported(tmp_path: Path) -> None:
    work = tmp_path / "rp_fio_work"
    work.mkdir()
    res = tmp_path / "res"
    res.mkdir()
    out = res / "ckpt-fio.json"
    subprocess.run(
        [
            "fio",
            "--name=ckpt",
            f"--directory={work}",
            "--size=8M",
            "--bs=1M",
            "--rw=write",
            "--end_fsync=1",
            "--numjobs=2",
            "--group_reporting",
            "--unlink=1",
            "--output-format=json",
            f"--output={out}",
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    p = _stoker("import", str(out), "--out", str(tmp_path / "imp"))
    assert p.returncode == 0, p.stderr
    (rec,) = [json.loads(x) for x in (tmp_path / "imp" / "io.jsonl").read_text().splitlines()]
    # 2 jobs x 8 MiB written, all of it in the measured window
    assert rec["backend"] == "fio" and rec["direction"] == "write" and rec["bytes"] == 2 * 8 * (1 << 20)
    rep = _stoker("report", str(res))
    assert rep.returncode == 0, rep.stderr
    md = (res / "report.md").read_text()
    # 1 MiB sequential writes synced at the end: a checkpoint write (docs/reports.md), fio's job named beside
    assert "ckpt-fio.json" in md and "| checkpoint_write | write |" in md and "fio job ckpt" in md
