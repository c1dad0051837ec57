"""stoker compute: the sweep's method and statistics (pure, with a scripted device and
clock), nvidia-smi readings, the judgement of a node with one slow GPU (hand-written fixture,
tests/data/compute), the model's use of the measured appetite, and the CPU path for real:
the sweep's TFLOPS against a bare torch loop run beside it."""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from netbench.compute import cli, smi
from netbench.compute import sweep as sw
from reports.evidence import build
from reports.judging.node.compute import appetite, compute_findings
from reports.judging.workload.workload import Workload
from reports.shared.errors import UsageError
from reports.table.read import RecordSet
from tests.unit.recordgen import judge_records

DATA = Path(__file__).resolve().parent.parent / "data" / "compute"
REPO = Path(__file__).resolve().parents[2]


# -- the sweep ----------------------------------------------------------------------
class ScriptedDevice:
    """A device whose products take `seconds(m, n, k)`; the clock advances by what it ran."""

    name = "scripted"
    timer = "script"

    def __init__(self, seconds: Any, clock: list[float], fail: str = "") -> None:
        self.seconds, self.clock, self.fail = seconds, clock, fail

    def times_s(
        self, m: int, n: int, k: int, dtype: str, warmup: int, iters: int, deadline: float
    ) -> list[float]:
        if self.fail:
            raise RuntimeError(self.fail)
        t = self.seconds(m, n, k)
        self.clock[0] += t * (warmup + iters)
        return [t * (1 + 0.01 * i) for i in range(iters)]


def test_tflops_is_two_mnk_over_time() -> None:
    assert sw.tflops(1000, 2000, 3000, 0.012) == pytest.approx(2 * 1000 * 2000 * 3000 / 0.012 / 1e12)
    r = sw.shape_result(1024, 1024, 1024, [0.004, 0.002, 0.003])
    assert r.max_tflops == pytest.approx(2 * 1024**3 / 0.002 / 1e12)
    assert r.median_tflops == pytest.approx(2 * 1024**3 / 0.003 / 1e12) and r.shape == "1024x1024x1024"


def test_shapes_largest_first_and_aligned() -> None:
    grid = sw.shapes((256, 512))
    assert len(grid) == 8 and grid[0] == (512, 512, 512) and grid[-1] == (256, 256, 256)
    for profile in sw.BUDGET_S:
        assert all(s % 256 == 0 for s in sw.GPU_SIZES[profile] + sw.CPU_SIZES[profile])


def test_budget_stops_the_sweep_and_the_best_shape_wins() -> None:
    clock = [0.0]
    # 0.1 ms per 10^9 FLOP-ish, but 512^3 runs twice as fast as the cube law says: it is the best
    dev = ScriptedDevice(lambda m, n, k: m * n * k / 1e10 / (2 if (m, n, k) == (512, 256, 512) else 1), clock)
    res = sw.sweep_dtype(dev, "fp32", sw.shapes((256, 512)), 2, 10, budget_s=0.2, clock=lambda: clock[0])
    assert 0 < len(res.shapes) < 8  # the budget ended it early
    full = sw.sweep_dtype(dev, "fp32", sw.shapes((256, 512)), 2, 10, budget_s=None, clock=lambda: clock[0])
    assert len(full.shapes) == 8 and full.best is not None and full.best.shape == "512x256x512"


def test_a_dtype_the_device_cannot_run_is_an_error_not_a_crash() -> None:
    res = sw.sweep_dtype(ScriptedDevice(None, [0.0], fail="no fp8 here"), "fp8", [(256, 256, 256)], 1, 3, 1.0)
    assert res.shapes == () and res.best is None and "no fp8 here" in res.error


