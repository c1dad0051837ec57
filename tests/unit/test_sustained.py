"""A save measured at two sizes per repeat: the rate past the smaller save (iobench/sustained.py),
the flag of a save faster than fio's sequential write, and the model writing the bytes past
the measured ones at that rate (reports/judging/storage/ckpt_save.py, savepath.py). Every
expected value is worked out by hand in the comment above it."""

from __future__ import annotations

import dataclasses

import pytest

from iobench.aggregate import HostResult, RecordContext, aggregate
from iobench.sustained import (
    absorbed_fields,
    slope_s_per_byte,
    sustained_fields,
    sustained_GBps,
)
from reports.judging.storage.ckpt_save import layout, save_time, seconds
from reports.judging.storage.savepath import pick
from reports.shared.records import IoRecord

MIB = 1 << 20
CTX = RecordContext(run_id="r1", workload="checkpoint_write", path="/d", scope="local", backend="torch.save")


def _save(host_parts: dict[str, tuple[int, float]], ctx: RecordContext = CTX) -> IoRecord:
    """One save over hosts: {host: (bytes, seconds)}, every host starting at t = 100 s."""
    return aggregate(
        [
            HostResult(host=h, direction="write", bytes=b, ios=1, start_s=100.0, end_s=100.0 + t, procs=1)
            for h, (b, t) in host_parts.items()
        ],
        ctx,
    )


def test_the_slope_is_the_seconds_each_byte_past_the_smaller_save_adds() -> None:
    # 512 MiB in 0.4 s, then 1 GiB in 1.5 s: 1.1 s for 536,870,912 more bytes = 2.04891e-9 s/B
    assert slope_s_per_byte(512 * MIB, 0.4, 1024 * MIB, 1.5) == pytest.approx(1.1 / 536_870_912)
    assert slope_s_per_byte(MIB, 0.4, MIB, 1.5) is None  # no more bytes: no slope
    # the median slope's rate: slopes 1.0e-9, 2.0e-9, 4.0e-9 s/B -> 2.0e-9 -> 0.5 GB/s
    assert sustained_GBps([1.0e-9, 4.0e-9, 2.0e-9]) == 0.5
    # the larger saves took no longer (median slope -1e-9): no rate is measured past the smaller
    assert sustained_GBps([-1.0e-9, -2.0e-9, 3.0e-9]) is None
    assert sustained_GBps([None, None]) is None


def test_fields_of_three_repeats_at_two_sizes() -> None:
    # (small 512 MiB, large 1 GiB) seconds per repeat: (0.4, 1.5), (0.35, 1.2), (0.5, 2.0)
    times = [(0.4, 1.5), (0.35, 1.2), (0.5, 2.0)]
    pairs = [(_save({"n1": (512 * MIB, s)}), _save({"n1": (1024 * MIB, b)})) for s, b in times]
    # large rates 1,073,741,824 / (1.5, 1.2, 2.0) s = 0.715828, 0.894785, 0.536871 GB/s: median 0.715828
    figure = sorted(b.bw_GBps for _, b in pairs)[1]
    assert figure == pytest.approx(0.715828, abs=1e-6)
    f = sustained_fields(pairs, figure)
    # slopes 1.1, 0.85, 1.5 s per 536,870,912 B: median 1.1 -> 536,870,912 / 1.1 = 0.488064 GB/s
    assert f["sustained_GBps"] == pytest.approx(0.488064, abs=1e-6)
    assert f["per_host_sustained_GBps"] == {"n1": pytest.approx(0.488064, abs=1e-6)}
    # small rates 536,870,912 / (0.4, 0.35, 0.5) = 1.342177, 1.533917, 1.073742: the lower middle 1.342177
    assert f["small_GBps"] == pytest.approx(1.342177, abs=1e-6)
    assert f["small_shard_bytes"] == 512 * MIB
    # non-linearity: the figure over the sustained rate, (2 x 1.1 / 1.5) = 1.4667
    assert f["nonlinearity"] == pytest.approx(1.4667, abs=1e-4)


