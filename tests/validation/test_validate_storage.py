"""A real checkpoint and a real DataLoader on a loop device throttled to 50 MiB/s, against
stoker's prediction from its own `stoker io` records of the same device: the checkpoint
stall within ±15%, the dataloader idle share within ±20% relative."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import needs_root, needs_tool
from tests.harness.blockdev import throttled_disk
from tests.validation import bed

pytestmark = [needs_root, needs_tool("fio")]
RATE = 50 << 20


def test_checkpoint_stall_within_15_percent(tmp_path: Path) -> None:
    width, depth = 1024, 4  # 4.2 M parameters x 12 B (weights + Adam) = 50 MB: ~1 s at 50 MiB/s
    nbytes = int(bed.checkpoint_params(width, depth) * bed.CKPT_BYTES_PER_PARAM)
    with throttled_disk(RATE, size="512M") as disk:
        recs = bed.stoker_checkpoint(disk.mount, tmp_path / "io", disk.cgroup_procs, nbytes)
        real = bed.real_checkpoint(disk.mount, disk.cgroup_procs, width, depth)
    stall, note = bed.predict_checkpoint(recs, disk.mount, nbytes)
    assert "torch" in note  # the real save's record, not fio's
    for backend in ("torch.save", "torch.dcp"):
        err = (stall - real[backend][0]) / real[backend][0]
        print(f"{backend}: real {real[backend][0]:.3f} s, predicted {stall:.3f} s ({err:+.0%}; {note})")
        assert abs(err) <= 0.15, (backend, real, stall)


def test_dataloader_idle_share_within_20_percent(tmp_path: Path) -> None:
    sample = 1 << 20
    with throttled_disk(RATE, size="512M") as disk:
        recs = bed.stoker_dataloader(disk.mount, tmp_path / "io", disk.cgroup_procs, sample, runtime_s=3)
        samples = disk.mount / "validate-samples"
        bed.make_samples(samples, 24 * 4, sample)
        # 4 MiB per step every 40 ms = 100 MiB/s wanted from a 50 MiB/s device: about half the time waiting
        real, c = bed.real_dataloader(samples, disk.cgroup_procs, batch=4, compute_s=0.04, steps=20)
    predicted = bed.predict_dataloader(recs, disk.mount, batch=4, sample_bytes=sample, compute_s=c)
    err = (predicted - real) / real
    print(f"dataloader: real idle {real:.3f}, predicted {predicted:.3f} ({err:+.0%})")
    assert abs(err) <= 0.20, (real, predicted)
