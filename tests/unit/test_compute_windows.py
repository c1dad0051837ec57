"""stoker compute per dtype: the full profile's per-dtype limit, a worker stopped at the limit
keeping the dtypes it finished, nvidia-smi readings given to the dtype they overlapped (not the
idle time before the sweep), and fp8 run in the type mamf-finder uses on each vendor.

The nvidia-smi lines are hand-written in the format of `nvidia-smi --query-gpu=<smi.SMI_QUERY>
--format=csv,noheader,nounits` (as tests/data/compute/h100-node-smi.csv)."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from netbench.compute import cli, smi
from netbench.compute import sweep as sw
from netbench.compute.devices import torch_dtype_name

UUID = "GPU-0c6b8a4e-3b7e-2f0a-9c55-1d2e3f405061"


def smi_line(power: float, clock: int, mask: str) -> str:
    return f"0, {UUID}, NVIDIA H100 80GB HBM3, {clock}, 1980, {power}, 700.00, 61, {mask}\n"


def test_full_profile_stops_each_dtype_at_its_share_of_the_limit() -> None:
    p = sw.plan("full", ("bf16", "fp16", "fp8"), gpu=True)
    assert p.device_warmup_s == 30.0
    assert p.budget_s == pytest.approx((1800 - 30) / 3)  # 590 s each: the worker ends inside 1800 s


def dtype_out(dtype: str, tflops: float, window: list[float]) -> dict[str, Any]:
    return {
        "dtype": dtype,
        "best_shape": "8192x8192x8192",
        "median_tflops": tflops,
        "max_tflops": tflops,
        "mean_tflops": tflops,
        "cpu_mean_tflops": None,
        "shapes_tried": 3,
        "elapsed_s": window[1] - window[0],
        "error": "",
        "shapes": [],
        "window": window,
    }


def worker(done: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "device": "cuda:0",
        "gpu": 0,
        "proc": 0,
        "name": "NVIDIA H100 80GB HBM3",
        "uuid": UUID,
        "results": done,
    }


def test_a_worker_cut_off_keeps_the_dtypes_it_finished() -> None:
    bf16 = dtype_out("bf16", 790.0, [10.0, 20.0])
    fp16 = dtype_out("fp16", 780.0, [20.0, 30.0])
    printed = (
        json.dumps(worker([bf16]))
        + "\n"
        + json.dumps(worker([bf16, fp16]))
        + "\n"
        + json.dumps(worker([bf16, fp16]))[:40]  # killed while writing the fp8 line
    )
    got = cli.last_result(printed)
    assert got is not None and [r["dtype"] for r in got["results"]] == ["bf16", "fp16"]
    assert cli.last_result("") is None and cli.last_result(None) is None


def test_each_dtype_gets_the_readings_taken_while_it_ran() -> None:
    readings = iter(
        [
            (0.0, smi_line(80.5, 345, "0x0000000000000001")),  # idle, before the workers start
            (12.0, smi_line(650.25, 1980, "0x0000000000000000")),  # bf16
            (18.0, smi_line(690.0, 1950, "0x0000000000000000")),  # bf16
            (25.0, smi_line(699.5, 1755, "0x0000000000000004")),  # fp8: at the power cap
        ]
    )
    now = [0.0]

    def run(argv: Any) -> str:
        now[0], text = next(readings)
        return text

    sampler = smi.Sampler(run=run, clock=lambda: now[0])
    for _ in range(4):
        sampler.read_once()
    result = worker([dtype_out("bf16", 790.0, [10.0, 20.0]), dtype_out("fp8", 1400.0, [20.0, 30.0])])
    gpu, whole = sampler.match(UUID, 0)
    recs = cli.records(result, {"kind": "compute"}, whole, "standard", lambda a, b: sampler.window(gpu, a, b))
    bf16, fp8 = recs
    assert (bf16["power_w_max"], bf16["sm_clock_mhz_min"], bf16["smi_samples"]) == (690.0, 1950, 2)
    assert bf16["throttle_reasons"] == []
    assert (fp8["power_w_max"], fp8["sm_clock_mhz_min"], fp8["smi_samples"]) == (699.5, 1755, 1)
    assert fp8["throttle_reasons"] == ["sw_power_cap"]
    assert whole["smi_samples"] == 4  # what main copied into every dtype, idle reading included


def test_fp8_is_e4m3fn_on_cuda_and_e4m3fnuz_on_rocm() -> None:
    cuda = SimpleNamespace(version=SimpleNamespace(hip=None, cuda="13.0"))
    rocm = SimpleNamespace(version=SimpleNamespace(hip="6.3.42131", cuda=None))
    assert torch_dtype_name(cuda, "fp8") == "float8_e4m3fn"
    assert torch_dtype_name(rocm, "fp8") == "float8_e4m3fnuz"  # MI300X, as mamf-finder selects
    assert torch_dtype_name(rocm, "bf16") == "bfloat16"
