"""The host-link copy test (GPU only, thin): pinned H2D, pinned D2H and pageable H2D of one
large buffer, timed with CUDA events, as the CUDA bandwidthTest sample does, reported as the
median of SAMPLES samples after an untimed warm-up copy (nvbandwidth's statistic: the median
of 3 test samples by default).

The GPU is the one nvidia-smi named, found among torch's devices by UUID: nvidia-smi's index
is not torch's device number under CUDA_VISIBLE_DEVICES or the default CUDA_DEVICE_ORDER
(fastest first). Before the pinned buffer is allocated the process is bound to the CPUs of the
GPU's NUMA node, so the pinned pages are near the GPU's root port: a far-socket buffer would
cross the inter-socket link and trip the host-link threshold falsely. Each GPU gets a pinned
buffer of its own, allocated under that binding (fresh_pinned): torch's caching host allocator
would otherwise hand GPU 0's freed pinned block to every later GPU (torch.cuda.empty_cache()
frees device memory only: github.com/pytorch/pytorch/issues/134332), and the GPUs of the other socket would copy
across the inter-socket link.

Covered in CI by a scripted copier (tests/unit/test_inventory.py) and its pure parts here by
tests/unit/test_inventory_copy.py; run on a GPU by benchmarks/gpu_check.py.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ITERS = 5  # copies per sample; one 1 GiB copy at PCIe Gen5 rates takes ~20 ms
SAMPLES = 3  # timed samples per direction; the median is reported

# copier({gpu, uuid, numa_node}, bytes, during) -> {h2d_pinned_GBps, d2h_pinned_GBps,
# h2d_pageable_GBps, ...}; raises CopyError (or any CUDA error) for that GPU alone
Copier = Callable[[dict[str, Any], int, Callable[[], None]], dict[str, Any]]


class CopyError(RuntimeError):
    """This GPU's copy test cannot run (not visible to torch, out of memory, ...)."""


def gbps(nbytes: int, iters: int, elapsed_ms: float) -> float:
    """GB/s (10^9 B/s) of `iters` copies of `nbytes` in `elapsed_ms`."""
    return nbytes * iters / (elapsed_ms / 1e3) / 1e9


def median_gbps(nbytes: int, iters: int, samples_ms: list[float]) -> float:
    """The median over samples of each sample's GB/s (the median of rates, not of times)."""
    return statistics.median(gbps(nbytes, iters, ms) for ms in samples_ms)


def parse_cpulist(text: str) -> set[int]:
    """sysfs cpulist '0-55,112-167' -> {0..55, 112..167}; '' -> set()."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def numa_cpus(node: int | None, sys_root: str | Path = "/sys") -> set[int]:
    """The CPUs of NUMA node `node` (empty when unknown or unreadable)."""
    if node is None or node < 0:
        return set()
    try:
        return parse_cpulist((Path(sys_root) / f"devices/system/node/node{node}/cpulist").read_text())
    except OSError:
        return set()


@contextmanager
def cpu_affinity(cpus: set[int]) -> Iterator[set[int]]:
    """Run the block on `cpus` (those of them this process may use), then restore; a no-op
    when the set is empty or shares nothing with what is allowed. Yields the CPUs used."""
    before = os.sched_getaffinity(0)
    use = cpus & before
    if not use:
        yield set(before)
        return
    os.sched_setaffinity(0, use)
    try:
        yield use
    finally:
        os.sched_setaffinity(0, before)


@contextmanager
def fresh_pinned(torch: Any, nbytes: int) -> Iterator[Any]:
    """A pinned host buffer allocated now, on the CPUs the caller is bound to, and given back
    when the block ends. With `torch._C._host_emptyCache` (torch 2.5 and later, PR 134919) the
    caching host allocator is emptied before and after, so the allocation is a new one; without
    it, pageable memory is first touched here (its pages land on this NUMA node) and pinned in
    place with cudaHostRegister, which no cache holds on to."""
    empty = getattr(torch._C, "_host_emptyCache", None)
    if empty is not None:
        empty()
        buf = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
        try:
            yield buf
        finally:
            del buf
            empty()
        return
    buf = torch.zeros(nbytes, dtype=torch.uint8)  # zeroing touches every page, here
    cudart = torch.cuda.cudart()
    err = cudart.cudaHostRegister(buf.data_ptr(), nbytes, 0)
    if int(getattr(err, "value", err)) != 0:
        raise CopyError(f"cudaHostRegister of {nbytes} bytes failed (error {err})")
    try:
        yield buf
    finally:
        cudart.cudaHostUnregister(buf.data_ptr())


def uuid_to_index(props: list[Any]) -> dict[str, int]:
    """torch device number by the UUID nvidia-smi prints ('GPU-xxxxxxxx-...'): torch's
    device properties carry the UUID without the prefix."""
    out = {}
    for i, p in enumerate(props):
        u = str(getattr(p, "uuid", "") or "")
        if u:
            out[u if u.startswith("GPU-") else f"GPU-{u}"] = i
    return out


def cuda_copier() -> Copier | None:
    """A copier when torch sees CUDA GPUs, else None (the inventory then says it skipped)."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    by_uuid = uuid_to_index([torch.cuda.get_device_properties(i) for i in range(torch.cuda.device_count())])

    def sample(dst: Any, src: Any, during: Callable[[], None] | None) -> float:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(ITERS):
            dst.copy_(src, non_blocking=True)
        end.record()
        if during is not None:
            during()  # the copies are queued and running: the link is under load now
        end.synchronize()
        return float(start.elapsed_time(end))

    def timed(dst: Any, src: Any, during: Callable[[], None] | None) -> list[float]:
        dst.copy_(src, non_blocking=True)  # warm-up: first-touch and driver setup out of the timing
        torch.cuda.synchronize()
        return [sample(dst, src, during if k == 0 else None) for k in range(SAMPLES)]

    def copy(gpu: dict[str, Any], nbytes: int, during: Callable[[], None]) -> dict[str, Any]:
        index = by_uuid.get(str(gpu.get("uuid") or ""))
        if index is None:
            raise CopyError(f"{gpu.get('uuid')} is not among the GPUs torch sees (CUDA_VISIBLE_DEVICES?)")
        with (
            cpu_affinity(numa_cpus(gpu.get("numa_node"))) as cpus,
            torch.cuda.device(index),
            fresh_pinned(torch, nbytes) as pinned,
        ):
            try:
                dev = torch.empty(nbytes, dtype=torch.uint8, device=f"cuda:{index}")
                pageable = torch.ones(nbytes, dtype=torch.uint8)
                out = {
                    "h2d_pinned_GBps": median_gbps(nbytes, ITERS, timed(dev, pinned, during)),
                    "d2h_pinned_GBps": median_gbps(nbytes, ITERS, timed(pinned, dev, None)),
                    "h2d_pageable_GBps": median_gbps(nbytes, ITERS, timed(dev, pageable, None)),
                }
                del dev, pinned, pageable
            finally:
                torch.cuda.empty_cache()
        return {
            **{k: round(v, 2) for k, v in out.items()},
            "copy_statistic": f"median of {SAMPLES} samples of {ITERS} copies",
            "copy_cuda_device": index,
            "copy_cpus": len(cpus),
        }

    return copy
