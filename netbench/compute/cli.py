"""`stoker compute`: every device of this node at once, one process each (as training runs
them, so a shared power or thermal budget shows), a matmul sweep per dtype; one
`kind: "compute"` record per device and dtype appended to DIR/compute.jsonl.

The parent starts one worker per device (`--worker I`, this same command), reads nvidia-smi while
they run, and writes the records; each worker prints its progress on stderr and, after each
dtype, its result so far as one JSON line on stdout: a worker stopped at the limit keeps the
dtypes it finished. Each dtype's record carries the nvidia-smi readings taken while that dtype
ran (its start and end on the node's monotonic clock), not the idle time before or another's.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from functools import partial
from pathlib import Path
from typing import Any, cast

from netbench.compute import sweep as sw
from reports.shared.errors import UsageError
from reports.shared.records import COMPUTE_FILE, SCHEMA, RecordWriter, new_run_id, utc_now

HELP = "accelerator appetite: matmul TFLOPS per GPU (every GPU at once), or CPU matmul without GPUs"
WORKER_GRACE_S = 120  # torch import, CUDA context, allocation: beyond the sweep's own budget


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", metavar="DIR", help="results directory (default ./stoker-results/<run_id>)")
    parser.add_argument(
        "--profile",
        choices=tuple(sw.BUDGET_S),
        help="quick ~20 s, standard ~1 min, full the whole grid (default standard with GPUs, quick without)",
    )
    parser.add_argument(
        "--budget", type=float, metavar="S", help="seconds per device, all dtypes (overrides the profile)"
    )
    parser.add_argument(
        "--dtypes",
        help="comma-separated, of fp32,bf16,fp16,fp8 (default: the catalog's for the GPU; fp32,bf16 on CPU)",
    )
    parser.add_argument(
        "--device", choices=("auto", "cuda", "cpu"), default="auto", help="default: cuda when torch sees GPUs"
    )
    parser.add_argument(
        "--nproc", type=int, help="CPU only: processes at once (default 1; GPUs: one per GPU)"
    )
    parser.add_argument("--threads", type=int, help="CPU only: torch threads per process (default torch's)")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)


def _dtypes(text: str | None) -> tuple[sw.Dtype, ...] | None:
    if text is None:
        return None
    names = tuple(x.strip().lower() for x in text.split(",") if x.strip())
    bad = [n for n in names if n not in sw.DTYPES]
    if bad or not names:
        raise UsageError(f"--dtypes {text!r}: use names of {','.join(sw.DTYPES)}, e.g. --dtypes bf16,fp16")
    return cast(tuple[sw.Dtype, ...], names)


def _check(args: argparse.Namespace) -> None:
    _dtypes(args.dtypes)
    for name in ("budget", "nproc", "threads"):
        v = getattr(args, name)
        if v is not None and v <= 0:
            raise UsageError(f"--{name} must be positive, got {v}")


def gpu_dtypes(device_name: str) -> tuple[sw.Dtype, ...]:
    """The catalog's dtypes for this GPU among bf16, fp16, fp8; bf16, fp16 when it is unknown."""
    from reports.shared.catalog import match_gpu_name

    acc = match_gpu_name(device_name)
    listed = tuple(d for d in ("bf16", "fp16", "fp8") if acc and d in acc.tflops)
    return cast(tuple[sw.Dtype, ...], listed or ("bf16", "fp16"))


