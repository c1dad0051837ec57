"""Real work and stoker's prediction of it, side by side, on the namespaced test bed
(tests/harness/netns.py: shaped links) and a throttled loop device (tests/harness/blockdev.py).
Root only. Used by benchmarks/validate_model.py (the table) and tests/validation/ (the CI bounds).

The prediction of each component comes only from stoker's own records of the same bed
(`stoker net`, `stoker io` run there first) fed through reports.judging.judge / model, with
the workload's `compute_s` set to the compute time the real job measured, exactly as a user
would write it from a profiler. The real job's step or wait times never reach the model.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from reports.judging.workload.workload import Checkpoint, Dataloader, Workload
from reports.shared.findings import ModelRow
from reports.table.read import RecordSet, read_records
from tests.harness.blockdev import start_in_cgroup
from tests.harness.netns import NetnsCluster
from tests.unit.recordgen import judge_records
from tests.validation.io_worker import make_samples

__all__ = ["make_samples"]  # the sample files of the real dataloader, made by the harness

REPO = Path(__file__).resolve().parent.parent.parent
PY = sys.executable
STOKER = [PY, "-m", "launchers.cli"]
ENV = {"PYTHONPATH": str(REPO)}
# DDP's buckets are 1..25 MiB; FSDP's units here are one 512 x 512 layer, about 1 MiB
NET_SIZES = ("256K", "32M")
CKPT_BYTES_PER_PARAM = 12.0  # fp32 weights + Adam's exp_avg and exp_avg_sq


@dataclass(frozen=True, kw_only=True, slots=True)
class Row:
    """One line of the validation table."""

    component: str  # DDP | FSDP | checkpoint | dataloader
    regime: str
    real: float
    predicted: float
    unit: str  # "idle" (a share of wall time) or "s" (a stall)
    bound: float  # relative error allowed
    detail: str = ""
    abs_bound: float = 0.0  # absolute error allowed instead, where the real figure is near 0 (a fed regime)

    @property
    def error(self) -> float:
        return (self.predicted - self.real) / self.real if self.real else float("inf")

    @property
    def ok(self) -> bool:
        return abs(self.error) <= self.bound or abs(self.predicted - self.real) <= self.abs_bound


def _fail(what: str, results: Sequence[tuple[int, str, str]]) -> None:
    for rc, out, err in results:
        if rc != 0:
            raise RuntimeError(f"{what}: rc {rc}\n{out[-2000:]}\n{err[-2000:]}")


def _json_lines(text: str) -> list[dict]:
    return [json.loads(x) for x in text.splitlines() if x.startswith("{")]


# -- network: stoker net, then real DDP / FSDP ---------------------------------------
def stoker_net(
    c: NetnsCluster, out: Path, port: int, iters: int = 3, ops: str = "all_reduce,all_gather,reduce_scatter"
) -> RecordSet:
    """stoker's own collective sweep across the nodes, one rank per node (as the job runs)."""
    args = [
        "-m",
        "launchers.cli",
        "net",
        "--ops",
        ops,
        "--min-bytes",
        NET_SIZES[0],
        "--max-bytes",
        NET_SIZES[1],
        "--step-factor",
        "2",
        "--iters",
        str(iters),
        "--warmup",
        "1",
        "--backend",
        "gloo",
        "--timeout",
        "240",
        "--scopes",
        "inter-node",
        "--out",
        str(out),
    ]
    _fail("stoker net", c.torchrun(nproc=1, port=port, module_args=args, timeout=300, env=ENV))
    return read_records(out)


@dataclass(frozen=True, kw_only=True, slots=True)
class Training:
    compute_s: float  # median over steps of the slowest rank's no-communication step
    step_s: float  # median over steps of the slowest rank's real step
    idle: float  # median over adjacent (compute, real) step pairs of 1 - compute / step
    params: int
    backward_s: tuple[float, float]  # (no_sync, sync) median backward compute: forward end to last gradient
    compute_cpu_s: float = (
        0.0  # as compute_s, on the training thread's CPU clock (the step's work, however shared)
    )


