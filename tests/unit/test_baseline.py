"""The accepted baseline: figures of a run, the YAML round trip, and regressions (pure logic,
synthetic records from tests/unit/recordgen.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reports import evidence
from reports.judging.fleet import baseline_figures as baseline_judging
from reports.judging.fleet.baseline import (
    DEFAULT_TOLERANCE,
    MAX_TOLERANCE,
    STORAGE_TOLERANCE,
    Figure,
    judge,
    make,
    tolerance_for,
)
from reports.judging.fleet.baseline_file import load, to_yaml
from reports.shared.errors import UsageError
from reports.shared.findings import verdict_of
from reports.table.read import RecordSet
from tests.unit.recordgen import flat, io, net


def figures(rs: RecordSet) -> list[Figure]:
    """The run's figures, from its evidence as the report builds it."""
    return baseline_judging.figures(evidence.build(rs))


HOSTS = ("n1", "n2", "n3")


def accepted_run(n2_intra: float = 100.0, n3_pair: float = 10.0, ckpt_n1: float = 2.0) -> RecordSet:
    rs = RecordSet()
    rs.net.extend(flat("inter-node", "all_reduce", 10.0, HOSTS))
    for i, h in enumerate(HOSTS):
        rs.net.extend(
            [net("intra-node", "all_reduce", 2**30, n2_intra if h == "n2" else 100.0, (h,), group=i)]
        )
    # a round of pairs: n3's best pair is its own link
    for a, b, v in (("n1", "n2", 10.0), ("n1", "n3", min(10.0, n3_pair)), ("n2", "n3", min(10.0, n3_pair))):
        rs.net.extend([net("pair", "all_reduce", 2**26, v, (a, b), ranks=2)])
    rs.io += [
        io("checkpoint_write", "write", "/lustre", 6.0, per_host={"n1": ckpt_n1, "n2": 2.0, "n3": 2.0}),
        io("checkpoint_write", "write", "/nvme", 3.0, scope="local", per_host={"n1": 3.0}),
    ]
    rs.host += [
        {
            "host": "n1",
            "component": "host link",
            "device": "GPU0",
            "h2d_pinned_GBps": 55.0,
            "d2h_pinned_GBps": 50.0,
        }
    ]
    return rs


def test_figures_cover_every_kind_with_hosts() -> None:
    figs = {(f.kind, f.host, f.op or f.workload): f for f in figures(accepted_run())}
    assert figs[("sweep", "", "all_reduce")].value == 10.0
    assert figs[("sweep", "", "all_reduce")].component == "inter-node network"
    assert {h for k, h, _ in figs if k == "node-intra"} == set(HOSTS)
    assert {h for k, h, _ in figs if k == "node-pair"} == set(HOSTS)
    assert figs[("node-storage", "n1", "checkpoint_write")].component == "node"
    assert figs[("host-link", "n1", "h2d")].device == "GPU0"
    # the local path was written by one node: its node figure says it, no duplicate
    assert [f.path for f in figures(accepted_run()) if f.kind == "storage"] == ["/lustre"]


def test_yaml_round_trip_keeps_figures_and_tolerances(tmp_path: Path) -> None:
    base = make("acc-1", "2026-11-24T00:00:00Z", figures(accepted_run()))
    path = tmp_path / "b.yaml"
    path.write_text(to_yaml(base))
    back = load(path)
    assert back.run_id == "acc-1"
    assert [(a.figure.key, a.figure.value, a.tolerance) for a in back.figures] == [
        (a.figure.key, a.figure.value, a.tolerance) for a in base.figures
    ]
    assert path.read_text().startswith("# stoker baseline")


def test_halved_node_is_a_regression_named_by_host_and_the_rest_ok() -> None:
    base = make("acc-1", "t", figures(accepted_run()))
    found = judge(base, figures(accepted_run(n2_intra=50.0)))
    bad = [f for f in found if f.status == "regression"]
    assert [(f.component, f.hosts, f.check) for f in bad] == [
        ("node", ("n2",), "baseline: intra-node all_reduce busbw")
    ]
    assert bad[0].measured == 50.0 and bad[0].expected == 100.0
    assert verdict_of(found) == "fail"
    assert all(f.status == "ok" for f in found if f not in bad)


def test_slow_own_link_names_that_node_only() -> None:
    base = make("acc-1", "t", figures(accepted_run()))
    bad = [f for f in judge(base, figures(accepted_run(n3_pair=5.0))) if f.status == "regression"]
    assert [(f.component, f.hosts, f.check) for f in bad] == [
        ("node", ("n3",), "baseline: best pair busbw (its own link)")
    ]


