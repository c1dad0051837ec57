"""The bed tier on two pytest-xdist workers (`-n 2 --dist loadfile`, docs/testing.md): what
keeps two beds from getting in each other's way.

- `--dist loadfile` runs each test file on one worker, its tests one after another: a
  module-scoped bed is brought up once and shared by the file's tests, and the names a file
  reuses (a namespace prefix, a port inside its namespaces) are never taken twice at once.
  (Not `--dist loadgroup`: with pytest 9 its `xdist_group` marks are ignored, xdist 3.8 renames
  the test ids through an attribute pytest no longer reads.) What files share is already per
  bed: namespace prefixes are per file, a Slurm cluster takes free ports and a temp dir of its
  own, loop devices and their cgroups are named by pid.
- A test marked `alone` (tests/validation: stoker's prediction against a real job on the same
  bed, which a second worker's CPU load would skew) runs while the other worker runs no bed
  test: every bed test holds a shared lock for its setup, call and teardown, an `alone` one
  an exclusive lock; a turnstile lock in front of both lets a waiting `alone` test in before
  the other worker's next test (no starvation).

    with bed_turn(run_dir, alone=True): ...   # tests/conftest.py, around each bed test

Without xdist (a plain `pytest -m bed`) nothing is locked: the tests run one at a time anyway.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# the controller's run directory (a temp dir), inherited by its workers
RUN_DIR_ENV = "STOKER_BED_RUN_DIR"


@contextmanager
def bed_turn(run_dir: Path, alone: bool) -> Iterator[None]:
    """Hold the bed lock of the run in `run_dir`: shared, or exclusive for an `alone` test."""
    with open(run_dir / "turnstile", "a+") as turn, open(run_dir / "beds", "a+") as beds:
        fcntl.flock(turn, fcntl.LOCK_EX)
        try:
            fcntl.flock(beds, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        finally:
            fcntl.flock(turn, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(beds, fcntl.LOCK_UN)


def busy_file(run_dir: Path, pid: int | None = None) -> Path:
    """The file a worker keeps while its session (and its beds) are up; the controller's stop
    handler waits for every one of them to go (tests/harness/stop.py)."""
    return run_dir / f"worker-{os.getpid() if pid is None else pid}"


def busy_workers(run_dir: Path) -> list[int]:
    """The pids of the workers whose session has not ended (their beds may still be up)."""
    pids = []
    for f in run_dir.glob("worker-*"):
        pid = int(f.name.removeprefix("worker-"))
        if Path(f"/proc/{pid}").exists():
            pids.append(pid)
    return pids
