"""The bed tier's lock on two xdist workers (tests/harness/bedlock.py): bed tests share it, an
`alone` test waits for the running ones and keeps every other out, and one waiting is let in
before a shared test that came after it (no starvation by the other worker's next tests)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from tests.harness.bedlock import bed_turn, busy_file, busy_workers


def _hold(
    run_dir: Path, alone: bool, name: str, log: list[str], release: threading.Event
) -> threading.Thread:
    def body() -> None:
        with bed_turn(run_dir, alone):
            log.append(f"in {name}")
            release.wait(10)
            log.append(f"out {name}")

    t = threading.Thread(target=body, daemon=True)
    t.start()
    return t


def _settle() -> None:
    time.sleep(0.3)


def test_shared_tests_run_together_an_alone_one_waits_and_goes_first(tmp_path: Path) -> None:
    log: list[str] = []
    go = {name: threading.Event() for name in ("a", "b", "alone", "c")}
    a = _hold(tmp_path, False, "a", log, go["a"])
    b = _hold(tmp_path, False, "b", log, go["b"])
    _settle()
    assert sorted(log) == ["in a", "in b"]  # two bed tests at once
    alone = _hold(tmp_path, True, "alone", log, go["alone"])
    _settle()
    c = _hold(tmp_path, False, "c", log, go["c"])  # the other worker's next test, after it
    _settle()
    assert "in alone" not in log and "in c" not in log
    go["a"].set()
    a.join(5)
    _settle()
    assert "in alone" not in log  # b still runs
    go["b"].set()
    b.join(5)
    _settle()
    assert log[-1] == "in alone" and "in c" not in log  # alone, before c
    go["alone"].set()
    alone.join(5)
    _settle()
    assert log[-2:] == ["out alone", "in c"]
    go["c"].set()
    c.join(5)


def test_a_worker_is_busy_while_its_file_is_there_and_it_lives(tmp_path: Path) -> None:
    busy_file(tmp_path).touch()
    busy_file(tmp_path, pid=2**22 + 1).touch()  # over pid_max's default: a worker that is gone
    assert busy_workers(tmp_path) == [os.getpid()]
    busy_file(tmp_path).unlink()
    assert busy_workers(tmp_path) == []
