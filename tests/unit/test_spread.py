"""Repeated saves as one figure (reports/shared/spread.py): the median sample's record with every
sample, min and max; a record without samples reads as one sample; the report's words."""

from __future__ import annotations

from reports.shared.records import IoRecord
from reports.shared.spread import Spread, median_record, spread_of


def _rec(bw: float, **extra: object) -> IoRecord:
    return IoRecord(
        run_id="r",
        ts="2026-01-01T00:00:00Z",
        hosts=("n1",),
        nodes=1,
        workload="checkpoint_write",
        direction="write",
        path="/x",
        scope="local",
        procs=1,
        bytes=1 << 30,
        bw_GBps=bw,
        per_host_bw_GBps={"n1": bw},
        iops=1.0,
        lat_ms={},
        backend="torch.save",
        extra=dict(extra),
    )


def test_the_median_save_is_written_with_every_sample() -> None:
    rec = median_record([_rec(1.6, shard_bytes=7), _rec(1.2), _rec(1.4)])
    # sorted 1.2, 1.4, 1.6: the middle one, 1.4, is the judged figure and the record written
    assert rec.bw_GBps == 1.4
    assert rec.extra["samples_GBps"] == [1.6, 1.2, 1.4]  # in the order measured
    assert (rec.extra["min_GBps"], rec.extra["max_GBps"], rec.extra["repeats"]) == (1.2, 1.6, 3)
    assert spread_of(rec).text() == "median of 3, 1.2–1.6 GB/s"


def test_an_even_count_judges_the_lower_middle_sample() -> None:
    assert median_record([_rec(4.0), _rec(1.0), _rec(3.0), _rec(2.0)]).bw_GBps == 2.0


def test_an_old_record_without_samples_is_one_sample() -> None:
    s = spread_of(_rec(2.5))
    assert s.samples == (2.5,)
    assert s.text() == "one sample"
    assert not s.contains(2.5)  # one sample has no spread for a threshold to lie in


def test_a_threshold_inside_the_spread() -> None:
    s = Spread(samples=(1.2, 1.6, 1.4))
    assert s.contains(1.3) and s.contains(1.6)
    assert not s.contains(1.1) and not s.contains(1.7)


def test_a_finding_says_when_its_threshold_lies_inside_the_spread() -> None:
    from reports.shared.spread import threshold_note

    s = Spread(samples=(1.2, 1.6, 1.4))  # median 1.4
    # a figure of 14 GB/s judged at the median sample spans 14 x 1.2/1.4 = 12 to 14 x 1.6/1.4 = 16
    note = threshold_note(s, 14.0, 13.0, "GB/s")
    assert "13 GB/s lies inside the spread of the 3 samples (12–16 GB/s)" in note
    assert threshold_note(s, 14.0, 11.0, "GB/s") == ""  # under the lowest: the verdict holds for every sample
    assert threshold_note(Spread(samples=(1.4,)), 14.0, 14.0, "GB/s") == ""
