"""What the suite does when it is stopped by SIGTERM (CI's cancel, `timeout`, Kubernetes) or
SIGINT (Ctrl-C): it stops every process it started, then unwinds as for Ctrl-C, so each bed's
own teardown runs (namespaces deleted, loop devices detached, mounts and Slurm daemons gone).

Python's default for SIGTERM ends the interpreter at once: no `finally`, no fixture teardown,
no atexit. And the beds start their processes in sessions of their own (so that a teardown can
kill a whole tree), where a Ctrl-C sent to the terminal's process group never reaches them;
a test's `subprocess.run` kills only its direct child (mpirun, torchrun) when interrupted,
leaving that child's ranks orphaned; and a daemon that forks twice (slurmd's slurmstepd, the
job's processes under it) leaves the tree at once. So `install` marks this run in the
environment every child inherits (MARK, this process's pid and start time), and the handler
first collects from /proc every descendant of this process and every process that carries the
mark, sends them SIGTERM, SIGKILLs what is left after GRACE_S, and only then raises `Stopped`
(a KeyboardInterrupt: pytest tears every fixture down and exits 2). A second signal during that teardown kills the descendants again instead of
cutting the teardown short; SIGKILL still ends everything.

    restore = install()   # tests/conftest.py, at pytest_configure
    ...
    restore()             # at pytest_unconfigure
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Collection
from types import FrameType

# in the environment of what this run starts: "pid-starttime" of its pytest; no prefix the
# manifest records (reports/shared/manifest.py ENV_PREFIXES), so no run of a test carries it into a report
MARK = "SUITE_STOP_MARK"
GRACE_S = 5.0  # how long the descendants get for their own SIGTERM handling (a report, mpirun's ranks)
WORKERS_S = 180.0  # how long an xdist controller waits for its workers to tear their beds down
SIGNALS = (signal.SIGTERM, signal.SIGINT)


class Stopped(KeyboardInterrupt):
    """The suite was stopped by a signal; pytest handles it as Ctrl-C (teardown, exit 2)."""


def _stat(pid: int) -> tuple[int, str, int] | None:
    """(parent pid, state, start time) of a process from /proc/PID/stat, or None when gone.
    The name field may hold spaces and parentheses: the fields after its last ')' are fixed."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            rest = fh.read().rpartition(")")[2].split()
    except OSError:
        return None
    return int(rest[1]), rest[0], int(rest[19])


def _marked(pid: int, mark: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            return mark in fh.read().split(b"\0")
    except OSError:
        return False


def descendants(root: int, mark: str | Collection[str] | None = None) -> dict[int, int]:
    """Every living process below `root` in the process tree, and every one whose environment
    holds `mark` ("NAME=value", or any of several), as {pid: start time} (the start time tells
    a pid reused by another process apart)."""
    marks = [mark] if isinstance(mark, str) else list(mark or ())
    parent: dict[int, list[tuple[int, int]]] = {}
    found: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = _stat(int(name))
            if st is not None and st[1] not in "ZX":
                parent.setdefault(st[0], []).append((int(name), st[2]))
                if int(name) != root and any(_marked(int(name), m.encode()) for m in marks):
                    found[int(name)] = st[2]
    todo = [root, *found]  # the marked, too: their children may have lost the mark
    while todo:
        for pid, start in parent.get(todo.pop(), []):
            if pid not in found:
                found[pid] = start
                todo.append(pid)
    return found


def _alive(pid: int, start: int) -> bool:
    st = _stat(pid)
    return st is not None and st[2] == start and st[1] not in "ZX"


def _send(procs: dict[int, int], sig: signal.Signals) -> None:
    for pid, start in procs.items():
        if _alive(pid, start):
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass


def mark_of(pid: int) -> str:
    """The mark ("NAME=value") of the run whose pytest is `pid`."""
    st = _stat(pid)
    return f"{MARK}={pid}-{st[2] if st else 0}"


def children(pid: int) -> list[int]:
    """The living direct children of `pid` (an xdist controller's: its workers)."""
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = _stat(int(name))
            if st is not None and st[0] == pid and st[1] not in "ZX":
                out.append(int(name))
    return out


def run_processes(pid: int) -> dict[int, int]:
    """What the run whose pytest is `pid` has started and is still alive: its descendants and
    every process of its mark or of a direct child's (an xdist worker marks its own run), as
    {pid: start time}."""
    return descendants(pid, [mark_of(pid), *(mark_of(c) for c in children(pid))])


def stop_descendants(grace_s: float = GRACE_S) -> dict[int, int]:
    """SIGTERM every descendant of this process and every process of this run's mark, SIGKILL
    those still alive after `grace_s` (and any started meanwhile); the processes signalled, as
    {pid: start time}."""
    procs = run_processes(os.getpid())
    _send(procs, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while any(_alive(p, s) for p, s in procs.items()) and time.monotonic() < deadline:
        time.sleep(0.05)
    late = run_processes(os.getpid())  # a dying parent may have started a helper
    procs.update(late)
    _send(procs, signal.SIGKILL)
    return procs


def _forward(pids: list[int], signum: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass


def install(workers: Callable[[], list[int]] = list) -> Callable[[], None]:
    """Handle SIGTERM and SIGINT as above from now on; returns what puts the old handlers back.

    `workers`: the pids of this run's pytest-xdist workers whose session has not ended (an
    xdist controller's; none elsewhere). A controller hands the signal to them (each stops its
    own processes and tears its own beds down, as above), waits WORKERS_S for their sessions
    to end, and only then stops what is left and unwinds: killing a worker would cut its
    teardown short. A second signal is handed to the workers again."""
    old = {sig: signal.getsignal(sig) for sig in SIGNALS}
    stopping = False
    # this run's own mark: a pytest started by a test marks its own run (its processes are
    # still in the outer run's tree), and so does each xdist worker
    name, _, value = mark_of(os.getpid()).partition("=")
    os.environ[name] = value

    def on_signal(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        busy = workers()
        _forward(busy, signum)
        if stopping:  # already unwinding: keep the teardown going, stop what it waits on
            if not busy:
                stop_descendants(grace_s=0.0)
            return
        stopping = True
        deadline = time.monotonic() + WORKERS_S
        while busy and time.monotonic() < deadline:
            time.sleep(0.1)
            busy = workers()
        stop_descendants()
        raise Stopped(f"stopped by {signal.Signals(signum).name}")

    for sig in SIGNALS:
        signal.signal(sig, on_signal)

    def restore() -> None:
        for sig, handler in old.items():
            if handler is not None:
                signal.signal(sig, handler)

    return restore
