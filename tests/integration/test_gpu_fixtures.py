"""Records that stoker wrote on a real H100 (tests/data/gpu/README.md), read back and judged
the way `stoker report` does for any run: the NCCL path's output, checked without a GPU."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import DATA, STOKER

GPU = DATA / "gpu"
# nccl-tests PERFORMANCE.md at n = 1, by hand: (n-1)/n and 2(n-1)/n are 0; broadcast and reduce 1
FACTOR_N1 = {
    "all_reduce": 0.0,
    "all_gather": 0.0,
    "reduce_scatter": 0.0,
    "alltoall": 0.0,
    "broadcast": 1.0,
    "reduce": 1.0,
}


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_nccl_records_follow_the_nccl_tests_formulas() -> None:
    recs = _lines(GPU / "h100-nccl-1rank" / "net.jsonl")
    assert {r["op"] for r in recs} == set(FACTOR_N1)
    for r in recs:
        assert (r["backend"], r["ranks"], r["device"], r["wrong"]) == ("nccl", 1, "NVIDIA H100 80GB HBM3", 0)
        assert abs(r["algbw_GBps"] - r["bytes"] / r["time_s"] / 1e9) <= 1e-9 * r["algbw_GBps"] + 1e-12
        assert abs(r["busbw_GBps"] - r["algbw_GBps"] * FACTOR_N1[r["op"]]) <= 1e-9 * r["algbw_GBps"] + 1e-12
        assert r["time_min_s"] <= r["time_p50_s"] <= r["time_p99_s"]
    manifest = _lines(GPU / "h100-nccl-1rank" / "manifest.jsonl")[0]
    assert (
        manifest["versions"]["nccl"] == "2.28.9"
        and manifest["hardware"]["gpu_model"] == "NVIDIA H100 80GB HBM3"
    )


@pytest.mark.parametrize("run", ["h100-nccl-1rank", "h200-gpu-check/net-graph", "h200-gpu-check/net-eager"])
def test_one_rank_sweeps_are_shown_but_not_judged(tmp_path: Path, run: str) -> None:
    d = tmp_path / "gpu"
    shutil.copytree(GPU / run, d)
    p = subprocess.run([*STOKER, "report", str(d)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    v = json.loads((d / "verdict.json").read_text())
    # nothing was judged, so nothing passed (exit 0: an exploratory report is not an error)
    assert v["verdict"] == "unjudged" and v["findings"] == []
    md = (d / "report.md").read_text()
    assert "all_reduce · 1 rank on 1 node · nccl" in md and "One rank crosses no link" in md


def test_a_gpu_machines_stoker_run_reports_its_storage(tmp_path: Path) -> None:
    d = tmp_path / "run"
    shutil.copytree(GPU / "h100-run", d)
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        f"storage:\n  - {{path: {_lines(d / 'io.jsonl')[0]['path']}, kind: local, read_GBps: 7, write_GBps: 5}}\n"
    )
    p = subprocess.run(
        [*STOKER, "report", str(d), "--spec", str(spec)], capture_output=True, text=True, timeout=120
    )
    # measured ~1.9 GB/s against an advertised 5-7 GB/s (a Gen4 NVMe): below spec, a fail
    assert p.returncode == 1, p.stderr
    v = json.loads((d / "verdict.json").read_text())
    writes = [f for f in v["findings"] if f["check"] == "checkpoint_write write bandwidth"]
    assert writes and writes[0]["status"] == "below_spec" and 1.8 < writes[0]["measured"] < 2.1


# tests/data/gpu/h200-gpu-check: gpu_check on a real H200 (its README)
H200 = GPU / "h200-gpu-check"
# NVIDIA H200 datasheet (nvidia.com/en-us/data-center/h200): 4.8 TB/s of HBM3e. A one-rank
# out-of-place collective is a device copy, S bytes read and S written: algbw <= 4800 / 2
H200_COPY_GBPS = 4800 / 2
# PCIe Gen 5 x16: 32 GT/s x 16 lanes x 128/130 / 8 = 63.0 GB/s each way (the query: gen 5, x16)
PCIE5_X16_GBPS = 32 * 16 * 128 / 130 / 8
# H200 SXM dense TFLOPS (the same datasheet, without sparsity): bf16/fp16 989, fp8 1979
H200_TFLOPS = {"bf16": 989, "fp16": 989, "fp8": 1979}
NCCL_TESTS_MODES = {"plain": False, "G1": True, "G3": True}  # mode -> graph


def _nccl_tests_log(op: str, mode: str):  # type: ignore[no-untyped-def]
    from reports.ingest.nccl_tests import parse_text

    path = H200 / "nccl-tests" / f"{op}-{mode}.log"
    return parse_text(path.read_text(), run_id="nt", ts="", source_name=path.name, op=op)


def test_real_nccl_tests_logs_are_read_row_for_row() -> None:
    """Each of the 12 logs has 14 rows (8 B to 512 MiB by 4; 1 GiB is past -e 1G), each row an
    out-of-place and an in-place record: none may be skipped. A one-GPU in-place op and a graph
    launch print times like 0.07 us and algbw like 4e+06, whose last digit is worth +-7% and
    more: the importer's algbw = size / time check allows for what the printed digits say."""
    for op in ("all_reduce", "all_gather", "reduce_scatter", "broadcast"):
        for mode, graph in NCCL_TESTS_MODES.items():
            parsed = _nccl_tests_log(op, mode)
            assert parsed.notes == [], (op, mode, parsed.notes)
            assert len(parsed.records) == 28, (op, mode)
            assert {(r.ranks, r.extra.get("graph"), r.iters, r.warmup) for r in parsed.records} == {
                (1, graph, 20, 1)
            }
    # all_gather -G 3, the 536870912 B row, by hand from the log:
    #   536870912  134217728  float  none  -1  396.99  1352.4  0.00  0  0.14  4e+06  0.00  0
    rows = {(r.bytes, r.in_place): r for r in _nccl_tests_log("all_gather", "G3").records}
    oop, inp = rows[(536870912, False)], rows[(536870912, True)]
    assert (oop.time_s, oop.algbw_GBps, inp.time_s, inp.algbw_GBps) == (396.99e-6, 1352.4, 0.14e-6, 4e6)


