"""Node x rail at fleet scale (reports/evidence/rail_grid.py): which node and which rail stand
out, as a heat map in report.html and the outliers listed in report.md (synthetic pair
records; expected values by hand)."""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pandas as pd
import pytest

from reports.evidence.rail_grid import rail_grid
from reports.evidence.rails import pair_evidence
from reports.render.html import localisation_figures
from reports.render.markdown import rail_outlier_lines
from reports.shared.records import NetRecord
from reports.table.read import NetTable

F = 40.0  # a healthy pair's busbw on one rail, GB/s
HOSTS = tuple(f"n{i}" for i in range(6))


def rec(a: str, b: str, busbw: float, rail: int) -> NetRecord:
    return NetRecord(
        run_id="r", ts="t", hosts=(a, b), nodes=2, op="all_reduce", scope="pair", ranks=2,
        backend="nccl", dtype="bfloat16", time_s=1.0, algbw_GBps=busbw, busbw_GBps=busbw,
        bytes=1 << 30, wrong=0, extra={"pass": 1, "rail": rail},
    )  # fmt: skip


def fleet(slow: dict[tuple[str, int], float], rails: int = 4) -> list[NetRecord]:
    """Every pair of 6 nodes on every rail, each at the slower of its two NICs on that rail."""
    return [
        rec(a, b, min(slow.get((a, j), F), slow.get((b, j), F)), j)
        for i, a in enumerate(HOSTS)
        for b in HOSTS[i + 1 :]
        for j in range(rails)
    ]


def test_a_slow_nic_is_one_cell_and_a_slow_node_a_row() -> None:
    # n2's NIC of rail 3 at 10 GB/s; n4 at 20 GB/s on every rail
    slow = {("n2", 3): 10.0, **{("n4", j): 20.0 for j in range(4)}}
    pe = pair_evidence(NetTable.of(fleet(slow)).frame)
    grid = pe.grid
    assert grid is not None and grid.hosts == list(HOSTS) and grid.rails == [0, 1, 2, 3]
    # a host's score on a rail is its best pair there: n2 on rail 3 pairs at most at 10,
    # n4 at 20 everywhere, the others at 40 (each has a healthy partner)
    assert grid.values[2].tolist() == [F, F, F, 10.0] and grid.values[4].tolist() == [20.0] * 4
    assert grid.medians.tolist() == [F] * 4  # the median of (40, 40, 40, 40, 20, 40) and (.., 10, ..)
    got = [(c.host, c.rail, c.busbw, c.median, c.share) for c in grid.outliers]
    # under 75% of the rail median, furthest under first, then by host and rail
    assert got == [("n2", 3, 10.0, F, 0.25)] + [("n4", j, 20.0, F, 0.5) for j in range(4)]
    lines = rail_outlier_lines(grid)
    assert lines[0] == (
        "Node x rail: 6 hosts on 4 rails, each cell the host's best pair busbw on that rail against the "
        "rail's fleet median; cells under 75% of it, furthest under first:"
    )
    assert "| n2 | 3 | 10.00 | 40.00 | 25% |" in lines[2] and lines[2].count("| n4 |") == 4
    figures = localisation_figures(pd.DataFrame(), pe)  # the heat map, drawn in the figure process
    fn, (title, hosts, rails, shares, marked) = figures["rails"]
    assert fn.__name__ == "rail_heatmap" and title.endswith("(6 hosts x 4 rails)")
    assert shares[2, 3] == 0.25 and shares[4, 0] == 0.5 and shares[0, 0] == 1.0
    # the outliers marked on the map: (row, column) of n2's rail 3, then n4's every rail
    assert marked == [(2, 3)] + [(4, j) for j in range(4)]


def test_at_a_thousand_hosts_the_marked_rows_are_named_and_outlined(monkeypatch: pytest.MonkeyPatch) -> None:
    """Drawn for real: a 1,000-host grid names only the outliers' rows, and outlines each cell."""
    from reports.render import plots

    hosts = [f"node{i:04d}" for i in range(1000)]
    shares = np.ones((1000, 8))
    shares[417, :] = 0.45
    shares[731, 5] = 0.22
    marked = [(731, 5)] + [(417, j) for j in range(8)]
    seen: dict[str, list[Any]] = {}
    real_encode = plots.encode_png

    def keep(fig: Any) -> str:  # what the figure holds, then the real PNG
        ax = fig.axes[0]
        seen["ticks"] = [t.get_text() for t in ax.get_yticklabels()]
        seen["boxes"] = sorted((int(p.get_x() + 0.5), int(p.get_y() + 0.5)) for p in ax.patches)
        return real_encode(fig)

    monkeypatch.setattr(plots, "encode_png", keep)
    assert plots.rail_heatmap("t", hosts, list(range(8)), shares, marked)
    assert seen["ticks"] == ["node0417", "node0731"]
    assert seen["boxes"] == sorted((c, r) for r, c in marked)