def test_profiles_budget_quick_20s_standard_60s_full_whole_grid() -> None:
    assert sw.plan("quick", ("bf16", "fp16"), gpu=True).budget_s == pytest.approx((20 - 3) / 2)
    assert sw.plan("standard", ("bf16",), gpu=True).budget_s == pytest.approx(60 - 9)
    assert sw.plan("full", ("bf16",), gpu=True).budget_s == pytest.approx(sw.FULL_LIMIT_S - 30)  # its limit
    assert sw.plan("quick", ("fp32",), gpu=False, budget_s=5).device_warmup_s <= 1.0


# -- nvidia-smi -----------------------------------------------------------------------
def smi_text() -> str:
    return "".join(
        ln for ln in (DATA / "h100-node-smi.csv").read_text().splitlines(True) if not ln.startswith("#")
    )


def test_smi_readings_summarised_per_gpu() -> None:
    sampler = smi.Sampler(run=lambda argv: smi_text())
    assert len(sampler.read_once()) == 16  # two readings of 8 GPUs in one text
    s5, s0 = sampler.summary(5), sampler.summary(0)
    assert s5["throttle_reasons"] == ["sw_power_cap"] and s5["sm_clock_mhz_min"] == 1530
    assert s5["power_w_max"] == 700.31 and s5["power_limit_w"] == 700.0 and s5["sm_clock_max_mhz"] == 1980
    assert s0["throttle_reasons"] == [] and s0["sm_clock_mhz_median"] == 1980
    assert s0["uuid"].startswith("GPU-") and s0["smi_samples"] == 2
    assert smi.throttle_reasons("0x0000000000000045") == [
        "sw_power_cap",
        "hw_thermal_slowdown",
    ]  # idle left out
    assert smi.throttle_reasons("[N/A]") == []


# -- judging: one node, one GPU 15% slower than its 7 siblings -------------------------
SIBLINGS = [792.4, 788.1, 795.0, 790.7, 786.9, 793.8, 789.5]  # bf16 TFLOPS, ~1% jitter


def node_records(slow_share: float = 0.85, host: str = "gpu-node-07") -> list[dict[str, Any]]:
    """The compute records `stoker compute` writes for this node, built through its own code
    (cli.records) from hand-written sweep results and the nvidia-smi fixture."""
    sampler = smi.Sampler(run=lambda argv: smi_text())
    sampler.read_once()
    med = statistics.median(SIBLINGS)
    out = []
    for gpu in range(8):
        bf16 = med * slow_share if gpu == 5 else SIBLINGS[gpu if gpu < 5 else gpu - 1]
        result = {
            "device": f"cuda:{gpu}",
            "gpu": gpu,
            "proc": gpu,
            "name": "NVIDIA H100 80GB HBM3",
            "uuid": None,
            "timer": "cuda-event",
            "threads": None,
            "warmup": 10,
            "iters": 50,
            "l2_flushed": True,
            "results": [
                {
                    "dtype": dt,
                    "best_shape": "4096x8192x8192",
                    "median_tflops": t,
                    "max_tflops": t * 1.01,
                    "shapes_tried": 12,
                    "elapsed_s": 25.0,
                    "error": "",
                    "shapes": [],
                }
                for dt, t in (("bf16", bf16), ("fp16", bf16 * 1.01))
            ],
        }
        head = {
            "schema": 1,
            "kind": "compute",
            "run_id": "fixture",
            "ts": "2026-11-24T00:00:00Z",
            "host": host,
        }
        out += cli.records(result, head, sampler.summary(gpu), "standard")
    return out


def test_one_slow_gpu_of_eight_is_exactly_one_finding_naming_it() -> None:
    findings = compute_findings(node_records())
    failing = [f for f in findings if f.status == "below_spec"]
    assert len(failing) == 1
    (f,) = failing
    assert f.component == "gpu" and f.hosts == ("gpu-node-07",) and f.extra["gpu"] == 5
    assert f.extra["uuid"].startswith("GPU-") and f.extra["throttle_reasons"] == ["sw_power_cap"]
    assert "gpu-node-07 GPU 5" in f.message and "15% slower" in f.message and "also slow in fp16" in f.message
    assert "SM clock 1538 MHz of 1980 max" in f.message and "throttle: sw_power_cap" in f.message
    # the fleet against the catalog: a healthy H100's figure, so this is ok
    (peak,) = [x for x in findings if x.check == "matmul TFLOPS vs peak (bf16)"]
    assert peak.status == "ok" and peak.extra["mamf_tflops"] == 794.5 and "ml-engineering" in peak.message
    assert sum("GPU 5" in x.message for x in findings) == 1


