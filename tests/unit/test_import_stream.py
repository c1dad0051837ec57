"""Scale: a log too large to hold is imported streamed (reports/ingest/stream.py)
with the very records, run id, notes and manifest the whole-text import gives."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from reports.commands import import_cmd
from reports.ingest import stream
from tests.conftest import DATA

LOGS = sorted((DATA / "nccl_tests").glob("*.log")) + [DATA / "nccl_tests" / "all_reduce_perf_v2.4_old.txt"]


def _import(log: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> tuple[list[dict], str]:
    import_cmd.main(argparse.Namespace(files=[str(log)], out=str(out), op=None))
    recs = [json.loads(x) for x in (out / "net.jsonl").read_text().splitlines()]
    return recs, capsys.readouterr().out


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.name)
def test_streamed_import_is_the_whole_text_import(
    tmp_path: Path, log: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # the log, garbled in one row and with a non-UTF-8 byte, many times over
    text = log.read_bytes()
    big = tmp_path / log.name
    big.write_bytes(text * 3 + b"\xff\xfe stray bytes\n" + text.replace(b" 0 ", b" x ", 1))
    whole, _ = _import(big, tmp_path / "whole", capsys)
    monkeypatch.setattr(stream, "STREAM_BYTES", 0)
    assert stream.streamable(big)
    streamed, said = _import(big, tmp_path / "streamed", capsys)
    assert streamed == whole and whole
    assert (tmp_path / "streamed" / "manifest.jsonl").read_text() == (
        tmp_path / "whole" / "manifest.jsonl"
    ).read_text()
    # a second import of the same file is seen as one, streamed or not
    assert "already imported" in _import(big, tmp_path / "whole", capsys)[1]
    assert "already imported" in _import(big, tmp_path / "streamed", capsys)[1]
    assert said.startswith(f"{big}: {len(whole)} net")