def test_within_tolerance_is_ok_and_spread_widens_it() -> None:
    base = make("acc-1", "t", figures(accepted_run()))
    assert all(
        f.status == "ok"
        for f in judge(base, figures(accepted_run(n2_intra=100 * (1 - DEFAULT_TOLERANCE) + 1)))
    )
    noisy = figures(
        RecordSet(net=[net("intra-node", "all_reduce", 2**30, v, ("n1",)) for v in (100.0, 70.0)])
    )
    assert tolerance_for(noisy[0]) == MAX_TOLERANCE  # twice a 30% spread, capped
    (st,) = [f for f in figures(accepted_run()) if f.kind == "storage"]
    assert tolerance_for(st) == STORAGE_TOLERANCE


def test_check_on_another_path_is_not_comparable_and_names_both_paths() -> None:
    base = make("acc-1", "t", figures(accepted_run()))  # n1's only local path is /nvme
    later = RecordSet(
        io=[io("checkpoint_write", "write", "/var/tmp", 1.0, scope="local", per_host={"n1": 1.0})]
    )
    (f,) = judge(base, figures(later))  # one figure, nothing comparable: one finding says so
    assert (f.status, f.hosts, f.extra["matched_none"]) == ("no_reference", ("n1",), True)
    assert "measured on /var/tmp, accepted on /nvme" in f.message
    assert base.find(figures(later)[0]) is None


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (("tolerance: 0.15", "tolerance: lots"), "tolerance: expected a number >= 0"),
        (("kind: sweep", "kind: vibes"), "kind: expected one of"),
        (("stoker_baseline: 1", "stoker_baseline: 7"), "stoker_baseline: expected 1"),
        (("  unit: GB/s", "  unit: GB/s\n  colour: red"), "colour: unknown field"),
    ],
)
def test_bad_baseline_names_file_and_field(tmp_path: Path, edit: tuple[str, str], says: str) -> None:
    text = to_yaml(make("acc-1", "t", figures(accepted_run())))
    path = tmp_path / "b.yaml"
    path.write_text(text.replace(*edit, 1))
    with pytest.raises(UsageError) as e:
        load(path)
    assert str(e.value).startswith(str(path)) and says in str(e.value)


def _compute(rs: RecordSet, gpu3: float) -> RecordSet:
    """One 4-GPU node's bf16 compute records (hand-written, stoker compute's fields)."""
    rs.compute += [
        {
            "kind": "compute", "host": "n1", "gpu": g, "proc": g, "uuid": f"GPU-{g}", "name": "NVIDIA H100 80GB HBM3",
            "dtype": "bf16", "best_shape": "8192x8192x8192", "median_tflops": gpu3 if g == 3 else 700.0,
            "max_tflops": (gpu3 if g == 3 else 700.0) * 1.01, "mean_tflops": 690.0,
        }
        for g in range(4)
    ]  # fmt: skip
    return rs


def test_compute_figures_per_gpu_slot_and_a_slower_gpu_is_a_regression(tmp_path: Path) -> None:
    figs = [f for f in figures(_compute(accepted_run(), 700.0)) if f.kind == "compute"]
    assert [(f.host, f.device, f.op, f.unit, f.component) for f in figs] == [
        ("n1", f"gpu{g}", "bf16", "TFLOPS", "gpu") for g in range(4)
    ]
    base = make("acc-1", "t", figures(_compute(accepted_run(), 700.0)))
    path = tmp_path / "b.yaml"
    path.write_text(to_yaml(base))
    back = load(path)  # the unit survives the file
    assert {a.figure.unit for a in back.figures if a.figure.kind == "compute"} == {"TFLOPS"}
    # GPU 3 gives 20% less than it did at acceptance: past the 15% tolerance, named by slot
    found = judge(back, figures(_compute(accepted_run(), 560.0)))
    bad = [f for f in found if f.status == "regression"]
    assert [(f.component, f.hosts, f.extra["device"], f.unit) for f in bad] == [
        ("gpu", ("n1",), "gpu3", "TFLOPS")
    ]
    assert "560 TFLOPS against 700 accepted" in bad[0].message
    # 10% less is inside the tolerance
    assert not [f for f in judge(back, figures(_compute(accepted_run(), 630.0))) if f.status == "regression"]
