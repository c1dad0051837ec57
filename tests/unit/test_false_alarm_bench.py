"""The false-alarm benchmark's tally (benchmarks/false_alarm_bench.py), on hand-written runs:
false alarms per healthy run, misses and wrong names per faulty run, per finding kind; and its
beds' spec files, whose figures must be the beds' own limits."""

from __future__ import annotations

import yaml

from benchmarks.false_alarm_bench import Run, findings_of, table, tally

DISK_W = "local storage: checkpoint_write write bandwidth"
PAIR = "node: pair busbw"
EXPECT = ((DISK_W, None), (PAIR, "n2"))


def _run(faulty: bool, *findings: tuple[str, str, tuple[str, ...]], error: str = "") -> Run:
    return Run(bed="b", faulty=faulty, findings=findings, error=error)


def test_false_alarms_misses_and_wrong_names_per_kind() -> None:
    runs = [
        _run(False, (DISK_W, "ok", ()), (PAIR, "ok", ())),
        _run(False, (DISK_W, "below_spec", ()), (PAIR, "transient", ())),
        _run(False, (DISK_W, "regression", ()), ("gpu: x", "suspect", ())),  # suspect: not judged
        _run(False, error="stoker io exited 2"),  # not counted at all
        _run(True, (DISK_W, "below_spec", ()), (PAIR, "below_spec", ("n2",))),
        _run(True, (DISK_W, "ok", ()), (PAIR, "below_spec", ("n0",))),  # two misses, one wrong name
        _run(True, (DISK_W, "below_spec", ()), ("storage: other", "below_spec", ())),  # PAIR missed
    ]
    rows = {r.kind: r for r in tally("b", runs, EXPECT)}
    assert sorted(rows) == [DISK_W, PAIR, "storage: other"]
    d, p, o = rows[DISK_W], rows[PAIR], rows["storage: other"]
    # healthy: 3 runs counted (the errored one is left out); DISK_W failed in 2 of them
    assert (d.healthy, d.judged, d.alarms, d.transients) == (3, 3, 2, 0)
    assert (d.faulty, d.misses, d.wrong) == (3, 1, 0)
    # PAIR judged in 2 healthy runs (ok, transient), never failed there; named n2 in 1 of 3 faulty
    assert (p.judged, p.alarms, p.transients) == (2, 0, 1)
    assert (p.misses, p.wrong) == (2, 1)
    # a kind nobody planted: no miss column, its fail on a faulty run is a wrong name
    assert (o.judged, o.alarms, o.misses, o.wrong) == (0, 0, None, 1)
    lines = table([d, o])
    assert lines[2] == f"| b | {DISK_W} | 3/3 | 0.67 (2/3) | 0.00 (0/3) | 0.33 (1/3) | 0.00 (0/3) |"
    assert lines[3].endswith("| — (not planted) | 0.33 (1/3) |")


def test_findings_are_read_from_a_verdict() -> None:
    verdict = {
        "findings": [
            {"component": "node", "check": "pair busbw", "status": "below_spec", "hosts": ["n2"]},
            {"component": "local storage", "check": "x", "status": "ok"},
            "garbage",
        ]
    }
    assert findings_of(verdict) == ((PAIR, "below_spec", ("n2",)), ("local storage: x", "ok", ()))


def test_the_spec_files_state_the_beds_limits() -> None:
    from benchmarks.false_alarm_beds import DATA, spec_figures_agree

    assert spec_figures_agree() == []
    # by hand: 400 Mbit/s = 400e6 / 8 B/s = 0.05 GB/s; 50 MiB/s = 52,428,800 B/s = 0.0524288 GB/s
    net = yaml.safe_load((DATA / "spec-netns.yaml").read_text())
    assert net["network"]["inter_node"] == {"GBps": 0.05}
    disk = yaml.safe_load((DATA / "spec-disk.yaml").read_text().replace("$mount", "/m"))
    assert disk["storage"] == [
        {"path": "/m", "kind": "local", "read_GBps": 0.0524288, "write_GBps": 0.0524288}
    ]