def train(
    c: NetnsCluster,
    port: int,
    *,
    batch: int,
    bucket_mb: float = 25.0,
    fsdp: bool = False,
    steps: int = 8,
    width: int = 512,
    depth: int = 12,
) -> Training:
    """A real training run. The machine is shared, so compute time drifts: each real step is
    compared with the compute-only step just before it, and the median of those ratios kept."""
    args = [
        "-m",
        "tests.validation.ddp_worker",
        "--batch",
        str(batch),
        "--bucket-mb",
        str(bucket_mb),
        "--steps",
        str(steps),
        "--width",
        str(width),
        "--depth",
        str(depth),
        *(["--fsdp"] if fsdp else []),
    ]
    return training_of(c.launch(1, port, args, timeout=300, env=ENV), steps)


# what libstdc++ prints when torch's process group is torn down mid-exception at the rank's exit
# (SIGABRT, rc -6): seen once in CI (2026-11-29) after rank 0 had printed all its steps
TEARDOWN_ABORT = "terminate called without an active exception"


def _measured_then_aborted(rc: int, out: str, err: str, steps: int) -> bool:
    """A rank that printed every step's figures and then died in teardown: its run is measured."""
    lines = _json_lines(out)
    return rc == -6 and TEARDOWN_ABORT in err and bool(lines) and len(lines[-1].get("step_s", [])) == steps


def training_of(results: Sequence[tuple[int, str, str]], steps: int) -> Training:
    """The figures of one run from its ranks' (returncode, stdout, stderr)."""
    _fail("training", [(0 if _measured_then_aborted(*r, steps) else r[0], r[1], r[2]) for r in results])
    ranks = [_json_lines(out)[-1] for _, out, _ in results]
    compute = [max(r["compute_s"][i] for r in ranks) for i in range(steps)]
    step = [max(r["step_s"][i] for r in ranks) for i in range(steps)]

    def backward(key: str) -> float:
        rows = [r[key] for r in ranks if r[key]]
        return (
            statistics.median(max(p[i][1] - p[i][0] for p in rows) for i in range(len(rows[0])))
            if rows
            else 0.0
        )

    return Training(
        compute_s=statistics.median(compute),
        step_s=statistics.median(step),
        idle=statistics.median(max(0.0, 1 - cc / s) for cc, s in zip(compute, step)),
        params=ranks[0]["params"],
        backward_s=(backward("phases_nosync"), backward("phases_sync")),
        compute_cpu_s=statistics.median(
            max(r.get("compute_cpu_s", [0.0] * steps)[i] for r in ranks) for i in range(steps)
        ),
    )


def _model_rows(records: RecordSet, w: Workload) -> list[ModelRow]:
    return judge_records(records, None, w).model


def predict_training(
    records: RecordSet,
    t: Training,
    *,
    nodes: int,
    bucket_mb: float = 25.0,
    fsdp: bool = False,
    depth: int = 12,
) -> float:
    """The model's idle share of this training job, from stoker's records and the measured
    compute time (fp32 on the wire: 4 bytes per element)."""
    w = Workload(
        name="validate",
        params=float(t.params),
        gpus=nodes,
        gpus_per_node=1,
        data="fsdp" if fsdp else "ddp",
        grad_bytes=4.0,
        bucket_bytes=bucket_mb * 2**20,
        compute_s=t.compute_s,
        layers=depth,
        idle_budget=0.05,
    )
    (row,) = _model_rows(records, w)
    assert row.status != "no_reference", row.extra
    return row.idle_share


# -- storage: stoker io, then a real checkpoint / dataloader ------------------------
def _in_cgroup(procs: Path | None):  # type: ignore[no-untyped-def]
    return None if procs is None else (lambda: start_in_cgroup(procs))


