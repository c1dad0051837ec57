"""The report's figures drawn on two cores (figure_jobs.Deferred, a forked child draws half): the
same bytes as drawn inline, and drawn here when the child fails."""

from __future__ import annotations

import os

from reports.render import figure_jobs, plots

SERIES = [
    plots.Series(
        label="all_reduce", sizes=[1 << k for k in range(10, 20)], values=[float(k) for k in range(10)]
    )
]
PARENT = os.getpid()


def plot_jobs() -> list[tuple[object, tuple[object, ...]]]:
    return [
        (plots.sweep_plot, ("a", SERIES, 12.0, 0.8)),
        (plots.bar_plot, ("b", ["x", "y"], [1.0, 2.0], [("spec", [1.5, None])])),
        (plots.matrix_plot, ("c", ["n1", "n2", "n3"], [[float("nan"), 1, 2], [1, float("nan"), 3], [2, 3, float("nan")]])),
        (plots.sweep_plot, ("d", SERIES, None, None)),
    ]  # fmt: skip


def test_two_processes_draw_the_bytes_one_would() -> None:
    inline = [fn(*args) for fn, args in plot_jobs()]  # type: ignore[operator]
    fig = figure_jobs.Deferred()
    page = "|".join(fig(fn, *args) for fn, args in plot_jobs())  # type: ignore[arg-type]
    assert "\x00figure3\x00" in page
    assert fig.fill(page).split("|") == inline


def _only_here(title: str) -> str:
    if os.getpid() != PARENT:
        raise RuntimeError("the child fails")
    return plots.sweep_plot(title, SERIES)


def test_a_failed_child_leaves_its_figures_to_this_process() -> None:
    jobs = [(_only_here, (t,)) for t in "abcd"]
    assert figure_jobs.draw_all(jobs) == [plots.sweep_plot(t, SERIES) for t in "abcd"]
