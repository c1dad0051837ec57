"""`stoker compute`'s best figure against a bare torch.mm loop at the same shape, side by side.

Each round runs `stoker compute` (a child process, as a user runs it) and reads the best shape
and its figures from compute.jsonl, then times a bare loop of `torch.mm(a, b, out=c)` at that
shape in this process, right after it. The ratio is stoker's best-shape median TFLOPS over the
bare loop's median-iteration TFLOPS (1.0: stoker found the maximum the loop reaches there); on a
CPU the same ratio on the process's CPU clock (stoker's `cpu_mean_tflops`) is printed beside it,
the fair one on a shared machine, where the wall clock of two windows a minute apart differs 2x. Rounds alternate, so both sides share the machine's
load of that moment; the median over rounds is the figure.

    .venv/bin/python benchmarks/compute_bench.py --rounds 3 --profile quick --dtype fp32
    .venv/bin/python benchmarks/compute_bench.py --device cuda --profile standard --dtype bf16

On a GPU the bare loop times CUDA events around each product as the sweep does (L2 not flushed:
the bare loop is what a user would write). `--bare-shape 2048x2048x2048` sets stoker's best against
the bare loop at a fixed shape instead (did the sweep find the maximum, wherever it lies?);
`--tree DIR` runs another checkout's stoker (e.g. an older revision) on the same rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def run_stoker(profile: str, dtype: str, device: str, threads: int | None, tree: Path) -> dict[str, Any]:
    """One `stoker compute` run; the record of device 0 for `dtype`."""
    with tempfile.TemporaryDirectory(prefix="compute-bench-") as out:
        argv = [sys.executable, "-m", "launchers.cli", "compute", "--out", out, "--profile", profile]
        argv += ["--dtypes", dtype, "--device", device]
        if threads:
            argv += ["--threads", str(threads)]
        env = {**os.environ, "PYTHONPATH": str(tree)}
        subprocess.run(
            argv, cwd=tree, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        recs = [json.loads(ln) for ln in Path(out, "compute.jsonl").read_text().splitlines() if ln.strip()]
    rec = next(r for r in recs if r.get("dtype") == dtype and not r.get("error"))
    return rec


def bare_loop(
    shape: str, dtype: str, device: str, iters: int, threads: int | None
) -> tuple[float, float | None]:
    """(median-iteration TFLOPS on the wall clock, mean TFLOPS on the process's CPU clock: CPU only)
    of a bare torch.mm loop at `shape`."""
    import torch

    if threads:
        torch.set_num_threads(threads)
    m, n, k = (int(x) for x in shape.split("x"))
    dt = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
    dev = torch.device("cuda:0" if device == "cuda" else "cpu")
    a = torch.randn(m, k, device=dev).to(dt)
    b = torch.randn(n, k, device=dev).to(dt).t()
    c = torch.empty(m, n, device=dev, dtype=dt)
    flop = 2.0 * m * n * k
    times: list[float] = []
    cpu_times: list[float] = []
    with torch.no_grad():
        for _ in range(2):
            torch.mm(a, b, out=c)  # warm-up
        for _ in range(iters):
            if device == "cuda":
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                torch.mm(a, b, out=c)
                e.record()
                torch.cuda.synchronize()
                times.append(s.elapsed_time(e) / 1e3)
            else:
                c0, t0 = time.process_time(), time.perf_counter()
                torch.mm(a, b, out=c)
                times.append(time.perf_counter() - t0)
                cpu_times.append(time.process_time() - c0)
    cpu = flop / statistics.fmean(cpu_times) / 1e12 if cpu_times else None
    return flop / statistics.median(times) / 1e12, cpu


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--profile", default="quick", choices=("quick", "standard", "full"))
    ap.add_argument("--dtype", default="fp32", choices=("fp32", "bf16", "fp16"))
    ap.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    ap.add_argument("--iters", type=int, default=20, help="bare-loop iterations per round")
    ap.add_argument("--threads", type=int, help="CPU: torch threads on both sides (default torch's)")
    ap.add_argument("--tree", type=Path, default=REPO, help="the stoker tree to run (default this one)")
    ap.add_argument(
        "--bare-shape", metavar="MxNxK", help="time the bare loop at this shape instead of stoker's best"
    )
    args = ap.parse_args()
    rows = []
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"stoker tree: {args.tree}; bare loop at {args.bare_shape or 'stoker best shape'}")
    print(
        "| round | stoker best shape | bare shape | stoker median TFLOPS | bare median | ratio "
        "| stoker CPU-clock mean | bare CPU-clock mean | ratio |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for i in range(1, args.rounds + 1):
        rec = run_stoker(args.profile, args.dtype, args.device, args.threads, args.tree.resolve())
        shape = args.bare_shape or rec["best_shape"]
        bare_med, bare_cpu = bare_loop(shape, args.dtype, args.device, args.iters, args.threads)
        med, cpu = rec["median_tflops"], rec.get("cpu_mean_tflops")
        cpu_ratio = cpu / bare_cpu if cpu and bare_cpu else None
        rows.append((med / bare_med, cpu_ratio))
        print(
            f"| {i} | {rec['best_shape']} | {shape} | {med:.4g} | {bare_med:.4g} | {med / bare_med:.3f} | "
            f"{cpu or 0:.4g} | {bare_cpu or 0:.4g} | {cpu_ratio or 0:.3f} |",
            flush=True,
        )
    med_ratio = statistics.median(r[0] for r in rows)
    cpus = [r[1] for r in rows if r[1]]
    mean_ratio = statistics.median(cpus) if cpus else float("nan")
    print(
        f"median over {len(rows)} rounds: stoker / bare = {med_ratio:.3f} (median iteration, wall clock), "
        f"{mean_ratio:.3f} (mean, process CPU clock); load average after: {os.getloadavg()[0]:.1f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
