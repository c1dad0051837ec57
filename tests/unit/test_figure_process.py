"""The figure processes of `stoker report` (reports/render/figure_process.py): the bytes drawn
there are the bytes drawn here, warm or not, started early or asked for at the end; a figure
started early is not drawn again; whatever goes wrong (a process died, a job will not pickle),
the figures are drawn here; close() leaves no process behind."""

from __future__ import annotations

import functools
import os
import signal
from typing import Any

import pytest

from reports.render import plots
from reports.render.figure_process import FigureProcess
from tests.unit.test_plot_processes import plot_jobs


@pytest.fixture
def figures() -> Any:
    fp = FigureProcess()
    yield fp
    fp.close()


@functools.cache
def _inline() -> list[str]:
    return [fn(*args) for fn, args in plot_jobs()]  # type: ignore[operator]


def test_drawn_there_the_bytes_drawn_here(figures: FigureProcess) -> None:
    figures.warm()
    assert figures.draw(plot_jobs()) == _inline()  # type: ignore[arg-type]
    assert figures.draw(plot_jobs()[:1]) == _inline()[:1]  # type: ignore[arg-type]  # and again


def test_started_early_drawn_once(figures: FigureProcess) -> None:
    jobs = plot_jobs()
    figures.start(jobs[2:3])  # the pair matrix, as report_cmd starts it
    assert figures.draw(jobs) == _inline()  # type: ignore[arg-type]
    assert len(figures._jobs) == len(jobs)  # the early one was not sent again
    assert sum(w.load for w in figures._workers) == pytest.approx(2.5 + 3)  # matrix 2.5, others 1


def test_cold_the_same(figures: FigureProcess) -> None:
    assert figures.draw(plot_jobs()) == _inline()  # type: ignore[arg-type]


def test_a_dead_process_leaves_the_figures_here(figures: FigureProcess) -> None:
    os.kill(figures._pid, signal.SIGKILL)
    os.waitpid(figures._pid, 0)
    assert figures.draw(plot_jobs()) == _inline()  # type: ignore[arg-type]


def test_a_job_that_will_not_pickle_is_drawn_here(figures: FigureProcess) -> None:
    series = [plots.Series(label="x", sizes=[1, 2], values=[1.0, 2.0])]
    jobs = [(lambda title: plots.sweep_plot(title, series), ("t",))]
    assert figures.draw(jobs) == [plots.sweep_plot("t", series)]


def test_close_reaps_the_process() -> None:
    fp = FigureProcess()
    pid = fp._pid
    assert pid
    fp.close()
    fp.close()  # twice: nothing left to do
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    assert fp.draw(plot_jobs()[:1]) == _inline()[:1]  # type: ignore[arg-type]  # closed: drawn here
