"""A real sharded checkpoint — 2 ranks in a gloo process group, each saving its own shard of
an MLP + Adam state at the same moment (torch.save: a file per rank; DCP: one distributed
save) — on a loop device throttled to 50 MiB/s, against the model's save time from stoker's
own `stoker io --writers 2` records of the same device (one run; each of its torch figures the
median of 3 saves), at another size (2 x 64 MiB measured, 2 x 101 MB predicted), 3 real saves
of each kind: the median error within ±15%. The prediction from fio's
records alone, each rank's serialisation added, is printed beside it (docs/model.md)."""

from __future__ import annotations

import statistics
from pathlib import Path

from reports.table.read import RecordSet
from tests.conftest import needs_root, needs_tool
from tests.harness.blockdev import throttled_disk
from tests.validation import sharded

pytestmark = [needs_root, needs_tool("fio")]
RATE = 50 << 20
SHARD = 64 << 20  # what stoker io saves per process
REPEATS = 3


def test_sharded_save_of_two_ranks_within_15_percent(tmp_path: Path) -> None:
    rows: list[tuple[int, str, float, float, str]] = []
    with throttled_disk(RATE, size="2G") as disk:
        # stoker io once, as a user runs it: each torch figure is already the median of its own
        # 3 saves (--save-repeats), fio's the whole of its timed run
        recs = sharded.stoker_records(disk.mount, tmp_path / "io", disk.cgroup_procs, SHARD, 2)
        fio_only = RecordSet(io=[r for r in recs.io if r.backend == "fio"])
        for i in range(REPEATS):
            for backend, fmt in (("torch.save", "torch.save"), ("torch.dcp", "dcp")):
                real_s, nbytes = sharded.real_sharded_save(disk.mount, disk.cgroup_procs, backend)
                for source, rs in (("its records", recs), ("fio alone", fio_only)):
                    predicted, note = sharded.predict(rs, disk.mount, nbytes, fmt, ranks=2)
                    what = f"{backend} 2 ranks x {nbytes / 2e6:.0f} MB from {source}"
                    rows.append((i, what, real_s, predicted, note))
    for i, what, real_s, predicted, note in rows:
        print(
            f"repeat {i + 1}: {what}: real {real_s:.2f} s, predicted {predicted:.2f} s "
            f"({(predicted - real_s) / real_s:+.1%}; {note})"
        )
    # judged: per save kind, the median error of the 3 real saves against the records (a save
    # can meet a loaded backing disk: the loop device's file shares /tmp with other jobs, and the
    # throttle is only a ceiling). From fio alone (printed, not judged) the
    # model missed by -34%..+2% on 2026-11-26 (docs/model.md): the real saves ran below fio's
    # O_DIRECT figure on this device by more than the serialisation term adds
    off = []
    for kind in ("torch.save", "torch.dcp"):
        errs = [(p - r) / r for _, w, r, p, _ in rows if w.startswith(kind) and "its records" in w]
        if abs(statistics.median(errs)) > 0.15:
            off.append((kind, errs))
    assert not off, off  # reported as measured; the bound is not loosened