def worker(args: argparse.Namespace) -> int:
    """Sweep one device; progress on stderr, the result as one JSON line on stdout."""
    from netbench.compute.devices import CpuDevice, CudaDevice, warm_up

    gpu = args.device == "cuda"
    dev: CpuDevice | CudaDevice = CudaDevice(args.worker) if gpu else CpuDevice(args.threads)
    dtypes = _dtypes(args.dtypes) or (gpu_dtypes(dev.name) if gpu else ("fp32", "bf16"))
    plan = sw.plan(args.profile, dtypes, gpu=gpu, budget_s=args.budget)
    who = f"gpu{args.worker}" if gpu else f"cpu{args.worker}"

    def say(line: str) -> None:
        print(f"compute {who}: {line}", file=sys.stderr, flush=True)

    say(
        f"{dev.name}: warm-up {plan.device_warmup_s:.0f} s, then {len(plan.grid)} shapes x {','.join(dtypes)}"
    )
    warm_up(dev, plan.device_warmup_s, plan.sizes[-1], dtypes[0] if dtypes[0] != "fp8" else "bf16")
    done: list[dict[str, Any]] = []
    for d in dtypes:
        start = time.monotonic()
        r = sw.sweep_dtype(dev, d, plan.grid, plan.warmup, plan.iters, plan.budget_s, progress=say)
        done.append(dtype_result(r, start, time.monotonic()))
        print(json.dumps(worker_output(dev, args.worker, gpu, plan, done)), flush=True)
    return 0


def dtype_result(r: sw.DtypeResult, start: float, end: float) -> dict[str, Any]:
    """One dtype's part of a worker's output; `window` is when it ran (time.monotonic())."""
    return {
        "dtype": r.dtype,
        "best_shape": r.best.shape if r.best else None,
        "median_tflops": r.best.median_tflops if r.best else None,
        "max_tflops": r.max_tflops,
        "mean_tflops": r.mean_tflops,
        "cpu_mean_tflops": r.cpu_mean_tflops,
        "shapes_tried": len(r.shapes),
        "elapsed_s": round(r.elapsed_s, 2),
        "error": r.error,
        "shapes": [asdict(s) for s in r.shapes],
        "window": [start, end],
    }


def worker_output(
    dev: Any, index: int, gpu: bool, plan: sw.Plan, done: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "device": f"cuda:{index}" if gpu else "cpu",
        "gpu": index if gpu else None,
        "proc": index,
        "name": dev.name,
        "uuid": getattr(dev, "uuid", None),
        "timer": dev.timer,
        "threads": getattr(dev, "threads", None),
        "warmup": plan.warmup,
        "iters": plan.iters,
        "l2_flushed": gpu,
        "results": done,
    }


def last_result(text: str | None) -> dict[str, Any] | None:
    """A worker's last complete JSON line (its result so far); None when it wrote none. A
    worker killed while writing leaves a cut line, which is passed over."""
    for line in reversed((text or "").splitlines()):
        if line.startswith("{"):
            try:
                out = json.loads(line)
            except ValueError:
                continue
            if isinstance(out, dict):
                return out
    return None


def _gpu_count() -> int:
    try:
        import torch

        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    except ImportError:
        return 0


