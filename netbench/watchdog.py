"""A watchdog thread in every rank: a collective that exceeds --timeout, or Ctrl-C while
the main thread is stuck inside one, ends the process with exit 3. Records are fsynced
one by one as they are written, so nothing measured is lost by exiting hard.

A soak defers the signals to its own handler (`defer_signals`): SIGTERM and SIGINT then let
the pass in flight finish (netbench/soak.py); --timeout still ends a step that hangs, and a
grace, when given, ends a pass that is not over that long after the first signal (a
scheduler's KILL follows its TERM: the job needs the rest of that time to close)."""

from __future__ import annotations

import os
import select
import signal
import sys
import threading
import time

ABORT_EXIT = 3


class Watchdog:
    def __init__(self, timeout_s: float, speak: bool, where: str) -> None:
        self._timeout = timeout_s
        self._speak = speak  # only global rank 0 prints
        self.where = where  # e.g. "records so far are kept in DIR"
        self._lock = threading.Lock()
        self._deadline: float | None = None
        self._what = ""
        self._deferred = False  # a soak's handler takes SIGTERM/SIGINT: the pass in flight finishes
        self._grace: float | None = None  # ... for at most this long after the first signal
        self._stop_by: float | None = None
        self._told = False
        # A blocked collective never returns to the interpreter, so Python's SIGINT
        # handler would not run; the wakeup fd is written by the C-level handler at once.
        self._rfd, self._wfd = os.pipe()
        os.set_blocking(self._wfd, False)
        self._prev_wfd: int | None = None
        self._closed = threading.Event()
        try:
            self._prev_wfd = signal.set_wakeup_fd(self._wfd)
        except ValueError:  # not the main thread (embedded use): no Ctrl-C watch
            pass
        threading.Thread(target=self._watch, name="stoker-net-watchdog", daemon=True).start()

    def arm(self, what: str) -> None:
        with self._lock:
            self._what = what
            self._deadline = time.monotonic() + self._timeout

    def disarm(self) -> None:
        with self._lock:
            self._deadline = None

    def defer_signals(self, on: bool, grace_s: float | None = None) -> None:
        with self._lock:
            self._deferred, self._grace, self._stop_by = on, grace_s, None

    def _die(self, line: str) -> None:
        if self._speak:
            sys.stdout.flush()
            sys.stderr.write(f"stoker net: {line}; {self.where}\n")
            sys.stderr.flush()
        os._exit(ABORT_EXIT)

    def close(self) -> None:
        """The sweep is over: the process's signal wakeup fd is given back and the thread
        ends, so a process that goes on (a test, an embedding program) keeps its own handling
        of SIGINT and SIGTERM instead of this watchdog's exit 3."""
        if self._closed.is_set():
            return
        self._closed.set()
        if self._prev_wfd is not None:
            try:
                signal.set_wakeup_fd(self._prev_wfd)
            except ValueError:  # not the main thread: the wakeup fd stays until the process ends
                return
        os.close(self._wfd)

    def _watch(self) -> None:
        while not self._closed.is_set():
            ready, _, _ = select.select([self._rfd], [], [], 0.2)
            if ready:
                sig = os.read(self._rfd, 64)
                if signal.SIGINT in sig or signal.SIGTERM in sig:
                    self._stop_asked()
            with self._lock:
                late = self._deadline is not None and time.monotonic() > self._deadline
                over = self._deferred and self._stop_by is not None and time.monotonic() > self._stop_by
                what = self._what
            if late:
                self._die(f"timeout: {what} did not finish within {self._timeout:g} s (--timeout)")
            if over:
                self._die(
                    f"interrupted: the pass in flight did not finish within {self._grace:g} s of the stop"
                )

    def _stop_asked(self) -> None:
        with self._lock:
            deferred, first = self._deferred, not self._told
            self._told = True
            if deferred and self._stop_by is None and self._grace is not None:
                self._stop_by = time.monotonic() + self._grace
        if not deferred:
            self._die("interrupted")
        if self._speak and first:
            within = f" (within {self._grace:g} s)" if self._grace is not None else ""
            sys.stderr.write(
                f"stoker net: stop asked; the pass in flight finishes{within}, then the soak stops\n"
            )
            sys.stderr.flush()
