"""Finding and reading foreign results in a results directory (files on tmp_path)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from reports.ingest.importers import candidates, import_dir, import_file, import_text
from reports.ingest.sniff import run_id_for
from reports.shared.errors import UsageError
from tests.conftest import DATA

SAMPLES = DATA / "nccl_tests"


def test_candidates_skip_own_files_hidden_files_and_deep_folders(tmp_path: Path) -> None:
    for name in (
        "net.jsonl",
        "report.md",
        "verdict.json",
        ".hidden.log",
        "a.log",
        "b.json",
        "c.png",
        "sub/d.out",
        "sub/deeper/e.log",
        ".git/f.log",
    ):
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("x")
    assert [p.relative_to(tmp_path).as_posix() for p in candidates(tmp_path)] == [
        "a.log",
        "b.json",
        "sub/d.out",
    ]


def test_import_dir_reads_by_content_and_skips_known_run_ids(tmp_path: Path) -> None:
    shutil.copy(SAMPLES / "v2.17_all_reduce.json", tmp_path / "results.json")
    shutil.copy(SAMPLES / "v2.13_mpirun_all_reduce.log", tmp_path / "job-1234.out")
    (tmp_path / "notes.txt").write_text("the cluster was busy\n")
    got = import_dir(tmp_path)
    assert sorted(got.sources) == ["job-1234.out", "results.json"] and len(got.net) == 18 and not got.notes
    known = run_id_for((tmp_path / "job-1234.out").read_text())
    again = import_dir(tmp_path, known_run_ids=[known])
    assert again.sources == ["results.json"]


def test_run_id_depends_on_content_only(tmp_path: Path) -> None:
    a = import_file(SAMPLES / "v2.17_all_reduce.json")
    shutil.copy(SAMPLES / "v2.17_all_reduce.json", tmp_path / "copy.json")
    b = import_file(tmp_path / "copy.json")
    assert {r.run_id for r in a.net} == {r.run_id for r in b.net} and len({r.run_id for r in a.net}) == 1


def test_unknown_and_missing_files_are_usage_errors(tmp_path: Path) -> None:
    (tmp_path / "x.log").write_text("hello")
    with pytest.raises(UsageError, match="neither an nccl-tests"):
        import_file(tmp_path / "x.log")
    with pytest.raises(UsageError, match="no such file"):
        import_file(tmp_path / "y.log")


def test_nccl_tests_log_without_rows_is_noted() -> None:
    text = (
        "# nThread 1\n#       size         count      type   redop    root     time   algbw   busbw #wrong\n"
    )
    got = import_text(text + "# algbw busbw\n", source_name="cut.log", ts="t")
    assert got is not None and got.net == [] and "no result rows" in got.notes[0]


def test_fio_json_goes_to_io_records() -> None:
    fio = DATA / "fio" / "fio-3.33_ckpt_group.json"
    if not fio.exists():
        pytest.skip("fio samples of the iobench area not present")
    got = import_file(fio)
    assert got.io and all(r.backend == "fio" for r in got.io) and not got.net


def test_stoker_net_stdout_kept_in_dir_is_not_imported_twice(tmp_path: Path) -> None:
    # What `stoker net` prints (copied from a real run), e.g. kept as a Slurm job log.
    table = [
        "# stoker net: scope world, group 0, 2 ranks on host h1, backend gloo, dtype float32",
        "#                                                               out-of-place",
        "#       size         count      type   redop    root      time    algbw    busbw  #wrong",
        "#        (B)    (elements)                                (us)   (GB/s)   (GB/s)",
        "# op all_reduce",
        "     1048576        262144   float32     sum      -1    1000.0     1.05     1.05       0",
    ]
    (tmp_path / "slurm-77.out").write_text("\n".join(table) + "\n")
    assert import_dir(tmp_path).net == []
    with pytest.raises(UsageError, match="stoker's own output"):
        import_file(tmp_path / "slurm-77.out")
