"""A streamed log parsed in parts on several processes (reports/ingest/stream_chunks.py) gives
the very lines, notes and manifest one reading of the whole text gives: cut only where a
test starts, line numbers counted from the file's start, and a part re-read in order when
its cut turned out not to start a table (a test with no rows just before it)."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from reports.ingest import nccl_tests, stream, stream_chunks
from reports.ingest.sniff import mtime_utc, run_id_for
from reports.shared.records import to_dict
from tests.conftest import DATA

LOGS = sorted((DATA / "nccl_tests").glob("*.log")) + sorted((DATA / "import_cases").glob("*.log"))
LOGS += [DATA / "nccl_tests" / "all_reduce_perf_v2.4_old.txt", DATA / "import_cases" / "slurm-4242.out"]


def _whole(path: Path) -> tuple[bytes, list[str], dict]:
    """What parse_log makes of the whole text: the spool's bytes, the notes, the manifest."""
    text = path.read_bytes().decode("utf-8", errors="replace")
    p = nccl_tests.parse_log(text, run_id=run_id_for(text), ts=mtime_utc(path), source_name=path.name)
    lines = "".join(json.dumps(to_dict(r), separators=(",", ":")) + "\n" for r in p.records)
    return lines.encode(), p.notes, p.manifest


def _in_parts(path: Path, monkeypatch: pytest.MonkeyPatch, part_bytes: int) -> tuple[bytes, list[str], dict]:
    monkeypatch.setattr(stream_chunks, "PART_BYTES", part_bytes)
    monkeypatch.setattr(stream_chunks, "workers", lambda: 2)
    got = stream.stream_log(path, None)
    with got.spool as spool:
        data = spool.read()
    assert got.count == data.count(b"\n")
    return data, got.notes, got.manifest


def _log(tmp_path: Path, seed: int, damage: float) -> Path:
    """Fixture logs one after the other, some lines garbled, some tests cut before their rows."""
    rng = random.Random(seed)
    out: list[str] = []
    for _ in range(60):
        lines = rng.choice(LOGS).read_bytes().decode("utf-8", errors="replace").split("\n")
        if rng.random() < 0.2:  # the test died before its table: the next cut follows no rows
            lines = [ln for ln in lines if "algbw" not in ln]
        for i, ln in enumerate(lines):
            if rng.random() < damage:
                toks = ln.split(" ")
                toks[rng.randrange(len(toks))] = rng.choice(["x", "nan", "N/A", "-1", "7", "", "#"])
                lines[i] = " ".join(toks)
        out += lines
    # half named for no test: each table's op then comes from its own lines, or is noted
    path = tmp_path / (f"all_reduce_perf_{seed}.log" if seed % 2 else f"slurm-{seed}.out")
    path.write_bytes("\n".join(out).encode() + (b"\xff\xfe stray\n" if seed % 2 else b""))
    return path


@pytest.mark.parametrize("seed", range(6))
def test_parts_give_what_the_whole_text_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    log = _log(tmp_path, seed, damage=0.02 * (seed % 3))
    whole = _whole(log)
    assert _in_parts(log, monkeypatch, part_bytes=log.stat().st_size // 7) == whole
    assert len(stream_chunks.cuts(log, log.stat().st_size, 2)) > 2 and whole[0]
    # a table no name tells is read by its own columns, and each record says so
    assert seed % 2 or b'"inferred":{"op"' in whole[0]


def test_a_cut_after_a_test_without_rows_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # runs that died before their table: the next run's parameter line starts no new
    # table (its ranks and settings go to the rowless one), so a cut there is re-read
    run = (DATA / "nccl_tests" / "v2.13_mpirun_all_reduce.log").read_text()
    rowless = "\n".join(ln for ln in run.split("\n") if "algbw" not in ln and not re.match(r"^\S*\s+\d", ln))
    log = tmp_path / "all_reduce_perf.log"
    rng = random.Random(5)
    log.write_text("".join(rng.choice([run, rowless.replace("gpu-a0", "gpu-z0")]) for _ in range(80)))
    redone: list[bool] = []
    real = stream_chunks._starts_table

    def spy(kind: str, before: stream_chunks.PartResult) -> bool:
        redone.append(not real(kind, before))
        return not redone[-1]

    monkeypatch.setattr(stream_chunks, "_starts_table", spy)
    assert _in_parts(log, monkeypatch, part_bytes=log.stat().st_size // 16) == _whole(log)
    assert any(redone) and not all(redone)


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.name)
def test_one_part_is_the_whole_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, log: Path) -> None:
    big = tmp_path / log.name
    big.write_bytes(log.read_bytes() * 3)
    assert _in_parts(big, monkeypatch, part_bytes=1 << 30) == _whole(big)


def test_cuts_start_a_test_and_lines_are_counted_from_the_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = _log(tmp_path, 1, damage=0.0)
    data = log.read_bytes()
    monkeypatch.setattr(stream_chunks, "PART_BYTES", len(data) // 20)
    cuts = stream_chunks.cuts(log, len(data), 4)
    assert cuts[0] == (0, "") and [c for c, _ in cuts] == sorted({c for c, _ in cuts})
    for at, kind in cuts[1:]:
        assert data[at - 1 : at] == b"\n"
        line = data[at:].split(b"\n", 1)[0].decode()
        assert ("Collective test starting" if kind == "start" else "warmup iters:") in line
    run_id, first = stream_chunks.scan(log, [c for c, _ in cuts])
    assert run_id == run_id_for(data.decode("utf-8", errors="replace")) == stream.run_id_of(log)
    assert first == [data.count(b"\n", 0, c) + 1 for c, _ in cuts]
    assert stream_chunks.cuts(log, len(data), 1) == [(0, "")]  # one core: one part
