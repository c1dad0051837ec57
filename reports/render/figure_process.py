"""The processes that draw report.html's figures for `stoker report`.

A process is forked when `stoker report` starts, before any thread or large import (a small
copy of a single-threaded process: the safe moment to fork). It imports matplotlib's base
modules while the main process imports numpy and pyarrow (one core each), then waits.
`warm()` — called by the parse thread when pyarrow is done with net.jsonl — has it import
pyplot, draw throwaway figures (fonts, text caches, image code) and fork a helper, warm too,
while the main process builds the frame and the evidence on one core: the second core was idle
then, and the main process never imports matplotlib (~0.8 s of Python that used to fight the
evidence for the GIL in a thread).

The two draw the figures as they are asked for: the per-host grids and the pair matrix as soon
as their evidence is computed (`start`, one to each), the sweeps and storage bars when the page
is built (`draw`: heaviest first, each to whichever process comes free, so the two finish
together; drawing is Python under the GIL: two processes, two cores). `draw(jobs)` returns every
job's base64 PNG, those started already included — the bytes any process draws
(tests/unit/test_figure_process.py). When a process died or a job would not pickle, the
figures it lacks are drawn here, as figure_jobs.draw_all would; a figure whose process ran
past LIMIT_S is figure_jobs.NOT_DRAWN (the page says so in its place): its time is spent,
and drawing it again here doubled the time of the report.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import queue
import select
import struct
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reports.render.figure_jobs import Job

LIMIT_S = 120.0  # a process that has not answered by then is left, and its figures not drawn
_HEAD = struct.Struct("<Q")
# relative drawing time, measured on a 1,000-node report (a sweep ~1): the work is split by it
_COSTS = {"matrix_plot": 2.5, "host_grids": 1.5}


def _cost(job: Job) -> float:
    return _COSTS.get(getattr(job[0], "__name__", ""), 1.0)


class _Worker:
    """One drawing process as the main process sees it: a thread writes its queue of
    messages to it (a large job never blocks the caller), answers come on `answers`."""

    def __init__(self, commands: int, answers: int) -> None:
        self.answers, self.load, self.ok = answers, 0.0, True
        self.pending: set[int] = set()  # figures it owes
        self._queue: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._write, args=(commands,), daemon=True)
        self._thread.start()

    def send(self, msg: tuple[Any, ...]) -> None:
        self._queue.put(pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL))

    def close(self) -> None:
        self._queue.put(None)

    def _write(self, fd: int) -> None:
        try:
            while (data := self._queue.get()) is not None:
                _write(fd, _HEAD.pack(len(data)) + data)
        except OSError:
            self.ok = False  # it died: what it owes is drawn in the main process
        finally:
            os.close(fd)


class FigureProcess:
    """Two forked processes that draw figures on request (see the module docstring)."""

    def __init__(self) -> None:
        self._pid = 0
        self._workers: list[_Worker] = []
        self._keys: dict[bytes, int] = {}  # a started job's pickle digest -> its number
        self._done: dict[int, str] = {}
        self._jobs: list[Job] = []
        self._lock = threading.Lock()  # warm() comes from the parse thread, the rest from the main one
        self._warmed = False
        self._late = False  # a process ran past LIMIT_S: close() ends it at once
        if not hasattr(os, "fork") or (os.cpu_count() or 1) < 2:
            return  # one core: nothing to overlap; draw() draws here
        pipes = [os.pipe() for _ in range(4)]  # commands and answers of the process, then of its helper
        mine = (pipes[0][0], pipes[1][1], pipes[2][0], pipes[3][1])
        try:
            pid = os.fork()
        except OSError:  # no process to be had (a limit): draw() draws here
            for fd in (x for pair in pipes for x in pair):
                os.close(fd)
            return
        if pid == 0:  # the process: serve, then leave without the parent's exit handlers
            code = 1
            try:
                for fd in (pipes[0][1], pipes[1][0], pipes[2][1], pipes[3][0]):
                    os.close(fd)
                _serve(*mine)
                code = 0
            finally:
                os._exit(code)
        for fd in mine:
            os.close(fd)
        self._pid = pid
        self._workers = [_Worker(pipes[0][1], pipes[1][0]), _Worker(pipes[2][1], pipes[3][0])]

    def warm(self) -> None:
        """Import pyplot there and fork the helper now (the caller's cores are free)."""
        with self._lock:
            self._warm()

    def _warm(self) -> None:
        if self._workers and not self._warmed:
            self._warmed = True
            self._workers[0].send(("warm",))  # the helper's jobs wait for it

    def start(self, jobs: Sequence[Job]) -> None:
        """Draw these now, there, each on the process with less queued; draw() collects them."""
        with self._lock:
            for job in jobs:
                number, data = self._number(job)
                if data:
                    self._send(min(self._live(), key=lambda w: w.load), number, data)

    def draw(self, jobs: Sequence[Job], meanwhile: Callable[[], None] | None = None) -> list[str]:
        """Each job's base64 PNG, in order. Those not started yet go, heaviest first, to the
        process that comes free first: the two finish together, whatever the figures cost.
        `meanwhile` runs here once they are handed out (stoker report: the markdown)."""
        with self._lock:
            numbered = [self._number(job) for job in jobs]
            todo = sorted({k: d for k, d in numbered if d}.items(), key=lambda kd: -_cost(self._jobs[kd[0]]))
            self._collect({k for k, _ in numbered}, todo, meanwhile)
            missing = [k for k in dict.fromkeys(k for k, _ in numbered) if k not in self._done]
        if missing:
            from reports.render import figure_jobs

            for k, png in zip(missing, figure_jobs.draw_all([self._jobs[k] for k in missing])):
                self._done[k] = png
        return [self._done[k] for k, _ in numbered]

    def close(self) -> None:
        """End the processes (they leave at the end of their input) and reap them."""
        with self._lock:
            workers, self._workers = self._workers, []
            for w in workers:
                w.close()
            if not self._pid:
                return
            pid, self._pid = self._pid, 0
            deadline = time.monotonic() + (0.0 if self._late else 5.0)
            try:
                while os.waitpid(pid, os.WNOHANG) == (0, 0):
                    if time.monotonic() > deadline:
                        os.kill(pid, 9)
                        os.waitpid(pid, 0)
                        break
                    time.sleep(0.005)
            except ChildProcessError:
                pass  # reaped already (by a caller that waited for every child)
            for w in workers:
                os.close(w.answers)

    def _number(self, job: Job) -> tuple[int, bytes]:
        """(the job's number, its pickle when a process is to draw it, else b""): an equal job
        started already keeps its number (the same function and arguments pickle alike)."""
        try:
            data = pickle.dumps(job, protocol=pickle.HIGHEST_PROTOCOL)
        except (pickle.PicklingError, AttributeError, TypeError):
            data = b""  # drawn here
        digest = hashlib.sha256(data).digest() if data else b""
        if digest in self._keys:
            return self._keys[digest], b""
        number = len(self._jobs)
        self._jobs.append(job)
        if digest and self._live():
            self._keys[digest] = number
            return number, data
        return number, b""

    def _live(self) -> list[_Worker]:
        return [w for w in self._workers if w.ok]

    def _send(self, w: _Worker, number: int, data: bytes) -> None:
        self._warm()  # the helper exists once the process is warm
        w.load += _cost(self._jobs[number])
        w.pending.add(number)
        w.send(("job", number, data))

    def _collect(
        self, wanted: set[int], todo: list[tuple[int, bytes]], meanwhile: Callable[[], None] | None
    ) -> None:
        """Hand out `todo` to the processes as they come free; answers until every wanted
        figure a live process owes has come (or LIMIT_S)."""
        deadline = time.monotonic() + LIMIT_S
        while True:
            for w in self._live():
                if todo and not w.pending:
                    self._send(w, *todo.pop(0))
            if meanwhile is not None:
                run = meanwhile
                meanwhile = None
                run()
            waiting = [w for w in self._workers if w.pending & wanted]
            left = deadline - time.monotonic()
            if waiting and left <= 0:  # past LIMIT_S: what they owe is not drawn, here or anywhere
                from reports.render.figure_jobs import NOT_DRAWN

                for w in waiting:
                    self._done.update(dict.fromkeys(w.pending & wanted, NOT_DRAWN))
                    w.ok = False
                    w.pending.clear()
                self._late = True
            if not waiting or left <= 0:
                return
            ready = select.select([w.answers for w in waiting], [], [], left)[0]
            for w in waiting:
                if w.answers in ready and not self._answer(w, deadline):
                    w.ok = False
                    w.pending.clear()  # it died: the main process draws what it owed

    def _answer(self, w: _Worker, deadline: float) -> bool:
        head = _read(w.answers, _HEAD.size, deadline)
        try:
            body = _read(w.answers, _HEAD.unpack(head)[0], deadline) if head else b""
            number, png = pickle.loads(body) if body else (None, None)
        except (ValueError, pickle.UnpicklingError, EOFError, struct.error):
            return False
        if number is None:
            return False
        self._done[int(number)] = str(png)
        w.pending.discard(int(number))
        return True


def _serve(commands: int, answers: int, helper_commands: int, helper_answers: int) -> None:
    """The process: matplotlib's base now, pyplot and the helper at `warm` (or the first job)."""
    # the main process is importing numpy and pyarrow on one core meanwhile; the other is idle
    import matplotlib  # noqa: F401

    helper = 0
    while head := _read(commands, _HEAD.size, None):
        msg = pickle.loads(_read(commands, _HEAD.unpack(head)[0], None))
        if not helper:
            from reports.render import plots

            plots.warm_up()
            helper = os.fork()  # warm: the helper needs no import of its own
            if helper == 0:
                os.close(commands)
                os.close(answers)
                _draw_loop(helper_commands, helper_answers)
                return
            os.close(helper_commands)
            os.close(helper_answers)
        if msg[0] == "job":
            _draw(answers, msg[1], msg[2])
    if helper:
        os.waitpid(helper, 0)  # it leaves at the end of its own input


def _draw_loop(commands: int, answers: int) -> None:
    while head := _read(commands, _HEAD.size, None):
        msg = pickle.loads(_read(commands, _HEAD.unpack(head)[0], None))
        _draw(answers, msg[1], msg[2])


def _draw(answers: int, number: int, data: bytes) -> None:
    fn, args = pickle.loads(data)
    out = pickle.dumps((number, fn(*args)), protocol=pickle.HIGHEST_PROTOCOL)
    _write(answers, _HEAD.pack(len(out)) + out)


def _write(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view[: 1 << 20]) :]


def _read(fd: int, n: int, deadline: float | None) -> bytes:
    """n bytes from fd; fewer only at its end or past the deadline."""
    chunks, left = [], n
    while left:
        if deadline is not None:
            wait = deadline - time.monotonic()
            if wait <= 0 or not select.select([fd], [], [], wait)[0]:
                break
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
