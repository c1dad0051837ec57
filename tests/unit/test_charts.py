"""The report's charts draw what they say (reports/render/plots.py): one advertised line per
scope a sweep chart shows, the demand its storage chart's title promises, and long paths that
do not take the width from the plot. Real matplotlib figures, read back before encoding."""

from __future__ import annotations

from typing import Any

import pytest

from reports.render import plots
from reports.render.html import render as render_html
from reports.render.markdown import ReportInput
from reports.shared.spec import parse_spec
from reports.table.read import NetTable, RecordSet
from tests.unit.recordgen import evidence, judge_records, net


@pytest.fixture
def figs(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    out: list[Any] = []

    def keep(fig: Any, tight: bool = True) -> str:
        out.append(fig)
        return ""

    monkeypatch.setattr(plots, "encode_png", keep)
    return out


def _hlines(ax: Any) -> dict[str, float]:
    """The dashed horizontal lines of an axes: legend label -> y."""
    return {
        ln.get_label(): ln.get_ydata()[0]
        for ln in ax.get_lines()
        if ln.get_linestyle() == "--" and len(set(ln.get_ydata())) == 1
    }


def test_a_world_chart_of_one_and_two_nodes_draws_each_scopes_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """An 8-GPU NVLink world sweep and a 2-node InfiniBand one share the 'world' chart: each is
    drawn against its own advertised line (450 GB/s; 400 per node over 8 GPUs = 50), not both against
    InfiniBand's."""
    one = [net("world", "all_reduce", 2**k, 380.0, ("n1",), ranks=8) for k in range(20, 31)]
    two = [net("world", "all_reduce", 2**k, 45.0, ("n1", "n2"), ranks=16) for k in range(20, 31)]
    spec = parse_spec(
        {"gpus_per_node": 8, "network": {"intra_node": {"GBps": 450}, "inter_node": {"GBps": 400}}}, "s.yaml"
    )
    calls: list[tuple[Any, ...]] = []

    def sweep_plot(*a: Any) -> str:
        calls.append(a)
        return ""

    monkeypatch.setattr(plots, "sweep_plot", sweep_plot)
    rs = RecordSet(net=NetTable.of([*one, *two]))
    render_html(
        ReportInput(title="t", evidence=evidence(net=[*one, *two]), judgement=judge_records(rs, spec))
    )
    (world,) = [c for c in calls if c[0].startswith("world")]
    assert world[2] == [("inter-node", 50.0), ("intra-node", 450.0)]


def test_sweep_plot_draws_one_line_per_scope(figs: list[Any]) -> None:
    s = plots.Series(label="x", sizes=[1 << 20, 1 << 30], values=[40.0, 380.0])
    plots.sweep_plot("t", [s], [("inter-node", 50.0), ("intra-node", 450.0)], 0.8)
    assert _hlines(figs[-1].axes[0]) == {
        "inter-node advertised 50 GB/s": 50.0,
        "intra-node advertised 450 GB/s": 450.0,
    }
    plots.sweep_plot("t", [s], 50.0, 0.8)  # one figure, as before
    assert _hlines(figs[-1].axes[0]) == {"advertised 50 GB/s": 50.0}


def test_the_storage_chart_draws_the_demand_its_title_names(figs: list[Any]) -> None:
    # llm-text's demand: 3.7 KB/s per node against 30 GB/s bars, a tick on the axis line
    plots.bar_plot(
        "storage: achieved",
        ["read /data", "write /data"],
        [30.0, 12.0],
        [
            ("spec", [40.0, 20.0]),
            ("workload demand", [3.74e-06, None]),
        ],
    )
    ax = figs[-1].axes[0]
    assert ax.get_title() == "storage: achieved vs spec and workload demand"
    texts = [t.get_text() for t in ax.texts]
    assert "workload demand 3.74e-06" in texts and "spec 40" in texts
    plots.bar_plot(
        "storage: achieved", ["read /data"], [30.0], [("spec", [40.0]), ("workload demand", [None])]
    )
    assert figs[-1].axes[0].get_title() == "storage: achieved vs spec"  # no demand drawn: none promised


def test_a_long_path_does_not_squeeze_the_chart(figs: list[Any]) -> None:
    deep = "/mnt/" + "/".join(f"tenant-{i:02d}-scratch-volume" for i in range(8)) + "/ckpt"
    long_label = f"checkpoint_write write {deep} (torch.save)"
    widths = []
    for label in ("checkpoint_write write /ckpt (fio)", long_label):
        plots.bar_plot("storage: achieved", [label], [5.0], [("spec", [6.0])])
        fig = figs[-1]
        fig.set_layout_engine("tight")
        fig.canvas.draw()
        widths.append(fig.axes[0].get_position().width)
        tick = fig.axes[0].get_yticklabels()[0]
        shown = tick.get_text()
        assert len(shown) <= plots.LABEL_CHARS
        assert tick.get_window_extent().x0 >= 0  # inside the image, not cut off at its left edge
    assert shown.startswith("checkpoint_wr") and shown.endswith("volume/ckpt (torch.save)")
    # the cut label leaves the plot nearly the width a short one does
    assert widths[1] > 0.85 * widths[0], widths
    assert plots.fit("short") == "short" and len(plots.fit("x" * 100)) == plots.LABEL_CHARS