def test_healthy_node_has_no_slow_gpu_and_jitter_is_not_a_finding() -> None:
    findings = compute_findings(node_records(slow_share=0.95))  # 5% is the silicon lottery
    assert not [f for f in findings if f.status == "below_spec"]


def test_a_power_capped_fleet_is_short_of_what_a_healthy_h100_reaches() -> None:
    recs = [{**r, "median_tflops": r["median_tflops"] * 0.7} for r in node_records(slow_share=1.0)]
    (peak,) = [f for f in compute_findings(recs) if f.check == "matmul TFLOPS vs peak (bf16)"]
    assert peak.status == "below_spec" and peak.expected == pytest.approx(0.8 * 794.5)


def test_judge_takes_the_findings_and_the_model_the_measured_appetite() -> None:
    recs = node_records(slow_share=1.0)
    w = Workload(name="w", params=8e9, gpus=8, global_batch_tokens=1e6, dtype="bf16", data="ddp")
    j = judge_records(RecordSet(compute=recs), None, w)
    assert any(f.check == "matmul TFLOPS vs peak (bf16)" for f in j.findings)
    a = appetite(recs, "bf16")
    assert a is not None and a.devices == 8
    # by hand: the slowest of the 8 is SIBLINGS' 786.9 TFLOPS (GPU 5, at slow_share 1.0, runs at
    # their median 790.7; the records have no mean, so the median is the figure), and
    # compute = 6 x 8e9 params x 1e6 tokens / (8 GPUs x 786.9e12 x 0.5 MFU)
    assert min(SIBLINGS) == 786.9 and a.tflops == 786.9
    assert j.model_summary["compute_s"] == pytest.approx(6 * 8e9 * 1e6 / (8 * 786.9e12 * 0.5))
    assert (
        j.model_summary["compute_figure"] == "measured"
        and "measured bf16 matmul" in j.model_summary["compute_from"]
    )
    given = judge_records(
        RecordSet(compute=recs), None, Workload(name="w", params=8e9, gpus=8, compute_s=2.0, data="ddp")
    )
    assert given.model_summary["compute_figure"] == "compute_s" and given.model_summary["compute_s"] == 2.0


def test_a_slow_gpu_no_throttle_explains_says_throttle_none() -> None:
    # GPU 0 (792.4 TFLOPS, nvidia-smi's fixture: no throttle reason) at 80%: 633.92 -> "633.9"
    recs = node_records(slow_share=1.0)
    recs = [{**r, "median_tflops": 792.4 * 0.8} if (r["gpu"], r["dtype"]) == (0, "bf16") else r for r in recs]
    (f,) = [f for f in judge_records(RecordSet(compute=recs)).findings if f.status == "below_spec"]
    assert f.extra["gpu"] == 0 and "GPU 0" in f.message and "633.9 TFLOPS" in f.message
    assert "throttle: none" in f.message, f.message


def test_the_accepted_compute_figure_spans_median_to_max() -> None:
    # a baseline holds each GPU's best-shape median and, as its spread's top, the record's
    # max_tflops: GPU 0's bf16 792.4 and 792.4 x 1.01 = 800.324 (node_records)
    from reports.judging.fleet.baseline_figures import figures

    (f,) = [
        f for f in figures(build(RecordSet(compute=node_records()))) if f.device == "gpu0" and f.op == "bf16"
    ]
    assert (f.value, f.low) == (792.4, 792.4) and f.high == pytest.approx(800.324), f


