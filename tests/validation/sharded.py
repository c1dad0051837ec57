"""A real sharded checkpoint (every rank saves its shard at once) against the model's save
time from stoker's own records of the same device (reports/judging/storage/ckpt_save.py). Root only:
the device is a loop device throttled by a blkio cgroup (tests/harness/blockdev.py), so the
device, not this shared machine's other work, sets the time of both."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
from pathlib import Path

from reports.judging.workload.workload import Checkpoint, Workload
from reports.table.read import RecordSet
from tests.harness.blockdev import start_in_cgroup
from tests.unit.recordgen import judge_records
from tests.validation import bed


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def real_sharded_save(
    path: Path, cgroup: Path | None, backend: str, ranks: int = 2, width: int = 1024, depth: int = 8
) -> tuple[float, int]:
    """(seconds of one save by `ranks` processes at once, the bytes they wrote)."""
    work = path / "validate-sharded"
    work.mkdir(exist_ok=True)
    port = str(_free_port())
    argv = [bed.PY, "-m", "tests.validation.sharded_worker", "--dir", str(work), "--backend", backend]
    argv += ["--width", str(width), "--depth", str(depth)]
    env = {**bed.ENV, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port, "WORLD_SIZE": str(ranks)}
    try:
        kids = [
            subprocess.Popen(
                argv,
                cwd=bed.REPO,
                env={**env, "RANK": str(r)},
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                preexec_fn=None if cgroup is None else (lambda: start_in_cgroup(cgroup)),
            )
            for r in range(ranks)
        ]
        outs = [k.communicate(timeout=300) for k in kids]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for k, (_, err) in zip(kids, outs):
        if k.returncode != 0:
            raise RuntimeError(f"sharded_worker: rc {k.returncode}\n{err[-2000:]}")
    got = json.loads(outs[0][0].strip().splitlines()[-1])
    return float(got["seconds"]), int(got["bytes"])


def stoker_records(path: Path, out: Path, cgroup: Path | None, shard: int, writers: int) -> RecordSet:
    """stoker io's checkpoint test with `writers` per node: fio, and torch.save / DCP saved by
    one process and by `writers` at once."""
    args = ["--workloads", "checkpoint", "--ckpt-bytes", str(shard), "--writers", str(writers)]
    return bed.stoker_io(path, out, cgroup, [*args, "--runtime", "3"])


def predict(records: RecordSet, path: Path, nbytes: int, fmt: str, ranks: int) -> tuple[float, str]:
    """(the model's save time for `nbytes` saved by `ranks` ranks of one node, its note)."""
    w = Workload(
        name="validate-sharded",
        params=nbytes / bed.CKPT_BYTES_PER_PARAM,
        gpus=ranks,
        gpus_per_node=ranks,
        data="fsdp",
        checkpoint=Checkpoint(
            interval_minutes=60, bytes_per_param=bed.CKPT_BYTES_PER_PARAM, path=str(path), format=fmt
        ),
    )
    (row,) = [r for r in judge_records(records, None, w).model if r.check.startswith("checkpoint")]
    return row.extra["write_s"], row.extra["note"]