def test_stoker_net_on_a_real_gpu_agrees_with_nccl_tests_where_the_link_decides() -> None:
    """stoker's NCCL path against nccl-tests, both measured in the same command on the same GPU,
    like for like: out-of-place (torch's all_gather and reduce_scatter), eager vs plain and
    graph vs -G 3, at >= 128 MiB, where the copy and not the host decides. Each figure is also
    under the H200's own limit (HBM3e, read once and written once)."""
    got = {}
    for name, graph in (("net-eager", False), ("net-graph", True)):
        recs = _lines(H200 / name / "net.jsonl")
        assert {(r["backend"], r["ranks"], r["device"], r["graph"], r["wrong"]) for r in recs} == {
            ("nccl", 1, "NVIDIA H200", graph, 0)
        }
        for r in recs:
            if not r["in_place"]:
                assert r["algbw_GBps"] <= H200_COPY_GBPS, r
            got[(r["op"], r["bytes"], r["in_place"], graph)] = r["time_s"]
    compared = 0
    for op in ("all_gather", "reduce_scatter"):
        for mode, graph in (("plain", False), ("G3", True)):
            theirs = {(r.bytes, r.in_place): r.time_s for r in _nccl_tests_log(op, mode).records}
            # 512 MiB within 1%; 128 MiB (67 us an op) within 5%: one run of 20 iterations, and
            # an eager op's host cost (15-45 us at 8 B in this run) is hidden only while the
            # queue stays ahead (reduce_scatter eager 69.86 vs 66.92 us here: +4.4%)
            for size, within in ((134217728, 0.05), (536870912, 0.01)):
                mine = got[(op, size, False, graph)]
                assert abs(mine / theirs[(size, False)] - 1) <= within, (
                    op,
                    mode,
                    size,
                    mine,
                    theirs[(size, False)],
                )
                compared += 1
    assert compared == 8


def test_real_gpu_figures_sit_under_the_h200s_limits() -> None:
    """The host link, the matmuls and the copies gpu_check measured, each under its own limit
    (PCIe Gen 5 x16, the datasheet's dense TFLOPS), and the bare references beside them."""
    links = [r for r in _lines(H200 / "inventory" / "host.jsonl") if r.get("component") == "host link"]
    assert [(r["gen"], r["width"]) for r in links] == [(5, 16)]
    assert 0.7 * PCIE5_X16_GBPS < links[0]["h2d_pinned_GBps"] <= PCIE5_X16_GBPS
    bare = json.loads((H200 / "bare" / "copy.json").read_text())
    assert bare["gpus"][0]["h2d_GBps"] <= PCIE5_X16_GBPS
    compute = {r["dtype"]: r for r in _lines(H200 / "compute" / "compute.jsonl")}
    assert set(compute) == set(H200_TFLOPS)
    for dt, peak in H200_TFLOPS.items():
        assert 0.5 * peak < compute[dt]["median_tflops"] <= compute[dt]["max_tflops"] <= peak, dt


def test_real_topo_and_sampler_outputs_parse() -> None:
    """nvidia-smi's own bytes on the H200: topo -m with its ANSI-underlined header and no NIC,
    the sampler's query line (clocks_throttle_reasons.active 0x1 is GPU idle: no throttle)."""
    from netbench.compute.smi import parse_sample
    from netbench.inventory.parse import parse_topo

    assert parse_topo((H200 / "raw" / "topo-m.txt").read_text()) == {
        "GPU0": {"nearest_nic": None, "nic_path": None, "numa_node": 0}
    }
    (s,) = parse_sample((H200 / "raw" / "query-smi-sampler.csv").read_text())
    assert (s["name"], s["sm_clock_mhz"], s["sm_clock_max_mhz"], s["power_limit_w"], s["throttle"]) == (
        "NVIDIA H200",
        345.0,
        1980.0,
        700.0,
        [],
    )
