"""Renderers on small hand-made inputs: escaping, empty sections, embedded PNGs."""

from __future__ import annotations

import base64
import re
import struct

import pandas as pd

from reports.evidence.sweeps import per_host, recorded, shown
from reports.render import plots
from reports.render.html import render as render_html
from reports.render.markdown import ReportInput, md_table
from reports.render.markdown import render as render_md
from reports.shared.findings import Finding, Judgement
from reports.shared.records import NetRecord
from reports.table.read import NetTable, SkippedLine
from tests.unit.recordgen import evidence


def _net(
    host: str,
    size: int,
    busbw: float,
    *,
    scope: str = "intra-node",
    group: int = 0,
    wrong: int = 0,
    in_place: bool = False,
) -> NetRecord:
    algbw = busbw / 1.5  # all_reduce on 4 ranks: 2*3/4
    return NetRecord(
        run_id="r1",
        ts="t",
        hosts=(host,),
        nodes=1,
        op="all_reduce",
        scope=scope,
        ranks=4,
        backend="gloo",
        dtype="float32",
        bytes=size,
        time_s=size / algbw / 1e9,
        algbw_GBps=algbw,
        busbw_GBps=busbw,
        wrong=wrong,
        group=group,
        in_place=in_place,
    )


def _input(net: list[NetRecord], findings: list[Finding] | None = None, **kw: object) -> ReportInput:
    j = Judgement(run_id="r1", verdict="fail" if findings else "pass", findings=findings or [])
    return ReportInput(
        title=str(kw.get("title", "t")), evidence=evidence(net, **kw.get("rs", {})), judgement=j
    )  # type: ignore[arg-type]


def sweeps(net: list[NetRecord]) -> list:
    return recorded(shown(NetTable.of(net).frame))