def test_fields_per_host_and_for_all_processes_together() -> None:
    # 2 hosts, 2 processes each (the small save 2 x 8 MiB per host, the large 2 x 16 MiB):
    # n1 0.1 s then 0.3 s (slope 0.2 s / 16 MiB: 16,777,216 / 0.2 = 0.083886 GB/s),
    # n2 0.1 s then 0.2 s (0.1 s / 16 MiB: 0.167772 GB/s); together the window 0.1 s then 0.3 s
    # for 32 MiB more: 33,554,432 / 0.2 = 0.167772 GB/s
    def two(n1: tuple[int, float], n2: tuple[int, float]) -> IoRecord:
        return aggregate(
            [
                HostResult(host=h, direction="write", bytes=b, ios=1, start_s=100.0, end_s=100.0 + t, procs=2)
                for h, (b, t) in (("n1", n1), ("n2", n2))
            ],
            CTX,
        )

    small, large = two((16 * MIB, 0.1), (16 * MIB, 0.1)), two((32 * MIB, 0.3), (32 * MIB, 0.2))
    f = sustained_fields([(small, large)], large.bw_GBps)
    assert f["per_host_sustained_GBps"] == {
        "n1": pytest.approx(0.083886, abs=1e-6),
        "n2": pytest.approx(0.167772, abs=1e-6),
    }
    assert f["sustained_GBps"] == pytest.approx(0.167772, abs=1e-6)
    assert f["small_shard_bytes"] == 8 * MIB  # 32 MiB over 4 processes


def test_a_save_faster_than_fio_sequential_write_is_cache_absorbed() -> None:
    fio = _save({"n1": (9 * 10**8, 1.0), "n2": (9 * 10**8, 1.0)}, dataclasses.replace(CTX, backend="fio"))
    # n1 saved at 1.0 GB/s, more than 1.10 x fio's 0.9 (0.99): absorbed
    fast = _save({"n1": (10**9, 1.0), "n2": (8 * 10**8, 1.0)})
    assert absorbed_fields(fast, fio) == {"cache_absorbed": True, "fio_per_host_GBps": {"n1": 0.9, "n2": 0.9}}
    # 0.98 GB/s is within 10% of fio's 0.9: not flagged
    level = _save({"n1": (98 * 10**7, 1.0), "n2": (8 * 10**8, 1.0)})
    assert absorbed_fields(level, fio)["cache_absorbed"] is False
    assert absorbed_fields(fast, None) == {}  # no fio write on the path: nothing to hold it to
    other = _save({"n9": (10**9, 1.0)}, dataclasses.replace(CTX, backend="fio"))
    assert absorbed_fields(fast, other) == {}  # fio measured other hosts


def test_seconds_past_the_measured_bytes_go_at_the_sustained_rate() -> None:
    # 1 GB measured at 1.5 GB/s, 0.5 GB/s past it: 10 GB = 1/1.5 + 9/0.5 = 0.6667 + 18 = 18.667 s
    assert seconds(10e9, 1.5, 1e9, 0.5) == pytest.approx(18.6667, abs=1e-4)
    assert seconds(0.5e9, 1.5, 1e9, 0.5) == pytest.approx(0.3333, abs=1e-4)  # within the measured bytes
    assert seconds(10e9, 1.5, 1e9, None) == pytest.approx(6.6667, abs=1e-4)  # no sustained rate: the figure's
    assert seconds(10e9, 1.5) == pytest.approx(6.6667, abs=1e-4)  # fio's stream: no measured size