def records(
    result: dict[str, Any],
    head: dict[str, Any],
    smi: dict[str, Any],
    profile: str,
    smi_window: Callable[[float, float], dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """The compute records of one worker's result (pure). With `smi_window`, each dtype's
    nvidia-smi figures are those of the readings inside its window; else `smi` for every one."""
    base = {
        k: result.get(k)
        for k in (
            "device",
            "gpu",
            "proc",
            "name",
            "uuid",
            "timer",
            "threads",
            "warmup",
            "iters",
            "l2_flushed",
        )
    }
    if smi.get("uuid") and not base.get("uuid"):
        base["uuid"] = smi["uuid"]
    out = []
    for r in result["results"]:
        shapes = r.get("shapes", [])
        window = r.get("window")
        readings = smi_window(window[0], window[1]) if smi_window is not None and window else smi
        out.append(
            {
                **head,
                **base,
                "dtype": r["dtype"],
                "best_shape": r["best_shape"],
                "median_tflops": None if r["median_tflops"] is None else round(r["median_tflops"], 4),
                "max_tflops": None if r["max_tflops"] is None else round(r["max_tflops"], 4),
                "mean_tflops": None if r.get("mean_tflops") is None else round(r["mean_tflops"], 4),
                **({"cpu_mean_tflops": round(r["cpu_mean_tflops"], 4)} if r.get("cpu_mean_tflops") else {}),
                "shapes_tried": r["shapes_tried"],
                "elapsed_s": r["elapsed_s"],
                "profile": profile,
                **({"error": r["error"]} if r["error"] else {}),
                **{k: v for k, v in readings.items() if k != "uuid"},
                # every shape's figures: the independent check and a later look at the curve
                "shapes": [[s["m"], s["n"], s["k"], round(s["median_tflops"], 4)] for s in shapes],
            }
        )
    return out


def main(args: argparse.Namespace) -> int:
    _check(args)
    gpus = _gpu_count() if args.device in ("auto", "cuda") else 0
    if args.device == "cuda" and gpus == 0 and args.worker is None:
        raise UsageError("--device cuda: torch sees no CUDA GPU here; use --device cpu or auto")
    device = "cuda" if gpus and args.device != "cpu" else "cpu"
    args.profile = args.profile or ("standard" if device == "cuda" else "quick")
    if args.worker is not None:
        args.device = device
        return worker(args)
    if device == "cpu" and args.nproc is None:
        args.nproc = 1
    n = gpus if device == "cuda" else args.nproc
    run_id = new_run_id()
    out = Path(args.out or f"stoker-results/{run_id}")
    host = os.environ.get("STOKER_HOSTNAME", "").strip() or socket.gethostname()
    budget = args.budget if args.budget is not None else sw.BUDGET_S[args.profile]
    limit = (budget if budget is not None else sw.FULL_LIMIT_S) + WORKER_GRACE_S
    print(
        f"compute {host}: {n} {'GPU' if device == 'cuda' else 'CPU process'}(es) at once, profile {args.profile}, ~{budget or 'whole sweep'} s each"
    )
    argv = [sys.executable, "-m", "launchers.cli", "compute", "--device", device, "--profile", args.profile]
    for name in ("budget", "dtypes", "threads"):
        if getattr(args, name) is not None:
            argv += [f"--{name}", str(getattr(args, name))]
    env = dict(os.environ)
    if device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""  # a CPU worker must not take a GPU context
    from netbench.compute.smi import Sampler

    sampler = Sampler() if device == "cuda" else None
    procs = [
        subprocess.Popen([*argv, "--worker", str(i)], stdout=subprocess.PIPE, text=True, env=env)
        for i in range(n)
    ]
    outputs: list[str | None] = []
    cut: list[int] = []
    deadline = time.monotonic() + limit
    try:
        if sampler is not None:
            sampler.read_once()
            sampler.__enter__()
        for p in procs:
            try:
                text, _ = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                text, _ = p.communicate()
            if p.returncode != 0:  # crashed or stopped at the limit: the dtypes it finished stay
                cut.append(len(outputs))
            outputs.append(text)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        if sampler is not None:
            sampler.__exit__(None, None, None)
    head = {"schema": SCHEMA, "kind": "compute", "run_id": run_id, "ts": utc_now(), "host": host}
    failed = []
    with RecordWriter(out / COMPUTE_FILE) as w:
        for i, printed in enumerate(outputs):
            result = last_result(printed)
            if result is None:
                failed.append(i)
                continue
            smi: dict[str, Any] = {}
            window = None
            if sampler is not None:  # name the GPU as nvidia-smi does, whatever torch's numbering
                result["gpu"], smi = sampler.match(result.get("uuid"), i)
                window = partial(sampler.window, result["gpu"])
            for rec in records(result, head, smi, args.profile, window):
                w.write(rec)
                best = rec["median_tflops"]
                where = f"gpu {i}" if device == "cuda" else f"cpu process {i}"
                shown = (
                    f"{best:.4g} TFLOPS median at {rec['best_shape']} (max {rec['max_tflops']:.4g})"
                    if best
                    else rec.get("error", "not measured")
                )
                print(f"compute {host} {where} {rec['dtype']}: {shown}")
    print(f"compute {host}: records -> {out / COMPUTE_FILE}")
    for i in cut:
        if i not in failed:
            print(
                f"compute {host}: device {i} stopped early (crashed or past {limit:.0f} s); "
                "its records are the dtypes it finished",
                file=sys.stderr,
            )
    if failed:
        print(
            f"compute {host}: no result from device(s) {', '.join(map(str, failed))} (crashed or past {limit:.0f} s)",
            file=sys.stderr,
        )
        return 1
    return 1 if cut else 0