def _png_size(b64: str) -> tuple[int, int]:
    raw = base64.b64decode(b64)
    assert raw[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", raw[16:24])


def test_sweep_median_over_groups_slowest_group_and_plateau() -> None:
    net = [
        _net(h, s, bw * s / (s + 1024), group=g)
        for g, (h, bw) in enumerate([("a", 30.0), ("b", 31.0), ("c", 10.0)])
        for s in (1024, 1 << 20, 1 << 24)
    ]
    (sw,) = sweeps(net)
    # median of 30, 31, 10 (each x 16M/(16M+1K)) is host a's; the slowest group is c's
    assert round(sw.busbw[-1], 3) == round(30.0 * (1 << 24) / ((1 << 24) + 1024), 3)
    assert round(sw.busbw_min[-1], 3) == round(10.0 * (1 << 24) / ((1 << 24) + 1024), 3)
    assert sw.plateau()[0] == 1 << 24 and sw.groups == 3
    hosts = per_host(shown(NetTable.of(net).frame))
    assert list(hosts["host"]) == ["c", "a", "b"]  # slowest first


def test_wrong_results_carry_no_bandwidth_and_in_place_duplicates_are_dropped() -> None:
    net = [
        _net("a", 1 << 20, 40.0),
        _net("a", 1 << 20, 39.0, in_place=True),
        _net("a", 1 << 22, 99.0, wrong=3),
    ]
    (sw,) = sweeps(net)
    assert [-1 if b != b else b for b in sw.busbw] == [40.0, -1]  # NaN != NaN: no bandwidth
    assert sum(sw.wrong) == 3
    assert sw.plateau() == (1 << 20, 40.0)


def test_md_table_escapes_pipes_and_newlines() -> None:
    out = md_table(pd.DataFrame([{"a": "x|y", "b": "1\n2"}]))
    assert out.splitlines() == ["| a | b |", "| --- | --- |", "| x\\|y | 1 2 |"]


def test_hostile_strings_are_escaped_in_html() -> None:
    evil = "<script>alert(1)</script>"
    f = Finding(
        component="node",
        check=evil,
        status="below_spec",
        measured=1.0,
        expected=2.0,
        unit="GB/s",
        hosts=(evil,),
        message=evil,
    )
    ri = _input(
        [_net(evil, 1 << 20, 10.0)],
        [f],
        title=evil,
        rs={"skipped": [SkippedLine(file="net.jsonl", line=3, reason=evil)]},
    )
    page = render_html(ri)
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "http://" not in page and "https://" not in page  # self-contained
    md = render_md(ri)
    assert "**Verdict: FAIL** — 1 finding to act on (1 below_spec)." in md


def test_empty_sections_say_so_and_every_image_is_a_png() -> None:
    ri = _input([_net("a", 1 << 20, 10.0), _net("b", 1 << 20, 12.0, group=1)])
    md, page = render_md(ri), render_html(ri)
    assert "No storage records." in md and "No findings" in md and "**Verdict: PASS**" in md
    imgs = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    assert len(imgs) == 2  # the intra-node sweep and the per-host grid
    for b64 in imgs:
        w, h = _png_size(b64)
        assert w > 200 and h > 100


def test_plots_are_deterministic_and_scale_to_a_thousand_hosts() -> None:
    hosts = [f"n{i:04d}" for i in range(1000)]
    vals = [100.0 - (i == 517) * 60 for i in range(1000)]
    a, b = plots.host_grid("t", hosts, vals), plots.host_grid("t", hosts, vals)
    assert a == b
    w, h = _png_size(a)
    assert w < 1200 and h < 900
    series = [plots.Series(label="x", sizes=[1 << 10, 1 << 20], values=[1.0, 40.0])]
    assert _png_size(plots.sweep_plot("s", series, advertised=50.0, threshold=0.8))[0] > 300


def test_localisation_shows_the_groups_search_round_by_round() -> None:
    from reports.evidence.groups import replay
    from reports.render.markdown import groups_search_lines
    from reports.shared.group_search import group_search
    from tests.unit.test_localise_groups import Cluster, localise_records

    c = Cluster(8, {5: 2.5}, noise=0.0)
    lines = groups_search_lines(
        replay(NetTable.of(localise_records(group_search(c.hosts, c.measure).history)))
    )
    assert (
        lines[0]
        == "Groups search (`--scopes groups`): 2 rounds over 8 nodes, reference 10.00 GB/s; slow: h5."
    )
    # round 0: h5's group of 2 is the slowest; round 1: h5 with a cleared node
    assert "| 0 | 4 | h4, h5 | 2.50 | 10.00 |" in lines[2] and "| 1 | 2 | h5, h1 | 2.50 | 10.00 |" in lines[2]
    assert groups_search_lines(None) == []


def test_no_spec_tick_against_a_torch_save_bar(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # report.html draws no spec tick against torch.save/dcp bars the text calls "not compared"
    import dataclasses

    from reports.shared.spec import parse_spec
    from reports.table.read import RecordSet
    from tests.unit.recordgen import evidence, io, judge_records

    spec = parse_spec({"storage": [{"path": "/data", "kind": "shared", "write_GBps": 20}]}, "s.yaml")
    fio = io("checkpoint_write", "write", "/data", 18.0, runtime_s=30)
    save = dataclasses.replace(
        io("checkpoint_write", "write", "/data", 5.0, runtime_s=30), backend="torch.save"
    )
    rs = RecordSet(io=[fio, save])
    ev = evidence(io=[fio, save])
    seen: dict[str, list[object]] = {}

    def bar_plot(title, labels, values, refs):  # type: ignore[no-untyped-def]
        seen.update({lab: [r[1][i] for r in refs] for i, lab in enumerate(labels)})
        return ""

    monkeypatch.setattr(plots, "bar_plot", bar_plot)
    render_html(ReportInput(title="t", evidence=ev, judgement=judge_records(rs, spec)))
    assert seen["checkpoint write · /data (fio)"][0] == 20.0
    assert seen["checkpoint write · /data (torch.save)"][0] is None


def test_compare_charts_read_alike(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # compare charts are all log-log, the advertised legend has its unit, and error bars show
    # where the spread is known
    figs: list[object] = []
    monkeypatch.setattr(plots, "encode_png", lambda fig: figs.append(fig) or "")
    s = plots.Series(label="a (8 ranks on 1 nodes)", sizes=[1 << 20, 1 << 24], values=[300.0, 350.0])
    plots.sweeps_with_lines("t", [s], [450.0])  # a narrow range: it was linear
    ax = figs[-1].axes[0]  # type: ignore[attr-defined]
    assert ax.get_yscale() == "log" and ax.get_xscale() == "log"
    assert "a advertised 450 GB/s" in [t.get_text() for t in ax.get_legend().get_texts()]
    plots.grouped_bars("t", ["row"], ["a", "b"], [[10.0, 12.0]], [[0.1, None]])
    ax = figs[-1].axes[0]  # type: ignore[attr-defined]
    bars = [c for c in ax.containers if type(c).__name__ == "BarContainer"]
    assert bars[0].errorbar is not None and bars[1].errorbar is None  # a's ±10%; b's noise unknown