# -- the CPU path, for real --------------------------------------------------------------
def test_cpu_tflops_against_a_bare_torch_loop_beside_it() -> None:
    """The sweep's figure for a shape vs FLOPs / time of a bare `a @ b` loop run beside it
    (interleaved, 7 rounds, the median ratio): >= 0.95. Timed on the process's CPU clock, the
    sweep's `cpu_mean_tflops`, since on this shared machine the wall clock of two windows a
    second apart differs by 2x (other jobs); the wall-clock figures are checked on an idle
    machine only (at most 2 runnable tasks)."""
    import os

    import torch

    from netbench.compute.devices import CpuDevice

    dev = CpuDevice(threads=1)
    m = n = k = 512
    a, b, c = torch.randn(m, k), torch.randn(n, k).t(), torch.empty(m, n)
    cpu, wall = [], []
    for _ in range(7):
        ours = sw.shape_result(m, n, k, dev.times_s(m, n, k, "fp32", 3, 15, float("inf")), dev.last_cpu_times)
        for _ in range(3):
            torch.mm(a, b, out=c)  # the bare loop's own warm-up
        c0, t0 = time.process_time(), time.perf_counter()
        for _ in range(15):
            torch.mm(a, b, out=c)  # into one buffer: the loop times products, not allocations
        c1, t1 = time.process_time(), time.perf_counter()
        flops = 15 * 2 * m * n * k
        assert ours.cpu_mean_tflops is not None
        cpu.append(ours.cpu_mean_tflops / (flops / (c1 - c0) / 1e12))
        wall.append(ours.mean_tflops / (flops / (t1 - t0) / 1e12))
    print(
        f"sweep / bare loop, CPU clock: median {statistics.median(cpu):.3f} of {[round(x, 3) for x in cpu]}"
    )
    assert 0.95 <= statistics.median(cpu) <= 1.10, cpu
    if os.getloadavg()[0] <= 2:
        assert 0.95 <= statistics.median(wall) <= 1.10, wall


def test_stoker_compute_on_cpu_writes_records(tmp_path: Path) -> None:
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "launchers.cli",
            "compute",
            "--out",
            str(tmp_path),
            "--budget",
            "3",
            "--dtypes",
            "fp32",
            "--threads",
            "1",
            "--device",
            "cpu",
        ],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=REPO,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    (rec,) = [json.loads(ln) for ln in (tmp_path / "compute.jsonl").read_text().splitlines()]
    assert rec["kind"] == "compute" and rec["device"] == "cpu" and rec["timer"] == "perf_counter"
    assert rec["dtype"] == "fp32" and rec["median_tflops"] > 0 and rec["max_tflops"] >= rec["median_tflops"]
    assert (
        0 < rec["mean_tflops"] <= rec["max_tflops"] and rec["cpu_mean_tflops"] > 0
    )  # CPU clock beside the wall
    assert rec["best_shape"].count("x") == 2 and rec["threads"] == 1 and rec["profile"] == "quick"
    assert "compute cpu0: fp32 shape 1/" in p.stderr  # progress per device


