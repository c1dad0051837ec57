"""How the report names storage paths (reports/render/paths.py): a run's scratch dir is said
once per table, its rows say `the scratch dir`, and the storage chart's labels are short with a
key. Pure: findings and paths in, text out; expected strings written by hand."""

from __future__ import annotations

from reports.judging.advertised import compare_storage
from reports.render.markdown import findings_table, storage_table
from reports.render.paths import chart_labels, findings_notes, scratch_names, storage_notes
from reports.shared.records import IoRecord
from tests.unit import recordgen

SCRATCH = "/r/run1/.io-scratch-e4ghfio4"


def io(workload: str, direction: str, path: str, bw: float) -> IoRecord:
    return recordgen.io(workload, direction, path, bw, scope="local", per_host={"n1": bw})


def test_the_scratch_dir_is_said_once_under_the_findings_table() -> None:
    recs = [
        io("checkpoint_write", "write", SCRATCH, 2.0),
        io("checkpoint_read", "read", SCRATCH, 3.0),
        io("dataloader_read", "read", SCRATCH, 1.0),
    ]
    findings, _ = compare_storage(recs, None)
    assert len(findings) == 3 and all(SCRATCH in f.message for f in findings)  # verdict.json keeps it whole
    rows = list(findings_table(findings)["what to do"])
    assert rows[0] == (
        "checkpoint_read on the scratch dir: median node read 3.00 GB/s has nothing to compare with "
        "(what to add to the spec: under the table)."
    )
    assert not any(SCRATCH in r or "throwaway" in r for r in rows)
    assert findings_notes(findings) == [
        f"The scratch dir: {SCRATCH}; this is stoker run's throwaway scratch dir on the file system of "
        "/r/run1: add {path: /r/run1, kind: local, read_GBps: X, write_GBps: Y} to storage in --spec, or "
        "measure the storage you mean with stoker run --path DIR."
    ]


def test_a_named_path_is_left_as_it_is() -> None:
    findings, _ = compare_storage([io("checkpoint_write", "write", "/data", 2.0)], None)
    assert list(findings_table(findings)["what to do"]) == [findings[0].message]
    assert findings_notes(findings) == [] and storage_notes(["/data"]) == []


def test_the_storage_table_names_the_scratch_dir_short() -> None:
    import pandas as pd

    frame = pd.DataFrame(
        [
            {"workload": "checkpoint_write", "op": "", "direction": "write", "path": p, "scope": "local",
             "backend": "fio", "block": 0, "procs": 2, "bw": 1.0, "iops": 1.0, "p50_ms": None,
             "p99_ms": None, "failed": "", "cache_suspect": False}
            for p in (SCRATCH, "/data")
        ]
    )  # fmt: skip
    assert list(storage_table(frame)["path"]) == ["the scratch dir", "/data"]
    assert storage_notes(frame["path"]) == [
        f"The scratch dir: {SCRATCH} (stoker's own, removed after the run)"
    ]


def test_two_scratch_dirs_are_told_apart() -> None:
    assert scratch_names(["/b/io-scratch", "/a/.io-scratch-x", "/data"]) == {
        "/a/.io-scratch-x": "scratch dir 1",
        "/b/io-scratch": "scratch dir 2",
    }


def test_chart_labels_are_short_with_a_key() -> None:
    long = "/mnt/tenant-01-scratch-volume/ckpt"
    labels, key = chart_labels(
        [
            ("checkpoint_read", "read", SCRATCH, "fio", 2),
            ("checkpoint_write", "write", SCRATCH, "torch.save", 1),
            ("checkpoint_write", "write", SCRATCH, "torch.save", 2),
            ("dataloader_read", "read", "/data", "fio", 8),
            ("mixed", "read", long, "fio", 1),
        ]
    )
    assert labels == [
        "checkpoint read · scratch (fio)",
        "checkpoint write · scratch (torch.save ×1)",
        "checkpoint write · scratch (torch.save ×2)",
        "dataloader read · /data (fio)",
        "mixed read · P1 (fio)",
    ]
    assert key == f"Key: scratch = {SCRATCH}; P1 = {long}; ×N = N processes"
    assert chart_labels([("checkpoint_write", "write", "/data", "fio", 2)]) == (
        ["checkpoint write · /data (fio)"],
        "",
    )
