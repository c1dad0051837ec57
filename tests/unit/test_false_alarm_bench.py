"""The false-alarm benchmark's tally (benchmarks/false_alarm_bench.py), on hand-written
verdict.json documents: false alarms per healthy run, misses per faulty run, per finding kind."""

from __future__ import annotations

from benchmarks.false_alarm_bench import failing_kinds, judged_findings, tally


def _v(*findings: tuple[str, str, str]) -> dict[str, object]:
    return {"findings": [{"component": c, "check": k, "status": s} for c, k, s in findings]}


def test_false_alarms_and_misses_per_kind() -> None:
    disk = ("local storage", "checkpoint_write write bandwidth")
    healthy = [
        _v((*disk, "ok")),
        _v((*disk, "below_spec"), ("intra-node network", "all_reduce busbw plateau", "ok")),
        _v((*disk, "below_spec"), (*disk, "below_spec")),  # one kind counts once per run
        _v(("node", "slow node", "suspect")),  # suspect is not a fail
    ]
    faulty = [_v((*disk, "below_spec")), _v((*disk, "ok")), _v()]
    rows = tally(healthy, faulty, ["local storage: checkpoint_write write bandwidth"])
    alarm, miss = rows
    assert (alarm.kind, alarm.runs, alarm.alarms, alarm.misses) == (
        "local storage: checkpoint_write write bandwidth",
        4,
        2,
        0,
    )
    assert alarm.per_run == 0.5  # 2 false alarms over 4 healthy runs
    assert (miss.runs, miss.alarms, miss.misses) == (3, 0, 2) and abs(miss.per_run - 2 / 3) < 1e-12
    assert failing_kinds(_v(("gpu", "matmul TFLOPS (bf16)", "regression"))) == {"gpu: matmul TFLOPS (bf16)"}


def test_a_run_that_judged_nothing_cannot_raise_an_alarm() -> None:
    assert judged_findings(_v(("local storage", "x", "no_reference"), ("node", "y", "suspect"))) == 0
    assert judged_findings(_v(("local storage", "x", "ok"), ("node", "y", "below_spec"))) == 2
