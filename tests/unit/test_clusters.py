"""Cluster comparison on hand-made summaries: the cost rule and the side-by-side table."""
from __future__ import annotations

import pytest

from reports.judging.clusters import ClusterSummary, cost_per_useful, ranking, side_by_side, unique_names


def _c(name: str, price: float | None, idle: float | None, inter: float) -> ClusterSummary:
    return ClusterSummary(name=name, verdict="pass", failing=0, findings=3,
                          plateaus={"inter-node": ("all_reduce", 1 << 30, inter)},
                          storage={"shared read (dataloader_read)": 30.0}, price_per_gpu_hour=price,
                          idle_share=idle, workload="llama-70b")


def test_cost_per_useful_gpu_hour_by_hand() -> None:
    assert cost_per_useful(2.00, 0.20) == pytest.approx(2.50)     # 2.00 / 0.80
    assert cost_per_useful(2.49, 0.0) == pytest.approx(2.49)
    assert cost_per_useful(2.00, None) is None and cost_per_useful(None, 0.1) is None
    assert cost_per_useful(2.00, 1.0) is None                      # GPUs that never work


def test_cheaper_list_price_can_cost_more_per_useful_hour() -> None:
    a, b = _c("alpha", 2.49, 0.02, 45.0), _c("beta", 1.99, 0.30, 12.0)
    # alpha: 2.49 / 0.98 = 2.54; beta: 1.99 / 0.70 = 2.84 -> 12% more
    lines = ranking([b, a])
    assert lines[0].startswith("Cheapest per useful GPU-hour: alpha at $2.54")
    assert lines[1] == "beta: $2.84 per useful GPU-hour, 12% more."


def test_side_by_side_rows_and_missing_figures() -> None:
    a, b = _c("alpha", 2.49, 0.02, 45.0), _c("beta", None, None, 12.0)
    df = side_by_side([a, b])
    rows = {r["figure"]: (r["alpha"], r["beta"]) for r in df.to_dict("records")}
    assert rows["inter-node busbw plateau (GB/s)"] == ("45.00 (all_reduce at 1G)", "12.00 (all_reduce at 1G)")
    assert rows["intra-node busbw plateau (GB/s)"] == ("—", "—")
    assert rows["cost per useful GPU-hour ($)"] == ("2.54", "—")
    assert rows["GPU idle share (workload)"] == ("2.0% (llama-70b)", "—")
    assert "No cost per useful GPU-hour" in ranking([b])[0]


def test_unique_names() -> None:
    assert unique_names(["x", "x", "y"], ["d1", "d2", "d3"]) == ["x (d1)", "x (d2)", "y"]
