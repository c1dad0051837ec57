"""`stoker compare` tells runs apart by what they hold, not by their directory: copies of one
run's directory are that run once, so its median is its own figure and its run-to-run noise
unknown, never 0.0 from two identical copies. Records are hand-made (tests/unit/recordgen)."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

from reports.fleet.clusters import summarise
from reports.fleet.ranking import compare
from reports.fleet.runs import distinct, merge
from reports.pipeline import collect
from reports.shared.records import RecordWriter
from tests.unit.recordgen import net

G = 1 << 30


def _run(directory: Path, busbw: float, run_id: str = "r1") -> Path:
    directory.mkdir(parents=True)
    with RecordWriter(directory / "net.jsonl") as w:
        for size, bw in ((G // 4, busbw * 0.9), (G, busbw)):
            w.write(replace(net("world", "all_reduce", size, bw, ("n1", "n2"), ranks=16), run_id=run_id))
    return directory


def _summary(directory: Path, name: str = "h100-cluster"):  # type: ignore[no-untyped-def]
    c = collect(directory)
    return summarise(name, str(directory), c.report.evidence, c.report.judgement)


def test_copies_of_one_run_are_one_run(tmp_path: Path) -> None:
    a = _run(tmp_path / "a", 40.0)
    shutil.copytree(a, tmp_path / "b")  # a copy: the same run id and records
    shutil.copytree(a, tmp_path / "c")
    runs = [_summary(tmp_path / d) for d in ("c", "a", "b")]
    kept, notes = distinct(runs)
    assert [s.run for s in kept] == [str(tmp_path / "a")]
    assert notes == [
        f"{tmp_path / d} holds the same run as {tmp_path / 'a'} (the same run ids and records): counted once"
        for d in ("b", "c")
    ]
    (row,) = [r for r in compare(kept, None).rows if r.figure == "inter-node all_reduce busbw at 1G"]
    cell = row.cells["h100-cluster"]
    # (a world sweep over two nodes is judged as inter-node) one run: its figure, its noise unknown (the records carry no iteration spread), not "3 runs" at 0.0
    assert cell.value == 40.0 and cell.noise is None and "runs" not in cell.note
    assert merge(runs).run == str(tmp_path / "a")


def test_two_runs_are_two_runs_even_under_one_run_id(tmp_path: Path) -> None:
    # STOKER_RUN_ID=acceptance each time: the figures tell them apart
    runs = [
        _summary(_run(tmp_path / "mon", 40.0, "acceptance")),
        _summary(_run(tmp_path / "tue", 44.0, "acceptance")),
    ]
    kept, notes = distinct(runs)
    assert kept == runs and notes == []
    (row,) = [r for r in compare(kept, None).rows if r.figure == "inter-node all_reduce busbw at 1G"]
    cell = row.cells["h100-cluster"]
    # median of 40 and 44 = 42; noise half the range over it: 2 / 42
    assert cell.value == 42.0 and abs(cell.noise - 2 / 42) < 1e-12 and "2 runs" in cell.note


def test_compare_shows_each_figures_spread_over_its_runs(tmp_path: Path) -> None:
    """Two runs of one cluster measured alike: "± 5% over 2 runs" (half the range 2 over the
    median 42 = 4.8%); another cluster's one run: "± unknown", and the page says to take 3 runs."""
    from reports.fleet.render import SPREAD_ADVICE, fmt, render_md

    runs = [_summary(_run(tmp_path / "mon", 40.0, "r1")), _summary(_run(tmp_path / "tue", 44.0, "r2"))]
    other = _summary(_run(tmp_path / "b", 30.0, "r3"), name="other-cluster")
    cmp = compare([*runs, other], None)
    (row,) = [r for r in cmp.rows if r.figure == "inter-node all_reduce busbw at 1G"]
    assert fmt(row.cells["h100-cluster"], "GB/s") == "42.00 (± 5% over 2 runs)"
    assert fmt(row.cells["other-cluster"], "GB/s") == "30.00 (± unknown)"
    assert SPREAD_ADVICE in render_md(cmp) and "3 or more runs" in SPREAD_ADVICE
    # every cluster with runs measured alike: no advice
    assert SPREAD_ADVICE not in render_md(compare(runs, None))