def _torch(procs: int, bw: float, sustained: float | None, shard: int) -> IoRecord:
    extra = {"shard_bytes": shard, "writers_per_node": procs}
    if sustained is not None:
        extra.update(sustained_GBps=sustained, per_host_sustained_GBps={"n1": sustained})
    return IoRecord(
        run_id="r1",
        ts="2026-11-28T00:00:00Z",
        hosts=("n1",),
        nodes=1,
        workload="checkpoint_write",
        direction="write",
        path="/d",
        scope="local",
        procs=procs,
        bytes=procs * shard,
        bw_GBps=bw,
        per_host_bw_GBps={"n1": bw},
        iops=1.0,
        lat_ms={},
        backend="torch.save",
        extra=extra,
    )


def test_the_model_writes_a_larger_checkpoint_at_the_sustained_rate() -> None:
    # one process saved 1e9 B at 1.2 GB/s, 0.5 GB/s past the half; 2 processes 1e9 B each at 1.6 GB/s
    # together, 0.8 GB/s past the half. DDP + torch.save on one GPU: rank 0 writes 4e9 B.
    recs = [_torch(1, 1.2, 0.5, 10**9), _torch(2, 1.6, 0.8, 10**9)]
    r = pick(recs)
    assert r is not None
    assert (r.shard_bytes, r.per_writer_bytes) == (1e9, 1e9)
    assert (r.per_writer_sustained_GBps, r.node_sustained_GBps) == (0.5, 0.8)
    lay = layout(4e9, "ddp", "torch.save", 1, 1)
    t = save_time(4e9, lay, r, local=True)
    # per writer: 1e9 / 1.2e9 + 3e9 / 0.5e9 = 0.8333 + 6 = 6.8333 s; the node term (one writer's 4e9 B
    # against the node's 2e9 B measured): 2e9 / 1.6e9 + 2e9 / 0.8e9 = 1.25 + 2.5 = 3.75 s; the larger: 6.8333 s
    assert t.seconds == pytest.approx(6.8333, abs=1e-4)
    assert "one process per node at 1.2 GB/s" in t.limit
    assert "past the 1 GB a process saved" in t.beyond and "(0.5 GB/s)" in t.beyond
    # the same records without the rate past the half: 4e9 / 1.2e9 = 3.3333 s, and the row says so
    old = pick([_torch(1, 1.2, None, 10**9), _torch(2, 1.6, None, 10**9)])
    assert old is not None
    t_old = save_time(4e9, lay, old, local=True)
    assert t_old.seconds == pytest.approx(3.3333, abs=1e-4)
    assert "no rate past a smaller save was measured" in t_old.beyond
    # a checkpoint within the measured bytes: the figure alone, 0.5e9 / 1.2e9 = 0.41667 s, no note
    small = layout(0.5e9, "ddp", "torch.save", 1, 1)
    t_small = save_time(0.5e9, small, r, local=True)
    assert t_small.seconds == pytest.approx(0.41667, abs=1e-5) and t_small.beyond == ""


def test_a_cache_absorbed_save_is_named_in_the_model_note() -> None:
    rec = _torch(1, 1.2, 0.5, 10**9)
    rec = dataclasses.replace(
        rec, extra={**rec.extra, "cache_absorbed": True, "fio_per_host_GBps": {"n1": 0.6}}
    )
    r = pick([rec])
    assert r is not None
    assert "faster than fio's sequential write on this path (0.6 GB/s)" in r.note
    assert "not the device's" in r.note
    assert "saves of 1 GB per process" in r.note  # the size the figure measured


def test_the_storage_table_says_the_rate_past_the_half_and_an_absorbed_figure() -> None:
    from reports.evidence.storage import io_frame

    rec = _torch(1, 1.2, 0.5, 10**9)
    rec = dataclasses.replace(rec, extra={**rec.extra, "cache_absorbed": True})
    (aside,) = io_frame([rec])["aside"]
    assert "0.5 GB/s past the half-size save" in aside
    assert "a cache absorbed it, not the device's figure" in aside
    (plain,) = io_frame([_torch(1, 1.2, None, 10**9)])["aside"]
    assert plain == ""  # a record of one size, not held to fio: nothing to say