def stoker_io(path: Path, out: Path, cgroup: Path | None, args: Sequence[str]) -> RecordSet:
    p = subprocess.run(
        [*STOKER, "io", "--path", str(path), "--out", str(out), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=_in_cgroup(cgroup),
    )
    if p.returncode != 0:
        raise RuntimeError(f"stoker io: rc {p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return read_records(out)


def _worker(args: Sequence[str], cgroup: Path | None) -> dict:
    p = subprocess.run(
        [PY, "-m", "tests.validation.io_worker", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=_in_cgroup(cgroup),
    )
    if p.returncode != 0:
        raise RuntimeError(f"io_worker {args[0]}: rc {p.returncode}\n{p.stderr[-2000:]}")
    return _json_lines(p.stdout)[-1]


def checkpoint_params(width: int, depth: int) -> int:
    return depth * (width * width + width)


def stoker_checkpoint(
    path: Path, out: Path, cgroup: Path | None, nbytes: int, runtime_s: int | None = None
) -> RecordSet:
    """stoker's checkpoint test on `path`: fio and the torch.save / DCP records, one writer;
    fio's timed runs `runtime_s` long (None: stoker io's default)."""
    args = ["--workloads", "checkpoint", "--ckpt-bytes", str(nbytes), "--writers", "1"]
    return stoker_io(path, out, cgroup, args + (["--runtime", str(runtime_s)] if runtime_s else []))


def real_checkpoint(path: Path, cgroup: Path | None, width: int, depth: int, repeats: int = 1) -> dict:
    """{"torch.save": [s, ...], "torch.dcp": [s, ...], "bytes": {backend: size}}"""
    return _worker(
        ["ckpt", "--dir", str(path), "--width", str(width), "--depth", str(depth), "--repeats", str(repeats)],
        cgroup,
    )


def predict_checkpoint(
    records: RecordSet, path: Path, nbytes: int, fmt: str = "torch.save"
) -> tuple[float, str]:
    """(the model's stall in seconds for one sync checkpoint of `nbytes` made by a `fmt` save
    (torch.save | dcp), the record it used)."""
    w = Workload(
        name="validate",
        params=nbytes / CKPT_BYTES_PER_PARAM,
        gpus=1,
        gpus_per_node=1,
        checkpoint=Checkpoint(
            interval_minutes=60, bytes_per_param=CKPT_BYTES_PER_PARAM, path=str(path), format=fmt
        ),
    )
    (row,) = [r for r in _model_rows(records, w) if r.check.startswith("checkpoint")]
    return row.extra["exposed_s"], row.extra["note"]


def stoker_dataloader(
    path: Path, out: Path, cgroup: Path | None, sample_bytes: int, runtime_s: int = 4
) -> RecordSet:
    return stoker_io(
        path,
        out,
        cgroup,
        [
            "--workloads",
            "dataloader",
            "--workers",
            "2",
            "--sample-bytes",
            str(sample_bytes),
            "--files-per-worker",
            "8",
            "--file-bytes",
            str(4 * sample_bytes),
            "--runtime",
            str(runtime_s),
        ],
    )


def real_dataloader(
    path: Path, cgroup: Path | None, *, batch: int, compute_s: float, steps: int
) -> tuple[float, float]:
    """(idle share, compute seconds per step) of a real DataLoader loop over the files in path."""
    r = _worker(
        [
            "loader",
            "--dir",
            str(path),
            "--batch",
            str(batch),
            "--compute-s",
            str(compute_s),
            "--steps",
            str(steps),
        ],
        cgroup,
    )
    wait, comp = sum(r["wait_s"]), sum(r["compute_s"])
    return wait / (wait + comp), comp / len(r["compute_s"])


def predict_dataloader(
    records: RecordSet, path: Path, *, batch: int, sample_bytes: int, compute_s: float
) -> float:
    """The model's dataloader idle share: one GPU consuming `batch` samples per `compute_s`."""
    w = Workload(
        name="validate",
        gpus=1,
        gpus_per_node=1,
        dataloader=Dataloader(
            name="validate",
            bytes_per_sample=float(sample_bytes),
            samples_per_s_per_gpu=batch / compute_s,
            batch=batch,
            path=str(path),
        ),
    )
    (row,) = _model_rows(records, w)
    assert row.status != "no_reference", row.extra
    return row.idle_share
