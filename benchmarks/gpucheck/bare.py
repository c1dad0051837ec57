"""The reference loops gpu_check runs beside stoker's own, on the GPU, written without stoker's
code so that a difference between the two is a finding about stoker:

- matmul: mamf-finder's loop (stas00/ml-engineering compute/accelerator/benchmarks/mamf-finder.py):
  one 8192^3 product per iteration between CUDA events, inputs and output in the dtype (fp8:
  torch._scaled_mm writing float8_e4m3fn), 10 untimed and 50 timed iterations, the median's TFLOPS;
- copy: nvbandwidth's host_to_device / device_to_host memcpy_ce: a 512 MiB pinned buffer, 16
  copies between events per sample, the median of 3 samples, per GPU;
- save: torch.save and torch.distributed.checkpoint of 1 GiB of GPU tensors (64 MiB each), each
  file fsynced, the files removed again.

    python -m benchmarks.gpucheck.bare matmul|copy|save --out FILE.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

MIB = 1 << 20


def matmul() -> dict[str, Any]:
    import torch

    dev = torch.device("cuda:0")
    n = 8192
    out: dict[str, Any] = {"device": torch.cuda.get_device_name(dev), "shape": f"{n}x{n}x{n}", "iters": 50}
    fp8 = "float8_e4m3fnuz" if torch.version.hip else "float8_e4m3fn"
    for name, dt in (("bf16", torch.bfloat16), ("fp16", torch.float16), ("fp8", getattr(torch, fp8, None))):
        try:
            a = torch.randn(n, n, device=dev).to(dt)
            b = torch.randn(n, n, device=dev).to(dt).t()
            c = torch.empty(n, n, device=dev, dtype=dt)
            one = torch.tensor(1.0, device=dev)
            op = (
                partial(torch._scaled_mm, a, b, one, one, out=c)
                if name == "fp8"
                else partial(torch.mm, a, b, out=c)
            )
            ev = [
                (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                for _ in range(60)
            ]
            for s, e in ev:
                s.record()
                op()
                e.record()
            torch.cuda.synchronize(dev)
            ms = statistics.median(s.elapsed_time(e) for s, e in ev[10:])
            out[name] = {"median_tflops": round(2 * n**3 / (ms / 1e3) / 1e12, 2)}
        except Exception as exc:  # a dtype this GPU or torch cannot run is a result, not a crash
            out[name] = {
                "error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}"
            }
    return out


def copy() -> dict[str, Any]:
    import torch

    nbytes, loops, samples = 512 * MIB, 16, 3
    gpus: list[dict[str, Any]] = []
    for i in range(torch.cuda.device_count()):
        with torch.cuda.device(i):
            dev = torch.empty(nbytes, dtype=torch.uint8, device=f"cuda:{i}")
            host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
            row: dict[str, Any] = {"gpu": i, "name": torch.cuda.get_device_name(i)}
            for key, dst, src in (("h2d_GBps", dev, host), ("d2h_GBps", host, dev)):
                dst.copy_(src, non_blocking=True)
                torch.cuda.synchronize()
                rates = []
                for _ in range(samples):
                    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    s.record()
                    for _ in range(loops):
                        dst.copy_(src, non_blocking=True)
                    e.record()
                    e.synchronize()
                    rates.append(nbytes * loops / (s.elapsed_time(e) / 1e3) / 1e9)
                row[key] = round(statistics.median(rates), 2)
            del dev, host
            gpus.append(row)
    return {"method": "nvbandwidth memcpy_ce: 512 MiB, 16 copies per sample, median of 3", "gpus": gpus}


def _fsync_tree(path: Path) -> None:
    for f in [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file()):
        fd = os.open(f, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def save(where: Path) -> dict[str, Any]:
    import torch
    import torch.distributed.checkpoint as dcp

    state = {
        f"layer{i}.weight": torch.randint(0, 256, (64 * MIB,), dtype=torch.uint8, device="cuda:0")
        for i in range(16)
    }
    total = sum(t.numel() for t in state.values())
    out: dict[str, Any] = {"bytes": total, "tensors": len(state), "filesystem_of": str(where)}
    for name in ("torch.save", "dcp"):
        target = where / f"bare-{name}"
        torch.cuda.synchronize()
        start = time.perf_counter()
        try:
            if name == "torch.save":
                torch.save(state, target)
            else:
                dcp.save(state, checkpoint_id=str(target))
            _fsync_tree(target)
            secs = time.perf_counter() - start
            out[name] = {"seconds": round(secs, 3), "GBps": round(total / secs / 1e9, 3)}
        except Exception as exc:  # one way of saving failing costs that figure only
            out[name] = {
                "error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}"
            }
        finally:
            if target.is_dir():
                shutil.rmtree(target, ignore_errors=True)
            elif target.exists():
                target.unlink()
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("what", choices=("matmul", "copy", "save"))
    p.add_argument("--out", required=True)
    a = p.parse_args(argv)
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    import torch

    result = matmul() if a.what == "matmul" else copy() if a.what == "copy" else save(out.parent)
    result["torch"] = torch.__version__
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
