"""A real checkpoint and a real DataLoader on a loop device throttled to 50 MiB/s, against
stoker's prediction from its own `stoker io` records of the same device: the checkpoint
stall within ±15%, the dataloader idle share within ±20% relative."""

from __future__ import annotations

from pathlib import Path

from reports.table.read import RecordSet
from tests.conftest import needs_root, needs_tool
from tests.harness.blockdev import throttled_disk
from tests.validation import bed

pytestmark = [needs_root, needs_tool("fio")]
RATE = 50 << 20


# predict saves of *other sizes* than the one stoker measured, and from fio alone (a
# torch.save predicted from stoker's own torch.save record of the same size times torch.save
# twice and cannot fail). Size: an MLP + Adam state of width 4096, depth 5 (4 times
# the measured size). A second, 2 GiB size was measured once within 8% of its prediction (40 s a
# save at 50 MiB/s); it is left out to keep the suite's time, and larger saves pass the kernel's
# dirty-background threshold, where the flusher writes them unthrottled and they judge nothing.
MEASURED_AT = 256 << 20
SIZES = {"1 GiB": (4096, 5)}


def test_checkpoint_of_other_sizes_and_from_fio_alone_within_15_percent(tmp_path: Path) -> None:
    rows: list[tuple[str, float, float, float, str]] = []
    with throttled_disk(RATE, size="6G") as disk:
        # fio's runs 3 s, as the sharded beds': on the throttled device its rate is the device's
        recs = bed.stoker_checkpoint(disk.mount, tmp_path / "io", disk.cgroup_procs, MEASURED_AT, runtime_s=3)
        real = {
            label: bed.real_checkpoint(disk.mount, disk.cgroup_procs, w, d) for label, (w, d) in SIZES.items()
        }
    fio_only = RecordSet(io=[r for r in recs.io if r.backend == "fio"])
    assert len(fio_only.io) < len(recs.io)  # the torch.save / DCP records were there to leave out
    for label, got in real.items():
        for backend, fmt in (("torch.save", "torch.save"), ("torch.dcp", "dcp")):
            nbytes, real_s = got["bytes"][backend], got[backend][0]
            for source, rs in (("256 MiB record", recs), ("fio alone", fio_only)):
                stall, note = bed.predict_checkpoint(rs, disk.mount, nbytes, fmt)
                rows.append(
                    (f"{backend} {label} ({nbytes / 1e9:.2f} GB) from {source}", nbytes, real_s, stall, note)
                )
    held = []
    for what, nbytes, real_s, stall, note in rows:
        # cgroup v1 blkio throttles only I/O a process issues: past the dirty-background threshold
        # (10% of memory, ~2.3 GB here) the kernel's flusher writes a buffered save unthrottled,
        # and the real save then beats the device's rate — it no longer ran on a 50 MiB/s device
        ok_bed = real_s >= 0.9 * nbytes / RATE
        print(
            f"{what}: real {real_s:.2f} s, predicted {stall:.2f} s ({(stall - real_s) / real_s:+.0%}; {note})"
            + ("" if ok_bed else f"; THROTTLE NOT HELD: the save moved {nbytes / real_s / 1e6:.0f} MB/s")
        )
        if ok_bed:
            held.append((what, real_s, stall))
    assert any("1 GiB" in w for w, _, _ in held) and any("fio alone" in w for w, _, _ in held), rows
    off = [(w, r, p) for w, r, p in held if abs(p - r) / r > 0.15]
    assert not off, off  # reported as measured; the bound is not loosened


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
