"""What an import checks and what a report of it writes: busbw against algbw x the op's bus
factor (nccl-tests prints both with 2 decimals), a mamf-finder import that `report` reads,
names from files escaped in report.md, and no file left behind by a write on a full disk.

nccl-tests inputs are tests/data/nccl_tests (real nccl-tests bytes) with one figure changed
in the test; mamf-finder's is tests/data/compute/mamf-finder-gfx1151.txt (real, see its README)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
from pathlib import Path

import pytest

from reports.commands import import_cmd
from reports.ingest import nccl_rows
from reports.ingest.importers import import_file
from reports.pipeline import build, collect
from reports.shared.errors import UsageError
from reports.shared.safe_write import write_outputs
from tests.conftest import DATA, needs_root

LOG = DATA / "nccl_tests" / "v2.13_mpirun_all_reduce.log"


@pytest.mark.parametrize(
    "name", ["v2.13_mpirun_all_reduce.log", "v2.17_srun_allgather_alltoall.log", "v2.17_all_reduce.json"]
)
def test_real_rows_pass_the_bus_factor_check_with_their_rounding(tmp_path: Path, name: str) -> None:
    # e.g. 16 ranks, all_reduce 2*15/16 = 1.875: 8.74 x 1.875 = 16.3875, printed 16.38 (algbw
    # was 8.738 before rounding): within 0.005 x 1.875 + 0.005
    got = import_file(DATA / "nccl_tests" / name)
    assert got.net and not got.notes


def test_a_log_row_whose_busbw_is_not_algbw_times_the_bus_factor_is_named_and_skipped(
    tmp_path: Path,
) -> None:
    text = LOG.read_text()
    row = "  2900.00   23.14   43.39       0"
    assert text.count(row) == 1
    (tmp_path / "all_reduce.log").write_text(text.replace(row, "  2900.00   23.14   86.78       0"))
    got = import_file(tmp_path / "all_reduce.log")
    # 6 rows x 2 modes; the row at line 31 goes whole (out-of-place and in-place)
    assert len(got.net) == 10 and 86.78 not in [r.busbw_GBps for r in got.net]
    # 23.14 x 2*15/16 = 43.3875
    assert got.notes == [
        "all_reduce.log: skipped 1 of 6 rows: line 31: busbw 86.78 is not algbw 23.14 x 1.875 "
        "(all_reduce on 16 ranks: 43.39 GB/s)"
    ]


@pytest.mark.parametrize(
    ("tok", "half"), [("0.07", 0.005), ("2059.8", 0.05), ("90227", 0.5), ("4e+06", 5e5), ("1.5e+06", 5e4)]
)
def test_a_printed_figure_is_off_by_half_its_last_digit(tok: str, half: float) -> None:
    # nccl-tests' getFloatStr (src/util.cu): 2, 1 or 0 decimals, else %.0e / %.1e, to fit
    assert nccl_rows.half_unit(tok) == pytest.approx(half)


def test_tiny_graph_times_keep_their_rows_and_a_lost_digit_is_still_named(tmp_path: Path) -> None:
    """A real H200 row (tests/data/gpu/h200-gpu-check, all_reduce -G 3): in place 0.13 us and
    algbw 1e+06 for 134217728 B, so size / time is 1.03e6 GB/s, and 0.13 stands for anything in
    0.125..0.135 (0.99e6..1.07e6): the row is sound. With a digit of the out-of-place algbw lost
    (2034.2 -> 203.2) it is damaged and named, as before."""
    log = DATA / "gpu" / "h200-gpu-check" / "nccl-tests" / "all_reduce-G3.log"
    row = "   134217728      33554432     float     sum      -1    65.98  2034.2    0.00       0     0.13   1e+06    0.00       0"
    text = log.read_text()
    assert text.count(row + "\n") == 1
    (tmp_path / "all_reduce.log").write_text(text)
    assert not import_file(tmp_path / "all_reduce.log").notes
    (tmp_path / "all_reduce.log").write_text(text.replace(row, row.replace("2034.2", " 203.2")))
    got = import_file(tmp_path / "all_reduce.log")
    # 134217728 / 65.98 / 1e3 = 2034.22
    assert got.notes == [
        "all_reduce.log: skipped 1 of 14 rows: line 23: algbw '203.2' is not size / time (2034.22 GB/s)"
    ]


def test_a_json_result_whose_bus_bw_disagrees_is_named_and_skipped(tmp_path: Path) -> None:
    doc = json.loads((DATA / "nccl_tests" / "v2.17_all_reduce.json").read_text())
    doc["results"][1]["in_place"]["bus_bw"] = 160.470741  # = alg_bw: a factor of 1, not 2*7/8
    (tmp_path / "ar.json").write_text(json.dumps(doc))
    got = import_file(tmp_path / "ar.json")
    assert len(got.net) == 4  # 3 results x 2 modes, result 1 gone whole
    # 160.470741 x 1.75 = 280.8238
    assert got.notes == [
        "ar.json: skipped 1 of 3 results: results[1]: busbw 160.471 is not algbw 160.471 x 1.75 "
        "(all_reduce on 8 ranks: 280.82 GB/s)"
    ]


def test_a_mamf_finder_import_is_a_directory_report_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    import_cmd.main(
        argparse.Namespace(files=[str(DATA / "compute" / "mamf-finder-gfx1151.txt")], out=str(out), op=None)
    )
    c = collect(out)  # main: UsageError "no records and no nccl-tests or fio output to import"
    assert c.verdict["verdict"] == "unjudged"
    assert "bf16 matmul median 22.3 TFLOPS" in build(out).markdown
    capsys.readouterr()


HOSTILE = "<img src=x onerror=alert(1)>"


def test_names_from_files_are_escaped_in_report_md_and_html(tmp_path: Path) -> None:
    (tmp_path / f"{HOSTILE}.log").write_text(LOG.read_text())  # imported: its name is listed
    rec = {  # hand-written in the contract's format
        "schema": 1,
        "kind": "net",
        "run_id": "r1",
        "ts": "2026-01-01T00:00:00Z",
        "hosts": ["n1"],
        "nodes": 1,
        "op": "all_reduce",
        "scope": "intra-node",
        "ranks": 8,
        "backend": "torch",
        "dtype": "float32",
        "bytes": 1 << 30,
        "time_s": 0.01,
        "algbw_GBps": 107.37,
        "busbw_GBps": 187.9,
        "wrong": 0,
    }
    lines = [rec, {**rec, "hosts": [HOSTILE]}]
    (tmp_path / "net.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    out = build(tmp_path)
    assert "<img" not in out.markdown and "<img src=x" not in out.html
    # the skipped line's reason and the imported file's name, shown, not run
    assert "host '&lt;img src=x onerror=alert(1)&gt;' is not one plain node name" in out.markdown
    assert "- &lt;img src=x onerror=alert(1)&gt;.log" in out.markdown


@needs_root
def test_no_file_is_left_behind_when_the_disk_fills(tmp_path: Path) -> None:
    disk = tmp_path / "tiny"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(disk)], check=True)
    try:
        with pytest.raises(UsageError, match="No space left on device"):
            write_outputs(disk, {"report.md": "x" * 40_000, "verdict.json": "{}\n"})
        assert os.listdir(disk) == []  # main: .stoker-tmp-<hex>-report.md, half written
        # the ledger's own temp file, when the disk fills just there
        write_outputs(disk, {"verdict.json": "{}\n"})
        with pytest.raises(UsageError, match="No space left on device"):
            write_outputs(disk, {"report.md": "y" * 9_000, "report.html": "z" * 9_000})
        assert not [n for n in os.listdir(disk) if n.startswith(".stoker-tmp-")]
    finally:
        subprocess.run(["umount", str(disk)], check=True)


def test_a_split_run_is_not_checked_against_one_bus_factor(tmp_path: Path) -> None:
    # NCCL_TESTS_SPLIT: ranks 8-15 in Group 1, two communicators of 8 ranks: a row's factor
    # is 2*7/8 = 1.75 (23.14 x 1.75 = 40.495), not that of the 16 device lines
    text = LOG.read_text()
    for r in range(8, 16):
        text = text.replace(f"Rank {r:2d} Group  0 ", f"Rank {r:2d} Group  1 ")
    assert text.count("Group  1 ") == 8
    text = text.replace("  2900.00   23.14   43.39       0", "  2900.00   23.14   40.50       0")
    (tmp_path / "all_reduce.log").write_text(text)
    got = import_file(tmp_path / "all_reduce.log")
    assert len(got.net) == 12 and not got.notes and 40.5 in [r.busbw_GBps for r in got.net]
