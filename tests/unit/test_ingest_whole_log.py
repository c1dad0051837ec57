"""An nccl-tests log is searched for its table from end to end: NCCL_DEBUG=INFO noise (or the
device lines of thousands of ranks) before the table used to hide it from `stoker report`
and `stoker import`, which looked at the first 200,000 characters only.

The log is tests/data/nccl_tests/v2.13_mpirun_all_reduce.log (real nccl-tests bytes); the
noise is that log's own four NCCL INFO lines, repeated until it is ~400 KB."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from reports.commands import import_cmd
from reports.ingest import stream
from reports.ingest.importers import import_dir
from reports.pipeline import collect
from tests.conftest import DATA

LOG = DATA / "nccl_tests" / "v2.13_mpirun_all_reduce.log"


def _noisy() -> str:
    lines = LOG.read_text().split("\n")
    noise = [ln for ln in lines if "NCCL INFO" in ln]
    assert len(noise) == 4
    header = next(i for i, ln in enumerate(lines) if "size         count" in ln)
    filler = noise * 1500  # 6,000 lines, ~400 KB: the table starts past 200,000 characters
    text = "\n".join([*lines[: header - 1], *filler, *lines[header - 1 :]])
    assert text.index("algbw") > 300_000
    return text


def _judged(directory: Path) -> tuple[str, list[tuple[str, str, object]], int]:
    v = collect(directory).verdict
    return v["verdict"], [(f["check"], f["status"], f.get("measured")) for f in v["findings"]], v["records"]


def test_report_judges_a_noisy_log_as_the_clean_one(tmp_path: Path) -> None:
    clean, noisy = tmp_path / "clean", tmp_path / "noisy"
    clean.mkdir()
    noisy.mkdir()
    (clean / "all_reduce.log").write_text(LOG.read_text())
    (noisy / "all_reduce.log").write_text(_noisy())
    got_clean, got_noisy = import_dir(clean), import_dir(noisy)
    # 6 rows, out-of-place and in-place: 12 records each, the same figures
    assert len(got_clean.net) == 12 == len(got_noisy.net)
    assert [r.busbw_GBps for r in got_noisy.net] == [r.busbw_GBps for r in got_clean.net]
    assert _judged(noisy) == _judged(clean)


def test_import_finds_the_table_past_the_noise_whole_or_streamed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "all_reduce.log"
    log.write_text(_noisy())
    import_cmd.main(argparse.Namespace(files=[str(log)], out=str(tmp_path / "whole"), op=None))
    whole = (tmp_path / "whole" / "net.jsonl").read_text().splitlines()
    assert len(whole) == 12
    # streamed (a log over STREAM_BYTES), read in 64 KB blocks: the table is 6 blocks in
    monkeypatch.setattr(stream, "STREAM_BYTES", 0)
    monkeypatch.setattr(stream, "_HEAD", 64 << 10)
    assert stream.streamable(log)
    import_cmd.main(argparse.Namespace(files=[str(log)], out=str(tmp_path / "streamed"), op=None))
    streamed = (tmp_path / "streamed" / "net.jsonl").read_text().splitlines()
    assert [json.loads(x) for x in streamed] == [json.loads(x) for x in whole]
    capsys.readouterr()


def test_report_names_a_log_too_large_for_it_instead_of_skipping_it_silently(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reports.ingest import importers

    (tmp_path / "all_reduce.log").write_text(_noisy())
    monkeypatch.setattr(importers, "_MAX_BYTES", 100_000)  # 256 MiB in use; the log is ~400 KB
    monkeypatch.setattr(stream, "STREAM_BYTES", 0)
    got = import_dir(tmp_path)
    assert not got.net
    size = (tmp_path / "all_reduce.log").stat().st_size
    assert got.notes == [
        f"all_reduce.log: {size / 1e6:.1f} MB, more than the 0.1 MB `stoker report` reads; not judged: run "
        f"`stoker import {tmp_path / 'all_reduce.log'} --out {tmp_path}` (it streams it)"
    ]
    # once imported (its run id among the directory's records), nothing more is said
    assert import_dir(tmp_path, known_run_ids=[stream.run_id_of(tmp_path / "all_reduce.log")]).notes == []