@pytest.mark.parametrize("argv", [["--dtypes", "bf17"], ["--budget", "0"], ["--nproc", "-1"]])
def test_bad_input_is_one_line_and_exit_2(argv: list[str], tmp_path: Path) -> None:
    p = subprocess.run(
        [sys.executable, "-m", "launchers.cli", "compute", "--out", str(tmp_path), *argv],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert (
        p.returncode == 2
        and len(p.stderr.strip().splitlines()) == 1
        and not (tmp_path / "compute.jsonl").exists()
    )


def test_dtypes_follow_the_catalog() -> None:
    assert cli.gpu_dtypes("NVIDIA H100 80GB HBM3") == ("bf16", "fp16", "fp8")
    assert cli.gpu_dtypes("NVIDIA A100-SXM4-80GB") == ("bf16", "fp16")
    assert cli.gpu_dtypes("Some Future GPU") == ("bf16", "fp16")
    assert cli._dtypes("BF16, fp8") == ("bf16", "fp8")
    with pytest.raises(UsageError):
        cli._check(argparse.Namespace(dtypes="int4", budget=None, nproc=None, threads=None))


# -- mamf-finder's output imported ------------------------------------------------------------
def test_mamf_finder_summary_becomes_a_compute_record(tmp_path: Path) -> None:
    from reports.ingest.mamf import import_files, parse_mamf

    text = (DATA / "mamf-finder-gfx1151.txt").read_text()
    rec = parse_mamf(text, ts="2025-05-02T00:00:00Z", source_name="x.txt")
    assert (rec["dtype"], rec["median_tflops"], rec["max_tflops"], rec["mean_tflops"]) == (
        "bf16",
        22.3,
        22.9,
        22.3,
    )
    assert rec["best_shape"] == "3072x3072x1024" and rec["shapes_tried"] == 879
    assert (
        rec["host"] == "fe5b1b32a344"
        and rec["name"] == "AMD Radeon Graphics"
        and rec["uuid"].startswith("5858")
    )
    # the later format: "- " before the uname and device lines, "arithmetic mean:" after the summary
    later = text.replace("Linux fe5b", "- Linux fe5b").replace("_CudaDevice", "- _CudaDevice")
    later = later.replace(
        "** Dtype: torch.bfloat16",
        "python mamf-finder.py --cuda_device 3 --dtype float8_e4m3fn\n** Dtype: torch.float8_e4m3fn",
    )
    rec2 = parse_mamf(later, ts="t", source_name="y.txt")
    assert rec2["gpu"] == 3 and rec2["dtype"] == "fp8" and rec2["host"] == "fe5b1b32a344"
    with pytest.raises(ValueError, match="did not finish"):
        parse_mamf(text.split("Tried")[0], ts="t", source_name="z")
    other = tmp_path / "nccl.log"
    other.write_text("# nothing\n")
    assert import_files([str(DATA / "mamf-finder-gfx1151.txt"), str(other)], tmp_path) == [str(other)]
    assert import_files([str(DATA / "mamf-finder-gfx1151.txt")], tmp_path) == []  # once only
    assert len((tmp_path / "compute.jsonl").read_text().splitlines()) == 1


def test_a_compute_phase_without_records_makes_the_run_incomplete(tmp_path: Path) -> None:
    from reports.pipeline import missing_phases

    phases = [{"phase": "compute", "rc": 0, "elapsed_s": 21.0}]
    assert missing_phases(tmp_path, phases, set(), 0) == [
        "phase compute ended cleanly but wrote no compute records"
    ]
    (tmp_path / "compute.jsonl").write_text("{}\n")
    assert missing_phases(tmp_path, phases, set(), 0) == []


def test_smi_figures_follow_the_uuid_when_torch_renumbers() -> None:
    sampler = smi.Sampler(run=lambda argv: smi_text())
    sampler.read_once()
    uuid5 = sampler.summary(5)["uuid"]
    # CUDA_VISIBLE_DEVICES=5: torch calls it cuda:0, with the UUID torch prints (no "GPU-" prefix)
    gpu, summary = sampler.match(uuid5.removeprefix("GPU-"), 0)
    assert gpu == 5 and summary["throttle_reasons"] == ["sw_power_cap"]
    assert sampler.match(None, 2)[0] == 2


def test_compare_shows_each_clusters_compute_figure() -> None:
    from reports.fleet.clusters import appetite_words

    recs = node_records(slow_share=1.0)
    w = Workload(name="w", params=8e9, gpus=8, global_batch_tokens=1e6, dtype="bf16", data="ddp")
    shown = appetite_words(judge_records(RecordSet(compute=recs), None, w).model_summary)
    assert shown.startswith("measured: ") and "TFLOPS per device" in shown
    assert appetite_words({}) == ""
