"""What healthy systems reach: the catalog's reference figures, and plateaus judged against them
when no spec gives the advertised figure (reports/judging/network/reference.py). Figures by hand.

tests/data/nccl_tests/h100x8_{ring,nvls}_all_reduce.log are hand-written in nccl-tests 2.13's
format (its header, device lines and columns, as v2.13_mpirun_all_reduce.log), 8 x "NVIDIA H100
80GB HBM3" on one host, 8M to 8G: none of the fixtures held an 8 x H100 single-node log. Their
busbw follows the published figures (github.com/NVIDIA/nccl/issues/1455: ring 365-370 GB/s; NVLS 480 GB/s on 8 GPUs),
each row's time and algbw computed from it (algbw = busbw / 1.75, time = size / algbw).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from reports.judging import advertised as compare
from reports.judging.network import reference
from reports.pipeline import collect
from reports.shared import catalog
from reports.shared.findings import Finding
from reports.shared.spec import Spec, parse_spec
from tests.conftest import DATA
from tests.unit.recordgen import curves as build_curves
from tests.unit.recordgen import flat

NVLINK4 = catalog.link("nvlink4")
DETECTED = parse_spec(
    {"accelerator": "h100-sxm", "network": {"inter_node": {"link": "ib-ndr", "count": 8}}}, "d"
)


def test_the_catalog_holds_the_published_figures_with_their_sources() -> None:
    ring = catalog.net_reference("nvlink4", "all_reduce", "ring")
    nvls = catalog.net_reference("nvlink4", "all_reduce", "nvls")
    ndr = catalog.net_reference("ib-ndr", "all_reduce", "ring")
    assert ring is not None and nvls is not None and ndr is not None
    assert (ring.figure(8), ring.figure(2), ring.high_GBps) == (365.0, 365.0, 370.0)
    assert [nvls.figure(n) for n in (4, 5, 6, 7, 8)] == [365.0, 420.0, 440.0, 460.0, 480.0]
    assert nvls.figure(16) is None  # not measured: no reference, never an extrapolation
    assert (ndr.busbw_GBps, ndr.per) == (46.0, "port")
    assert "github.com/NVIDIA/nccl/issues/1455" in ring.source and "NCCL_ALGO=RING" in ring.conditions
    assert "nccl-tests/issues/290" in ndr.source
    assert catalog.net_reference("nvlink4", "all_gather", "nvls") is None  # NVLS: all_reduce only
    a100 = catalog.net_reference("nvlink3", "all_reduce", "ring")
    assert a100 is not None and (a100.figure(8), a100.figure(4), a100.high_GBps) == (230.0, None, 240.0)
    assert "nccl-tests/issues/149" in a100.source and a100.min_bytes == 8 << 30
    hdr = catalog.net_reference("ib-hdr", "all_reduce", "ring")
    assert hdr is not None and (hdr.busbw_GBps, hdr.per) == (24.0, "port") and "issues/119" in hdr.source
    assert catalog.net_reference("nvlink5", "all_reduce", "ring") is None  # no source found: left out
    assert catalog.net_reference("efa-v2", "all_reduce", "ring") is None
    host = catalog.host_link_reference("pcie5-x16")
    assert host is not None and host.d2h_GBps == 52.8 and host.h2d_GBps is None


@pytest.mark.parametrize(
    ("env", "busbw", "algo"),
    [
        ({}, 366.0, "ring"),
        ({}, 389.0, "nvls"),  # > 1.05 x 370 = 388.5: above the ring's ceiling
        ({}, 388.0, "ring"),
        ({"NCCL_ALGO": "Ring"}, 470.0, "ring"),  # what the run said wins
        ({"NCCL_ALGO": "NVLS"}, 300.0, "nvls"),
        ({"NCCL_ALGO": "NVLSTree,Ring"}, 300.0, "nvls"),
        ({"NCCL_ALGO": "^NVLS"}, 300.0, "ring"),
        ({"NCCL_NVLS_ENABLE": "0"}, 470.0, "ring"),
    ],
)
def test_which_algorithm_ran(env: dict[str, str], busbw: float, algo: str) -> None:
    assert reference.algo_of("all_reduce", busbw, NVLINK4, env).name == algo


def test_all_gather_is_judged_against_the_ring_whatever_its_figure() -> None:
    a = reference.algo_of("all_gather", 470.0, NVLINK4, {})
    assert a.name == "ring" and "no in-switch reduction" in a.why


def _judge(
    busbw: float, spec: Spec | None = DETECTED, written: frozenset[str] = frozenset(), **env: str
) -> tuple[Finding, dict[str, float]]:
    curves, _ = build_curves(flat("intra-node", "all_reduce", busbw, sizes=range(20, 33)))  # 1M..4G
    (f,), expected = compare.compare_network(curves, spec, written=written, env=env)
    return f, expected


@pytest.mark.parametrize(
    ("busbw", "status", "algo", "expected"),
    [
        (366.0, "ok", "ring", 365.0),  # 100% of the ring's 365
        (329.0, "ok", "ring", 365.0),  # 0.9 x 365 = 328.5
        (328.0, "below_spec", "ring", 365.0),
        (478.0, "ok", "nvls", 480.0),  # NVLS on 8 GPUs
        (400.0, "below_spec", "nvls", 480.0),  # NVLS ran (> 388.5) but 400 < 0.9 x 480 = 432
    ],
)
def test_detected_link_without_a_spec_is_judged_against_the_healthy_reference(
    busbw: float, status: str, algo: str, expected: float
) -> None:
    f, advertised = _judge(busbw)
    assert (f.status, f.expected, f.extra["basis"], f.extra["advertised"]) == (
        status,
        expected,
        "reference",
        450.0,
    )
    assert f.extra["reference"]["algo"] == algo and f.extra["reference"]["gpus"] == 8
    assert "github.com/NVIDIA/nccl/issues/1455" in f.extra["reference"]["source"]
    assert advertised == {"intra-node network": 450.0}  # the charts still draw the advertised line
    assert "healthy nvlink4" in f.message and "no spec" in f.message


def test_nccl_algo_in_the_environment_picks_the_reference() -> None:
    f, _ = _judge(366.0, NCCL_ALGO="NVLS")  # the run forced NVLS and got a ring's figure: 366 < 432
    assert (f.status, f.expected) == ("below_spec", 480.0)
    assert f.extra["reference"]["algo_from"] == "NCCL_ALGO=NVLS"


def test_a_spec_stricter_than_healthy_does_not_fail_a_healthy_ring() -> None:
    strict = parse_spec({"accelerator": "h100-sxm", "thresholds": {"network": 0.85}}, "s")
    f, _ = _judge(366.0, strict, frozenset({"intra-node"}))
    # 366 / 450 = 81% < 85%, but at or above the healthy ring's 365: explained, not failed
    assert (f.status, f.expected, f.extra["basis"]) == ("ok", 450.0, "advertised")
    assert "81% of the advertised 450 GB/s (nvlink4), under the 85% threshold" in f.message
    assert "healthy nvlink4 ring systems reach 365 GB/s" in f.message and "not failed" in f.message
    f, _ = _judge(360.0, strict, frozenset({"intra-node"}))
    assert f.status == "below_spec"  # under the healthy figure too


def test_a_sweep_short_of_the_reference_sizes_is_not_failed_against_it() -> None:
    curves, _ = build_curves(flat("intra-node", "all_reduce", 300.0))  # 1M..1G: short of 2G
    (f,), _ = compare.compare_network(curves, DETECTED, written=frozenset(), env={})
    assert f.status == "no_reference" and "sweep to 4G" in f.message


def test_inter_node_reference_is_per_nic() -> None:
    curves, _ = build_curves(flat("inter-node", "all_reduce", 42.0, ("n1", "n2")))
    (f,), _ = compare.compare_network(curves, DETECTED, written=frozenset(), env={})
    # 46 GB/s per NIC x 8 NICs / 8 GPUs = 46 per GPU; 42 / 46 = 91% >= 90%
    assert (f.status, f.expected, f.extra["advertised"]) == ("ok", 46.0, 50.0)
    assert f.extra["reference"]["algo_from"] == "a 2-node ring assumed"  # NCCL_ALGO unrecorded
    (f,), _ = compare.compare_network(curves, DETECTED, written=frozenset(), env={"NCCL_ALGO": "Ring"})
    assert f.extra["reference"]["algo_from"] == "NCCL_ALGO=Ring"  # recorded: said, not assumed


def test_an_imported_8xh100_log_without_a_spec_is_judged_against_the_healthy_reference(
    tmp_path: Path,
) -> None:
    shutil.copy(DATA / "nccl_tests" / "h100x8_ring_all_reduce.log", tmp_path)
    c = collect(tmp_path)
    j = c.report.judgement
    (f,) = [f for f in j.findings if f.component == "intra-node network"]
    # the plateau: the best of the three largest sizes' medians of in- and out-of-place,
    # 2G (365.80, 363.97) -> 364.885, 4G (366.90, 365.07) -> 365.985, 8G (367.20, 365.36) -> 366.28
    assert (f.status, f.measured, f.expected) == ("ok", 366.28, 365.0)
    assert f.extra["basis"] == "reference" and f.extra["advertised"] == 450.0
    assert "github.com/NVIDIA/nccl/issues/1455" in f.extra["reference"]["source"]
    assert j.verdict == "pass" and "judged against what healthy systems" in j.headline
    assert any("no spec for the network" in n for n in j.notes)


def test_an_imported_8xh100_nvls_log_is_judged_against_the_nvls_reference(tmp_path: Path) -> None:
    shutil.copy(DATA / "nccl_tests" / "h100x8_nvls_all_reduce.log", tmp_path)
    (f,) = [f for f in collect(tmp_path).report.judgement.findings if f.component == "intra-node network"]
    # 8G: (479.60 + 477.20) / 2 = 478.4 > 388.5, the ring's ceiling: NVLS, against 480
    assert (f.status, f.measured, f.expected) == ("ok", 478.4, 480.0)
    assert f.extra["reference"]["algo"] == "nvls" and "ring's ceiling" in f.extra["reference"]["algo_from"]


def test_the_algorithm_settings_come_from_the_manifests_environment() -> None:
    manifests = [
        {"env": "not a mapping"},
        {"env": {"NCCL_ALGO": "Ring", "NCCL_DEBUG": "INFO"}},
        {"env": {"NCCL_ALGO": "NVLS", "NCCL_NVLS_ENABLE": "0"}},
    ]
    assert reference.run_env(manifests) == {"NCCL_ALGO": "Ring", "NCCL_NVLS_ENABLE": "0"}  # first seen wins


def test_a_sweep_that_reached_the_sources_size_is_below_the_reference_not_unreferenced() -> None:
    # a healthy figure of 100 GB/s measured from 1 GiB up: 90 (90%) is ok; 80 is below it when the
    # sweep reached 1 GiB, and no_reference only when it stopped short of it (1 GiB - 1 byte)
    ref = catalog.NetReference(
        link="nvlink4", algo="ring", scope="intra-node", ops=("all_reduce",), per="gpu",
        busbw_GBps=100.0, high_GBps=100.0, by_gpus={}, min_bytes=1 << 30, conditions="", source="hand-written",
    )  # fmt: skip
    h = reference.Healthy(
        figure=100.0, ref=ref, algo=reference.Algo(name="ring", why="hand-written"), gpus=8, min_bytes=1 << 30
    )
    assert reference.status(90.0, h, 1 << 20) == "ok"
    assert reference.status(80.0, h, 1 << 30) == "below_spec"
    assert reference.status(80.0, h, (1 << 30) - 1) == "no_reference"
