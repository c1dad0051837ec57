"""The bed tier's file order (tests/harness/bed_order.py): the longest known file first, a file
the table does not know before every known one, and the table read back from the tier's log."""

from __future__ import annotations

import pytest

from tests.harness import bed_order


def test_the_longest_first_and_an_unknown_file_before_all(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bed_order, "SECONDS", {"a.py": 10.0, "b.py": 300.0, "c.py": 10.0})
    assert bed_order.longest_first(["a.py", "b.py", "c.py", "new.py"]) == ["new.py", "b.py", "a.py", "c.py"]


def test_the_table_is_read_from_the_tiers_progress_lines() -> None:
    log = (
        ".bed: tests/integration/test_x.py::test_one[a-b c] passed (10.4 s, gw0)\n"
        "bed: tests/integration/test_x.py::test_two failed (5.2 s, gw1)\n"
        ".bed: tests/unit/test_y.py::test_z skipped (0.0 s, gw1)\n"
        "bed: tests/integration/test_x.py::test_three \n"  # the line of a test under way: no time yet
    )
    assert bed_order.table(log) == {"tests/integration/test_x.py": 16, "tests/unit/test_y.py": 1}


def test_every_bed_file_of_the_table_exists() -> None:
    from tests.conftest import REPO

    assert [f for f in bed_order.SECONDS if not (REPO / f).is_file()] == []


def test_the_files_of_alone_tests_go_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bed_order, "SECONDS", {"a.py": 10.0, "b.py": 300.0, "v.py": 50.0, "w.py": 5.0})
    got = bed_order.longest_first(["a.py", "b.py", "v.py", "w.py"], alone={"w.py", "v.py"})
    assert got == ["v.py", "w.py", "b.py", "a.py"]
