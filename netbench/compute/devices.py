"""The torch edge of the sweep: one Device per process. CPU: torch.mm timed with perf_counter
(the path tested for real here). CUDA: the same products timed with CUDA events, the L2 flushed
and the output re-randomised between iterations, as mamf-finder does (unmeasured on a GPU in this
tree: no GPU in CI; tests/unit/test_compute.py drives the CPU path and the sweep logic).
"""

from __future__ import annotations

import time
from typing import Any

from netbench.compute.sweep import Dtype

# Written between iterations so a product never finds its inputs in cache: 256 MiB is more than
# any current accelerator's last-level cache (mamf-finder; ml-engineering's cache table).
FLUSH_BYTES = 256 << 20


# fp8 as mamf-finder runs it: e4m3 inputs, the product written in the same fp8 type
# (`C = torch.empty(m, n, dtype=dtype)`, `torch._scaled_mm(A, B, scale, scale, out=C)`); the
# OCP type on NVIDIA, the "fnuz" one on ROCm (MI300X), which has no float8_e4m3fn matmul
FP8_TORCH = {"cuda": "float8_e4m3fn", "hip": "float8_e4m3fnuz"}
TORCH_NAMES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}


def torch_dtype_name(torch: Any, dtype: Dtype) -> str:
    """The torch dtype's name for a sweep dtype on this torch build (CUDA or HIP)."""
    if dtype == "fp8":
        return FP8_TORCH["hip" if getattr(torch.version, "hip", None) else "cuda"]
    return TORCH_NAMES[dtype]


def torch_dtype(torch: Any, dtype: Dtype) -> Any:
    return getattr(torch, torch_dtype_name(torch, dtype), None)


class CpuDevice:
    """torch CPU matmul in this process, with its torch threads. Each iteration is also timed on
    the process's CPU clock (`last_cpu_times`): on cores shared with other processes that is the
    time the device worked for us, as a CUDA event's is on a GPU."""

    timer = "perf_counter"
    last_cpu_times: list[float]

    def __init__(self, threads: int | None = None) -> None:
        import torch

        if threads:
            torch.set_num_threads(threads)
        self._torch = torch
        self.name = "cpu"
        self.threads = torch.get_num_threads()

    def times_s(
        self, m: int, n: int, k: int, dtype: Dtype, warmup: int, iters: int, deadline: float
    ) -> list[float]:
        torch = self._torch
        if dtype == "fp8":
            raise ValueError("fp8 matmul needs a GPU (torch._scaled_mm)")
        dt = torch_dtype(torch, dtype)
        a = torch.randn(m, k).to(dt)
        b = torch.randn(n, k).to(dt).t()  # B stored transposed, as training's weights are
        c = torch.empty(m, n, dtype=dt)
        out: list[float] = []
        self.last_cpu_times = []
        with torch.no_grad():
            for _ in range(warmup):  # one at least; no more once the deadline is past (large shapes)
                torch.mm(a, b, out=c)
                if time.monotonic() >= deadline:
                    break
            for _ in range(iters):
                c0, t0 = time.process_time(), time.perf_counter()
                torch.mm(a, b, out=c)
                t1, c1 = time.perf_counter(), time.process_time()
                out.append(t1 - t0)
                self.last_cpu_times.append(c1 - c0)
                if time.monotonic() >= deadline and len(out) >= 3:
                    break
        return out


class CudaDevice:
    """One GPU (cuda:index): events around each product, the L2 flushed before each."""

    timer = "cuda-event"

    def __init__(self, index: int) -> None:
        import torch

        self._torch = torch
        self.index = index
        self.dev = torch.device(f"cuda:{index}")
        torch.cuda.set_device(self.dev)
        self.name = torch.cuda.get_device_name(self.dev)
        self.uuid = str(getattr(torch.cuda.get_device_properties(self.dev), "uuid", "") or "")
        self._flush = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device=self.dev)

    def fp8_supported(self) -> bool:
        torch = self._torch
        major, minor = torch.cuda.get_device_capability(self.dev)
        if getattr(torch.version, "hip", None):  # MI300X (gfx942) and later: the fnuz type
            return hasattr(torch, "_scaled_mm") and torch_dtype(torch, "fp8") is not None
        return (
            hasattr(torch, "_scaled_mm")
            and torch_dtype(torch, "fp8") is not None
            and (major, minor) >= (8, 9)
        )

    def times_s(
        self, m: int, n: int, k: int, dtype: Dtype, warmup: int, iters: int, deadline: float
    ) -> list[float]:
        torch = self._torch
        dev = self.dev
        if dtype == "fp8":
            if not self.fp8_supported():
                raise ValueError("fp8 needs torch._scaled_mm on compute capability 8.9 or newer")
            f8 = torch_dtype(torch, "fp8")
            a = torch.randn(m, k, device=dev).to(f8)
            b = torch.randn(n, k, device=dev).to(f8).t()  # column-major, as required
            c = torch.empty(m, n, dtype=f8, device=dev)  # written in fp8, as mamf-finder does
            one = torch.tensor(1.0, device=dev)

            def run() -> None:
                torch._scaled_mm(a, b, one, one, out_dtype=f8, out=c)
        else:
            dt = torch_dtype(torch, dtype)
            a = torch.randn(m, k, device=dev, dtype=dt)
            b = torch.randn(n, k, device=dev, dtype=dt).t()
            c = torch.empty(m, n, device=dev, dtype=dt)

            def run() -> None:
                torch.mm(a, b, out=c)

        c_rand = torch.randn(m, n, device=dev).to(c.dtype)  # so every product really writes C
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(warmup + iters)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(warmup + iters)]
        done = 0
        with torch.no_grad():
            for i in range(warmup + iters):
                self._flush.zero_()
                c.copy_(c_rand)
                starts[i].record()
                run()
                ends[i].record()
                done = i + 1
                # checking the clock costs nothing on the host while the GPU works ahead
                if i >= warmup + 2 and time.monotonic() >= deadline:
                    break
        torch.cuda.synchronize(dev)
        return [s.elapsed_time(e) / 1e3 for s, e in list(zip(starts, ends))[warmup:done]]


def warm_up(device: CpuDevice | CudaDevice, seconds: float, m: int, dtype: Dtype) -> None:
    """Run one shape for `seconds` before measuring: clocks and caches settle (mamf-finder
    warms up 30 s; a cold GPU scores higher on its first shapes than later)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        device.times_s(m, m, m, dtype, 0, 3, end)
