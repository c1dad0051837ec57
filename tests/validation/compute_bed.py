"""The model's compute time from `stoker compute` records vs the real training step's.

`stoker compute` runs on the bed's CPU as the training does: one process per rank at once, one
torch thread each (ddp_worker sets torch.set_num_threads(1)), fp32. The prediction goes through
reports.judging.judge with a workload that has no compute_s, so the model takes the measured
appetite: C = 6 x params x tokens / (ranks x measured TFLOPS x matmul_efficiency). The real
figure is the bed's compute-only step (no_sync: forward, backward, optimizer).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from reports.judging.workload.workload import Workload
from reports.table.read import RecordSet, read_records
from tests.unit.recordgen import judge_records
from tests.validation.bed import ENV, REPO, STOKER, Training, training_of

# The share of the matmul ceiling this MLP's step reaches, as a user sets `matmul_efficiency`
# from a job whose MFU was measured: calibrated on batch 1200 (the median of 5 paired rounds of
# `stoker compute` and the step on 2026-11-24: 0.740, 0.632, 0.770, 0.666, 0.729 -> 0.73), and
# checked on batch 4000, out of that sample (benchmarks/validate_model.py --components compute). Not 1.0: beside its
# GEMMs the step runs 12 ReLUs and bias adds forward and back, the loss and the SGD update over
# 3.15 M parameters, memory-bound work that is ~27% of its CPU time at width 512.
MLP_MATMUL_EFFICIENCY = 0.73


def stoker_compute(out: Path, ranks: int, budget_s: float = 12.0) -> RecordSet:
    p = subprocess.run(
        [
            *STOKER,
            "compute",
            "--device",
            "cpu",
            "--nproc",
            str(ranks),
            "--threads",
            "1",
            "--dtypes",
            "fp32",
            "--budget",
            str(budget_s),
            "--out",
            str(out),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if p.returncode != 0:
        raise RuntimeError(f"stoker compute: rc {p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return read_records(out)


def train_local(
    port: int, *, batch: int, ranks: int = 2, steps: int = 6, width: int = 512, depth: int = 12
) -> Training:
    """The bed's DDP worker (tests/validation/ddp_worker.py) as `ranks` gloo ranks on loopback:
    its compute-only step (no_sync) never touches the network, so no namespaces are needed, only
    the same processes on the same cores."""
    argv = [sys.executable, "-m", "tests.validation.ddp_worker", "--batch", str(batch), "--steps", str(steps)]
    argv += ["--width", str(width), "--depth", str(depth)]
    base = {
        **os.environ,
        **ENV,
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(port),
        "WORLD_SIZE": str(ranks),
    }
    procs = [
        subprocess.Popen(
            argv,
            cwd=REPO,
            env={**base, "RANK": str(r), "LOCAL_RANK": str(r), "LOCAL_WORLD_SIZE": str(ranks)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for r in range(ranks)
    ]
    results = []
    for p in procs:
        try:
            out, err = p.communicate(timeout=600)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
        results.append((p.returncode, out, err))
    return training_of(results, steps)


def predict_compute(records: RecordSet, *, params: int, ranks: int, batch: int) -> tuple[float, str]:
    """(predicted compute seconds of one step, the figure's description) from compute records."""
    w = Workload(
        name="validate-compute",
        params=float(params),
        gpus=ranks,
        gpus_per_node=1,
        data="ddp",
        grad_bytes=4.0,
        global_batch_tokens=float(batch * ranks),  # an MLP's "tokens": samples, batch per rank
        dtype="fp32",
        accelerator="cpu",  # the bed trains on CPU processes: their matmul is the one it runs on
        matmul_efficiency=MLP_MATMUL_EFFICIENCY,
    )
    s = judge_records(records, None, w).model_summary
    assert s.get("compute_figure") == "measured", s
    return float(s["compute_s"]), str(s["compute_from"])