def test_a_healthy_fleet_says_so_and_one_rail_has_no_grid() -> None:
    grid = rail_grid(pair_evidence(NetTable.of(fleet({})).frame).rails)
    assert grid is not None and grid.outliers == []
    assert rail_outlier_lines(grid)[0].endswith(": no cell under 75% of its rail's median.")
    assert pair_evidence(NetTable.of(fleet({}, rails=1)).frame).grid is None
    assert rail_outlier_lines(None) == []


def test_a_host_missing_on_a_rail_is_blank_not_an_outlier() -> None:
    recs = [r for r in fleet({}) if not (r.extra["rail"] == 1 and "n5" in r.hosts)]
    grid = pair_evidence(NetTable.of(recs).frame).grid
    assert grid is not None and math.isnan(grid.values[5, 1]) and grid.outliers == []
    assert math.isnan(grid.shares()[5, 1]) and grid.shares()[5, 0] == 1.0


def test_the_report_shows_the_heat_map_and_lists_the_outliers(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from reports.pipeline import build
    from reports.shared.records import RecordWriter

    with RecordWriter(tmp_path / "net.jsonl") as w:
        for r in fleet({("n2", 3): 10.0}):
            w.write(r)
    out = build(tmp_path)
    assert "| n2 | 3 | 10.00 | 40.00 | 25% |" in out.markdown
    assert (
        '<img alt="best pair busbw per node and rail (6 hosts x 4 rails)" src="data:image/png;base64,'
        in out.html
    )
    assert "<td>n2</td><td>3</td>" in out.html.replace(" ", "").replace("\n", "")


def test_the_specs_racks_name_where_the_outliers_sit() -> None:
    from reports.shared.spec import parse_spec

    spec = parse_spec({"name": "t", "racks": {"r1": ["n0", "n1", "n2"], "r2": ["n3", "n4"]}}, "spec.yaml")
    assert spec.racks == {"n0": "r1", "n1": "r1", "n2": "r1", "n3": "r2", "n4": "r2"}  # n5: in none
    slow = {("n2", 3): 10.0, ("n4", 0): 12.0, ("n4", 1): 12.0, ("n5", 2): 8.0}
    grid = pair_evidence(NetTable.of(fleet(slow)).frame).grid
    assert grid is not None
    lines = rail_outlier_lines(grid, spec.racks)
    # shares: n5 rail 2 8/40 = 20%, n2 rail 3 25%, n4 rails 0 and 1 30%
    assert lines[0].endswith("furthest under first (by rack: r2 2 cells on 1 host; r1 1 cell on 1 host):")
    assert lines[2].splitlines()[2:] == [
        "| n5 | - | 2 | 8.00 | 40.00 | 20% |",
        "| n2 | r1 | 3 | 10.00 | 40.00 | 25% |",
        "| n4 | r2 | 0 | 12.00 | 40.00 | 30% |",
        "| n4 | r2 | 1 | 12.00 | 40.00 | 30% |",
    ]


def test_a_bad_racks_entry_is_one_line() -> None:
    import pytest

    from reports.shared.errors import UsageError
    from reports.shared.spec import parse_spec

    for racks, said in (
        (
            {"r1": ["n0"], "r2": ["n0"]},
            "racks.r2: expected hosts in one rack only (n0 is in r1 too), got 'n0'",
        ),
        ({"r1": "n0"}, "racks.r1: expected a list of host names, got 'n0'"),
        ({"r1": ["n0 n1"]}, "racks.r1: expected plain host names"),
        (["r1"], "racks: expected"),
    ):
        with pytest.raises(UsageError, match=r"^spec\.yaml: " + re.escape(said)):
            parse_spec({"name": "t", "racks": racks}, "spec.yaml")
