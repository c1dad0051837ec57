"""Bounded cost of a report: the pair heatmap's dense matrix is built for at most
MAX_MATRIX_HOSTS hosts (a ring of 5,000 hosts made a 200 MB matrix and a 3 GB figure; 10,000,
a MemoryError), every pair still judged; and a figure whose process runs past its time limit
is left out with a note, never drawn a second time in the main process. Records are hand-made
(tests/unit/recordgen)."""

from __future__ import annotations

import os
import time
import tracemalloc
from pathlib import Path

import pytest

from reports.evidence.pairs import MAX_MATRIX_HOSTS
from reports.evidence.rails import pair_evidence
from reports.pipeline import build
from reports.render import figure_jobs, figure_process
from reports.render.figure_jobs import NOT_DRAWN, NOT_DRAWN_NOTE, Deferred, draw_all
from reports.render.figure_process import FigureProcess
from reports.render.html import img
from reports.shared.records import RecordWriter, to_dict
from reports.table.read import NetTable
from tests.unit.recordgen import net

G = 1 << 30


def _ring(n: int) -> list:  # type: ignore[type-arg]
    # host i with host i+1: n pairs, each host in two; n00002's pairs are slow
    return [
        net("pair", "all_reduce", G, 10.0 if 2 in (i, (i + 1) % n) else 40.0, (f"n{i:05d}", f"n{(i + 1) % n:05d}"), ranks=2)
        for i in range(n)
    ]  # fmt: skip


def test_a_ring_of_5000_hosts_judges_every_pair_without_a_dense_matrix() -> None:
    frame = NetTable.of(_ring(5000)).frame
    tracemalloc.start()
    pe = pair_evidence(frame)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert len(pe.hosts) == 5000 > MAX_MATRIX_HOSTS and pe.matrix.size == 0
    assert peak < 50e6  # main: a 5,000 x 5,000 matrix of float64, 200 MB
    assert len(pe.cells) == 5000 and pe.cells[0] == (10.0, "n00001", "n00002")
    assert pe.scores["n00002"] == 10.0 and pe.scores["n00003"] == 40.0  # every host scored
    assert pe.matrix_note == (
        "The pair matrix of 5,000 hosts is not drawn (at most 2,000 hosts); the slowest pairs are listed, "
        "and every pair is judged."
    )


def test_a_report_of_10000_hosts_says_the_matrix_is_not_drawn(tmp_path: Path) -> None:
    with RecordWriter(tmp_path / "net.jsonl", sync_each=False) as w:
        for r in _ring(10_000):
            w.write({**to_dict(r), "pass": 1})
    out = build(tmp_path)  # main: MemoryError or gigabytes
    assert "The pair matrix of 10,000 hosts is not drawn" in out.markdown
    assert "The pair matrix of 10,000 hosts is not drawn" in out.html
    assert "pair busbw at the largest size" not in out.html  # no heatmap
    assert "| n00001 | n00002 | 10.00 |" in out.markdown


# -- a figure past its time limit ------------------------------------------------------------
PARENT = os.getpid()


def _slow(seconds: float) -> str:
    if os.getpid() == PARENT:
        raise AssertionError("drawn a second time in the main process")
    time.sleep(seconds)
    return "slow"


def _fast(name: str) -> str:
    return name


def test_the_figure_process_past_its_limit_leaves_the_figure_out(monkeypatch: pytest.MonkeyPatch) -> None:
    fp = FigureProcess()
    try:
        assert fp.draw([(_fast, ("warm",))]) == ["warm"]  # both processes warm (pyplot imported)
        monkeypatch.setattr(figure_process, "LIMIT_S", 1.0)
        t0 = time.monotonic()
        got = fp.draw([(_slow, (30.0,)), (_fast, ("a",))])  # main: _slow again here, after 1 s
        assert got == [NOT_DRAWN, "a"]
        assert time.monotonic() - t0 < 10
    finally:
        t1 = time.monotonic()
        fp.close()
        assert time.monotonic() - t1 < 3  # the late process is ended, not waited for


def test_the_drawing_child_past_its_limit_leaves_the_figure_out(monkeypatch: pytest.MonkeyPatch) -> None:
    if (os.cpu_count() or 1) < 2:
        pytest.skip("one core: draw_all draws everything here, no child")
    monkeypatch.setattr(figure_jobs, "CHILD_LIMIT_S", 1.0)
    t0 = time.monotonic()
    # equal costs: the first to this process, the second to the child
    assert draw_all([(_fast, ("a",)), (_slow, (30.0,))]) == ["a", NOT_DRAWN]
    assert time.monotonic() - t0 < 10


def test_a_figure_not_drawn_is_a_note_in_the_page() -> None:
    fig = Deferred(draw=lambda jobs: [NOT_DRAWN, "QUJD"])
    page = img(fig(_fast, "x"), "pair <matrix>") + img(fig(_fast, "y"), "sweep")
    assert fig.fill(page) == NOT_DRAWN_NOTE + '<img alt="sweep" src="data:image/png;base64,QUJD">'


def test_a_groups_record_with_a_huge_round_number_is_no_round() -> None:
    from dataclasses import replace

    from reports.evidence.groups import recorded_rounds

    four = [
        replace(
            net("groups", "all_reduce", G, 40.0, (f"h{2 * i}", f"h{2 * i + 1}"), group=i), extra={"round": 0}
        )
        for i in range(4)
    ]
    hostile = replace(four[0], extra={"round": 10**12})  # main: a list of 10^12 rounds (MemoryError)
    t0 = time.monotonic()
    got = recorded_rounds([*four, hostile])
    assert time.monotonic() - t0 < 5
    assert got == [{frozenset((f"h{2 * i}", f"h{2 * i + 1}")): 40.0 for i in range(4)}]
