"""Every GPU path of stoker in one device command of at most 9 minutes, its output kept as
fixtures under --out (default $OUT, the folder the device tool brings back).

    python benchmarks/gpu_check.py --plan                  # the steps and their time shares; runs nothing
    python benchmarks/gpu_check.py                         # on the GPU machine, into $OUT
    python benchmarks/gpu_check.py --out DIR --steps net,compute,summary

The steps (benchmarks/gpucheck/plan.py has the commands and shares): raw nvidia-smi, topology,
NVLink, dmesg and journal output with the driver and CUDA versions; `stoker inventory` with the
host-link copy beside an nvbandwidth-style copy; nccl-tests and fio built from the carried
tarballs; nccl-tests plain, -G 1 and -G 3 beside `stoker net` eager and graph (each with NCCL's
own INFO lines in its nccl-debug/, one file per rank); `stoker compute`
bf16/fp16/fp8 beside a bare mamf-finder-style loop; torch.save and DCP of GPU tensors and
`stoker io`; a short soak with the counters; then one summary table (OUT/summary.txt). A step
past its share is stopped and the next one runs; exit 1 when any step failed.

nccl-tests and fio are found in the checkout's vendor/ (copy ../shared/vendor's tarballs there:
git ignores it via .git/info/exclude, and the device tool's `carry: ["vendor"]` takes it along),
else in ../shared/vendor, else --nccl-tests-tar/--fio-tar; without them their steps are
skipped with a note. Without a CUDA GPU it prints one line and exits 2, writing nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.gpucheck import plan as pl  # noqa: E402
from benchmarks.gpucheck.execute import run_step  # noqa: E402
from benchmarks.gpucheck.summary import table  # noqa: E402

NEEDS = "an NVIDIA GPU that CUDA torch can use (an H100 or newer for fp8)"


def probe() -> dict[str, object] | str:
    """This machine's GPUs as torch sees them, or why there are none."""
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available() or torch.cuda.device_count() < 1:
        return f"torch {torch.__version__} sees none (CUDA build {torch.version.cuda or 'none'})"
    return {
        "gpus": torch.cuda.device_count(),
        "name": torch.cuda.get_device_name(0),
        "compute_capability": list(torch.cuda.get_device_capability(0)),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "nccl": ".".join(map(str, torch.cuda.nccl.version())) if torch.cuda.is_available() else None,
    }


def tarball(given: str | None, name: str) -> Path | None:
    for p in [Path(given)] if given else [ROOT / "vendor" / name, ROOT.parent / "shared" / "vendor" / name]:
        if p.is_file():
            return p.resolve()
    return None


def main(argv: list[str] | None = None, *, gpu_probe=probe, run=None) -> int:  # type: ignore[no-untyped-def]
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--out", default=None, help="where everything goes (default $OUT)")
    p.add_argument("--plan", action="store_true", help="print the steps and their time shares, run nothing")
    p.add_argument("--steps", default=None, help=f"comma list of {','.join(pl.NAMES)} (default all)")
    p.add_argument("--nccl-tests-tar", default=None, help=f"default vendor/{pl.NCCL_TESTS_TAR}")
    p.add_argument("--fio-tar", default=None, help=f"default vendor/{pl.FIO_TAR}")
    p.add_argument("--keep-work", action="store_true", help="keep OUT/work (the builds and scratch files)")
    a = p.parse_args(argv)
    try:
        steps = pl.select(a.steps)
    except ValueError as exc:
        print(f"gpu_check: {exc}", file=sys.stderr)
        return 2
    nt, fio = tarball(a.nccl_tests_tar, pl.NCCL_TESTS_TAR), tarball(a.fio_tar, pl.FIO_TAR)
    carried = [n for n, t in (("nccl-tests", nt), ("fio", fio)) if t is not None]
    if a.plan:
        print("\n".join(pl.plan_lines(steps, carried)))
        return 0
    gpu = gpu_probe()
    if isinstance(gpu, str):
        print(f"gpu_check: needs {NEEDS}; {gpu}: run it on a GPU machine", file=sys.stderr)
        return 2
    where = a.out or os.environ.get("OUT")
    if not where:
        print("gpu_check: give --out DIR (or set OUT): every file it writes goes there", file=sys.stderr)
        return 2
    out = Path(where).resolve()
    out.mkdir(parents=True, exist_ok=True)
    (out / "machine.json").write_text(json.dumps({**gpu, "tarballs": carried}) + "\n")
    cc = gpu.get("compute_capability") or [0, 0]
    ctx = pl.Ctx(
        out=out,
        python=sys.executable,
        gpus=int(gpu["gpus"]),
        cc=(int(cc[0]), int(cc[1])),
        nccl_tests_tar=nt,
        fio_tar=fio,
    )
    bad = []
    for step in steps:
        if step.name == "summary":
            continue
        print(f"gpu_check: {step.name} ({step.share_s} s): {step.what}", flush=True)
        o = run_step(step, ctx, run) if run is not None else run_step(step, ctx)
        print(
            f"gpu_check: {step.name} {o.status} in {o.seconds} s{': ' + o.note if o.note else ''}", flush=True
        )
        if o.status in ("failed", "timeout"):
            bad.append(step.name)
    if not a.keep_work:
        shutil.rmtree(ctx.work, ignore_errors=True)
    rows = table(out)
    (out / "summary.txt").write_text("\n".join(rows) + "\n")
    print("\n".join(rows))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
