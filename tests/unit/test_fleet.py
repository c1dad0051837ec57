"""Cluster comparison on hand-made inputs: the cost of work, the idle share by component,
like-for-like rows, ties, and the ranking — every expected value worked out by hand."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest

from reports.evidence.sweeps import Sweep
from reports.fleet.clusters import (
    ClusterSummary,
    IoFigure,
    cost_per_useful,
    idle_parts,
    summarise,
)
from reports.fleet.ranking import compare, to_json
from reports.fleet.rows import Cell, combine, tie
from reports.shared.findings import ModelRow
from tests.unit.recordgen import curves, evidence, net

M = 1 << 20


def _c(
    name: str,
    *,
    price: float | None = 2.49,
    compute: float | None = 8.0,
    idle: float | None = 0.2,
    acc: str = "h100-sxm",
    problems: tuple[str, ...] = (),
    run: str = "",
    **kw: Any,
) -> ClusterSummary:
    return ClusterSummary(
        name=name,
        run=run or name,
        verdict="pass",
        failing=0,
        findings=3,
        accelerator=acc,
        price_per_gpu_hour=price,
        workload="llama-70b",
        gpus=512,
        tokens_per_step=4e6,
        compute_s=compute,
        idle_share=idle,
        problems=problems,
        idle_by_component={"tensor parallel": idle} if idle is not None else {"tensor parallel": None},
        **kw,
    )


def test_cost_per_useful_gpu_hour_by_hand() -> None:
    assert cost_per_useful(2.00, 0.20) == pytest.approx(2.50)  # 2.00 / 0.80
    assert cost_per_useful(2.49, 0.0) == pytest.approx(2.49)
    assert cost_per_useful(2.00, None) is None and cost_per_useful(None, 0.1) is None
    assert cost_per_useful(2.00, 1.0) is None  # GPUs that never work
    assert cost_per_useful(1e308, 0.5) is None  # 2e308 overflows: no "$inf"


def test_cost_of_work_by_hand() -> None:
    s = _c("a", price=2.00, compute=8.0, idle=0.2)
    assert s.step_wall_s == pytest.approx(10.0)  # 8 / (1 - 0.2)
    assert s.usd_per_step == pytest.approx(2.8444, abs=1e-4)  # 2 x 512 x 10 / 3600
    assert s.usd_per_billion_tokens == pytest.approx(711.11, abs=0.01)  # 2.8444 x 1e9 / 4e6
    assert s.billion_tokens_per_day == pytest.approx(34.56)  # 4e6 x 86400 / 10 / 1e9
    assert s.usd_per_day == pytest.approx(24576.0)  # 2 x 512 x 24


# the model part each check sentence of these tests belongs to (the model sets it directly)
_PARTS = {
    "tensor": "tensor parallel",
    "FSDP": "data parallel",
    "DDP": "data parallel",
    "dataloader": "dataloader",
    "checkpoint": "checkpoint",
}


def _row(check: str, exposed: float, base: float, share: float, status: str = "ok") -> ModelRow:
    part = next(p for k, p in _PARTS.items() if check.startswith(k))
    return ModelRow(
        part=part,  # type: ignore[arg-type]
        component="intra-node network",
        check=check,
        required=1.0,
        achieved=None if status == "no_reference" else 2.0,
        unit="GB/s",
        idle_share=share,
        usd_per_day=None,
        status=status,
        extra={"exposed_s": exposed, "base_s": base},
    )


def test_idle_parts_add_up_to_the_models_total() -> None:
    rows = [
        _row("tensor parallel all_reduce (8 GPUs)", 1.0, 8.0, 1 / 9),
        _row("FSDP all_gather + reduce_scatter (64 ranks)", 0.5, 8.0, 0.5 / 8.5),
        _row("dataloader read (llm-text)", 0.5, 9.5, 0.05),
        _row("checkpoint write (988 GB every 60 min, sync)", 360.0, 3600.0, 0.1),
    ]
    parts, lacks = idle_parts(rows, {"compute_s": 8.0})
    # busy = (1 + 0.5 + 0.5) / (8 + 2) = 0.2; checkpoint part 0.1 x (1 - 0.2) = 0.08; total 1 - 0.8 x 0.9 = 0.28
    assert parts == pytest.approx(
        {"tensor parallel": 0.1, "data parallel": 0.05, "dataloader": 0.05, "checkpoint": 0.08}
    )
    assert sum(parts.values()) == pytest.approx(0.28) and lacks == []


def test_unmeasured_is_never_zero_idle() -> None:
    # B's tensor parallel is unmeasured; its checkpoint part (0.229 of what?) is not shown
    # beside A's, whose checkpoint part shrank under a measured 97% tensor-parallel idle
    rows = [
        _row("tensor parallel all_reduce (8 GPUs)", 0.0, 8.0, 0.0, status="no_reference"),
        _row("FSDP all_gather + reduce_scatter (64 ranks)", 0.0, 8.0, 0.0),
        _row("checkpoint write (988 GB every 60 min, sync)", 824.0, 3600.0, 0.229),
    ]
    parts, lacks = idle_parts(rows, {"compute_s": 8.0})
    assert parts == {"tensor parallel": None}  # the split only where whole
    assert lacks == [
        "an intra-node all_reduce sweep (tensor parallel): run `stoker net --scopes intra-node --ops all_reduce`"
    ]
    nan = [_row("tensor parallel all_reduce (8 GPUs)", math.nan, 8.0, math.nan)]  # a NaN busbw got through
    assert idle_parts(nan, {"compute_s": 8.0})[0]["tensor parallel"] is None


def _judgement(rows: list[ModelRow], idle: float) -> Any:
    return SimpleNamespace(
        model=rows,
        model_summary={"compute_s": 8.0, "idle_share": idle, "gpus": 512},
        verdict="pass",
        findings=[],
        expected={},
        workload_name="llama-70b",
    )


@pytest.mark.parametrize(
    ("price", "why"),
    [
        (None, "no price_per_gpu_hour in its spec"),
        (0.0, "price_per_gpu_hour 0.0 is not a positive price"),
        (-1.0, "price_per_gpu_hour -1.0 is not a positive price"),
        (math.inf, "price_per_gpu_hour inf is not a positive price"),
        (math.nan, "price_per_gpu_hour nan is not a positive price"),
        (1e308, "price_per_gpu_hour 1e+308 gives no finite cost"),
    ],
)
def test_bad_prices_are_not_ranked_and_say_why(price: float | None, why: str) -> None:
    spec = SimpleNamespace(price_per_gpu_hour=price, accelerator=None)
    wl = SimpleNamespace(global_batch_tokens=4e6)
    s = summarise(
        "x",
        "d",
        evidence(),
        _judgement([_row("tensor parallel all_reduce (8 GPUs)", 0.0, 8.0, 0.0)], 0.99),
        spec,
        wl,
    )
    assert s.problems == (why,)
    cmp = compare([s, _c("ok")], "llama-70b")
    assert [r.name for r in cmp.ranking] == ["ok"] and cmp.not_ranked == {"x": (why,)}
    json.dumps(to_json(cmp), allow_nan=False)  # no inf or nan can reach compare.json


def test_no_spec_is_not_ranked() -> None:
    s = summarise("x", "d", evidence(), _judgement([], 0.0), None, SimpleNamespace(global_batch_tokens=4e6))
    assert s.problems[0].startswith("no spec.yaml in its directory")


def test_cost_of_work_ranks_across_gpu_generations() -> None:
    a = _c("h100-cloud", price=2.49, compute=8.0, idle=0.2)
    b = _c("h200-cloud", price=3.50, compute=5.0, idle=0.1, acc="h200")
    c = _c(
        "cheap-but-blind",
        price=1.00,
        idle=None,
        problems=("lacks an intra-node all_reduce sweep (tensor parallel): run x",),
    )
    # per useful GPU-hour a is cheaper (2.49/0.8 = 3.11 < 3.50/0.9 = 3.89), but per billion tokens:
    # a: 2.49 x 512 x 10 / 3600 x 1e9 / 4e6 = 885.33; b: 3.50 x 512 x (5 / 0.9) / 3600 x 250 = 691.36
    cmp = compare([a, b, c], "llama-70b")
    assert [(r.rank, r.name, round(r.value, 2)) for r in cmp.ranking] == [
        (1, "h200-cloud", 691.36),
        (2, "h100-cloud", 885.33),
    ]
    assert cmp.headline[0] == (
        "Cheapest per billion tokens of llama-70b: h200-cloud at $691.36 = $3.50 per GPU-hour × 512 GPUs × 5 s "
        "compute / (1 − GPU idle 10.00%) / 3600 × 10^9 / 4e+06 tokens per step; most of it tensor parallel."
    )
    # 885.33 / 691.36 = 1.2806; one run each: the noise is unknown, never taken as zero
    assert cmp.headline[1] == (
        "h100-cloud: $885.33 per billion tokens = $2.49 per GPU-hour × 512 GPUs × 8 s compute / (1 − GPU idle "
        "20.00%) / 3600 × 10^9 / 4e+06 tokens per step, 28% more, noise unknown (one run: no run-to-run spread), "
        "so not known to be outside it."
    )
    assert cmp.headline[2].startswith("cheap-but-blind is not ranked: lacks an intra-node all_reduce sweep")
    useful = next(r for r in cmp.rows if r.figure == "$ per useful GPU-hour")
    assert (
        useful.cells["h100-cloud"].value == pytest.approx(3.1125)
        and useful.cells["cheap-but-blind"].value is None
    )


def test_noise_and_ties() -> None:
    c = combine([(100.0, None), (110.0, None)])
    assert c.value == pytest.approx(105.0) and c.noise == pytest.approx(5 / 105)
    assert tie(c, Cell(value=108.0)) and not tie(c, Cell(value=112.0))  # 3 <= 5.0 ; 7 > 5.0
    assert combine([(10.0, 0.03)]).noise == pytest.approx(0.03)  # the records' iteration CV


def test_two_runs_of_one_cluster_make_a_tie() -> None:
    # same price, idle 0.20 and 0.25 -> $/Btok 885.33 and 944.36 (2.49 x 512 x 10.667 / 3600 x 250): median 914.84, +-3.2%
    runs = [_c("steady", idle=0.2, run="r1"), _c("steady", idle=0.25, run="r2")]
    other = _c("other", idle=0.2, price=2.55)  # 906.67: inside 914.84 +- 29.5
    cmp = compare([*runs, other], "llama-70b")
    assert [(r.rank, r.name) for r in cmp.ranking] == [(1, "other"), (1, "steady")]
    assert cmp.ranking[0].tied_with == ("steady",) and cmp.headline[0].startswith("Tie for the cheapest")


def _curve(sizes: list[int], bw: list[float], ranks: int = 8, nodes: int = 1) -> Sweep:
    return Sweep(
        scope="intra-node",
        op="all_reduce",
        backend="nccl",
        ranks=ranks,
        nodes=nodes,
        groups=1,
        sizes=tuple(sizes),
        busbw=tuple(bw),
        cv=tuple(None for _ in sizes),
    )


def test_sweeps_over_different_ranges_compare_at_the_common_size() -> None:
    a = _c("a", curves={("intra-node", "all_reduce"): _curve([M, 2 * M, 4 * M], [0.40, 0.55, 0.62])})
    b = _c("b", curves={("intra-node", "all_reduce"): _curve([M, 4 * M, 16 * M], [0.50, 0.98, 1.23])})
    row = next(r for r in compare([a, b], None).rows if r.kind == "network")
    assert row.figure == "intra-node all_reduce busbw at 4M" and row.comparable
    assert (row.cells["a"].value, row.cells["b"].value) == (0.62, 0.98) and row.best == ("b",)
    assert row.reasons == (
        "b swept to 16M (1.23 GB/s there), not used: compared at 4M, the largest size all measured",
    )


def test_not_like_for_like_rows_say_why_and_rank_nothing() -> None:
    a = _c(
        "a",
        curves={("intra-node", "all_reduce"): _curve([M], [1.0], ranks=8)},
        storage=(
            IoFigure(
                scope="shared",
                workload="dataloader_read",
                direction="read",
                block=M,
                procs=16,
                procs_per_node=16,
                bw=5.0,
                path="/d",
            ),
        ),
    )
    b = _c(
        "b",
        curves={("intra-node", "all_reduce"): _curve([M], [1.0], ranks=4)},
        storage=(
            IoFigure(
                scope="shared",
                workload="dataloader_read",
                direction="read",
                block=4 * M,
                procs=16,
                procs_per_node=16,
                bw=9.0,
                path="/d",
            ),
        ),
    )
    c = _c("c", curves={("intra-node", "all_reduce"): _curve([64 * M], [2.0])})
    net_row, io_row = [r for r in compare([a, b], None).rows if r.kind in ("network", "storage")]
    assert (
        not net_row.comparable
        and net_row.best == ()
        and net_row.reasons == ("not comparable: ranks (a 8, b 4)",)
    )
    assert not io_row.comparable and io_row.reasons == ("not comparable: block size (a 1M, b 4M)",)
    far = next(r for r in compare([a, c], None).rows if r.kind == "network")
    assert not far.comparable and far.reasons == (
        "no message size measured by all (a 1M–1M, c 64M–64M): not compared",
    )


def test_nan_busbw_never_becomes_a_figure() -> None:
    recs = [
        net("intra-node", "all_reduce", M, 5.0),
        net("intra-node", "all_reduce", 2 * M, 6.0),
        replace(net("intra-node", "all_reduce", 4 * M, 1.0), busbw_GBps=math.nan),
    ]
    c = curves(recs)[0][("intra-node", "all_reduce")]
    assert c.sizes == (M, 2 * M) and c.busbw == (5.0, 6.0) and c.ranks_per_node == 8


def test_without_a_workload_nothing_is_ranked_on_cost() -> None:
    cmp = compare([_c("a"), _c("b")], None)
    assert cmp.ranking == [] and cmp.headline[0].startswith("No workload given")


def test_a_lack_names_only_the_missing_op() -> None:
    # never "lacks an all_gather + reduce_scatter sweep" where all_gather was measured
    from reports.fleet.clusters import lack_line
    from reports.judging.workload.model import Measured, starvation
    from reports.judging.workload.workload import parse_workload

    judged, _ = curves([net("inter-node", "all_gather", 2**k, 40.0, ("n1", "n2")) for k in range(20, 31)])
    fsdp = {"preset": "llama-70b", "parallelism": {"data": "fsdp", "tensor": 8}, "compute_s": 2.5}
    w = parse_workload(fsdp, "w.yaml")
    rows, _ = starvation(w, None, Measured(curves=judged))
    (row,) = [r for r in rows if r.check.startswith("FSDP")]
    assert row.status == "no_reference" and row.extra["why"] == (
        "no inter-node reduce_scatter (nor all_reduce) sweep measured"
    )
    assert lack_line("data parallel", row) == (
        "an inter-node reduce_scatter sweep (data parallel): run `stoker net --scopes inter-node --ops reduce_scatter`"
    )


@pytest.mark.parametrize("price", [1e-300, 0.001, 0.0099])
def test_a_price_under_a_cent_is_not_ranked(price: float) -> None:
    spec = SimpleNamespace(price_per_gpu_hour=price, accelerator=None)
    wl = SimpleNamespace(global_batch_tokens=4e6)
    s = summarise(
        "x", "d", evidence(), _judgement([_row("tensor parallel all_reduce (8 GPUs)", 0.0, 8.0, 0.0)], 0.99), spec, wl
    )  # fmt: skip
    assert len(s.problems) == 1 and "under a cent per GPU-hour" in s.problems[0]
    cmp = compare([s, _c("ok")], "llama-70b")
    assert [r.name for r in cmp.ranking] == ["ok"] and "x" in cmp.not_ranked


def test_a_passing_cluster_ranks_before_a_cheaper_failing_one_and_the_table_says_each_verdict() -> None:
    from dataclasses import replace

    from reports.fleet.render import ranking_table

    cheap_fail = replace(_c("cheap-fail", price=1.00), verdict="fail", failing=2)
    dear_pass = _c("dear-pass", price=3.00)
    cmp = compare([cheap_fail, dear_pass], "llama-70b")
    assert [(r.rank, r.name) for r in cmp.ranking] == [(1, "dear-pass"), (2, "cheap-fail")]
    table = ranking_table(cmp)
    assert list(table["verdict"]) == ["pass", "fail"]
