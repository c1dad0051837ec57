"""The host-link copy test (GPU only, thin): pinned H2D, pinned D2H and pageable H2D of one
large buffer, timed with CUDA events, as the CUDA bandwidthTest sample does. Covered in CI by
a scripted fake copier (tests/unit/test_inventory_read.py); unmeasured on GPU in this tree.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

ITERS = 10  # per direction; one 1 GiB copy at PCIe Gen5 rates takes ~20 ms


def gbps(nbytes: int, iters: int, elapsed_ms: float) -> float:
    """GB/s (10^9 B/s) of `iters` copies of `nbytes` in `elapsed_ms`."""
    return nbytes * iters / (elapsed_ms / 1e3) / 1e9


def cuda_copier() -> Callable[[int, int, Callable[[], None]], dict[str, float]] | None:
    """A copier when torch sees CUDA GPUs, else None (the inventory then says it skipped)."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None

    def timed(torch: Any, dst: Any, src: Any, iters: int, during: Callable[[], None] | None) -> float:
        dst.copy_(src, non_blocking=True)  # warm-up: first-touch and driver setup out of the timing
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            dst.copy_(src, non_blocking=True)
        end.record()
        if during is not None:
            during()  # the copies are queued and running: the link is under load now
        end.synchronize()
        return float(start.elapsed_time(end))

    def copy(gpu: int, nbytes: int, during: Callable[[], None]) -> dict[str, float]:
        with torch.cuda.device(gpu):
            dev = torch.empty(nbytes, dtype=torch.uint8, device=f"cuda:{gpu}")
            pinned = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
            pageable = torch.ones(nbytes, dtype=torch.uint8)
            out = {
                "h2d_pinned_GBps": gbps(nbytes, ITERS, timed(torch, dev, pinned, ITERS, during)),
                "d2h_pinned_GBps": gbps(nbytes, ITERS, timed(torch, pinned, dev, ITERS, None)),
                "h2d_pageable_GBps": gbps(nbytes, ITERS, timed(torch, dev, pageable, ITERS, None)),
            }
            del dev, pinned, pageable
            torch.cuda.empty_cache()
        return {k: round(v, 2) for k, v in out.items()}

    return copy
