"""The report's figures as jobs: asked for while a page is built, drawn together when it is
done, half of them in a forked process (the drawing functions are reports/render/plots.py;
`stoker report` hands the jobs to its warm figure processes, reports/render/figure_process.py)."""

from __future__ import annotations

import json
import os
import re
import select
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from reports.render.plots import load_pyplot

Job = tuple[Callable[..., str], tuple[Any, ...]]  # a figure to draw: function, arguments


@dataclass
class Deferred:
    """Figures asked for while a page is built, drawn together when it is done (`fill`), by
    `draw` (default draw_all: half of them in a forked process, half here; `stoker report`
    hands them to its figure process). Drawing is Python under the GIL (matplotlib's
    artists), so a process, not a thread, puts the second core to work; a 1,000-node report
    spends over a second in its figures. The bytes are the same wherever a figure is drawn."""

    jobs: list[Job] = field(default_factory=list)
    draw: Callable[[Sequence[Job]], list[str]] | None = None

    def __call__(self, fn: Callable[..., str], *args: Any) -> str:
        self.jobs.append((fn, args))
        return f"\x00figure{len(self.jobs) - 1}\x00"

    def fill(self, text: str) -> str:
        """The text with each figure drawn in; an <img> whose figure was NOT_DRAWN becomes a
        note saying so."""
        pngs = (self.draw or draw_all)(self.jobs)
        text = re.sub(
            "<img [^>]*\x00figure(\\d+)\x00[^>]*>",
            lambda m: NOT_DRAWN_NOTE if pngs[int(m.group(1))] == NOT_DRAWN else m.group(0),
            text,
        )
        return re.sub("\x00figure(\\d+)\x00", lambda m: pngs[int(m.group(1))], text)


# a figure's drawing cost, relative: the halves are balanced by it
_COST = {"matrix_plot": 3, "host_grids": 2, "host_grid": 2}
CHILD_LIMIT_S = 120.0  # a child that has not answered by then is killed: its figures are not drawn
# what a figure whose process ran past its limit gives: left out, never drawn a second time
# here (that doubled the time of a report whose figure was too slow), and said in its place
NOT_DRAWN = "\x00not-drawn\x00"
NOT_DRAWN_NOTE = (
    '<p class="muted">This figure was not drawn: drawing it ran past its time limit. '
    "The tables beside it hold its figures.</p>"
)


def draw_all(jobs: Sequence[Job]) -> list[str]:
    """Each job's base64 PNG, in order (see Deferred). Without fork, with one figure, or when
    the child fails, everything is drawn in this process."""
    if len(jobs) < 2 or not hasattr(os, "fork") or (os.cpu_count() or 1) < 2:
        return [fn(*args) for fn, args in jobs]
    load_pyplot()  # matplotlib imported before the fork: the child needs no import of its own
    order = sorted(range(len(jobs)), key=lambda i: -_COST.get(jobs[i][0].__name__, 1))
    halves: tuple[list[int], list[int]] = ([], [])
    load = [0, 0]
    for i in order:  # the heaviest first, each to the lighter half
        side = 0 if load[0] <= load[1] else 1
        halves[side].append(i)
        load[side] += _COST.get(jobs[i][0].__name__, 1)
    mine, theirs = halves
    out: list[str | None] = [None] * len(jobs)
    collect = _in_child(jobs, theirs) if theirs else None
    for i in mine:
        out[i] = jobs[i][0](*jobs[i][1])
    done = collect() if collect else {}
    for i in theirs:
        out[i] = done[i] if i in done else jobs[i][0](*jobs[i][1])
    return [x or "" for x in out]


def _in_child(jobs: Sequence[Job], which: list[int]) -> Callable[[], dict[int, str]]:
    """Fork a process drawing `which`; returns a function that collects its figures ({} when
    the child failed: the caller draws them; NOT_DRAWN each when it ran past CHILD_LIMIT_S)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: draw, write JSON to the pipe, leave without Python's exit handlers
        code = 1
        try:
            os.close(r)
            data = json.dumps({str(i): jobs[i][0](*jobs[i][1]) for i in which}).encode()
            with os.fdopen(w, "wb") as fh:
                fh.write(data)
            code = 0
        finally:
            os._exit(code)
    os.close(w)

    def collect() -> dict[int, str]:
        chunks, deadline = [], time.monotonic() + CHILD_LIMIT_S
        with os.fdopen(r, "rb") as fh:
            while (left := deadline - time.monotonic()) > 0 and select.select([fh], [], [], left)[0]:
                chunk = os.read(fh.fileno(), 1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
        try:
            if time.monotonic() >= deadline:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
                return dict.fromkeys(which, NOT_DRAWN)  # its time is spent: not drawn again here
            _, status = os.waitpid(pid, 0)
            return {int(k): str(v) for k, v in json.loads(b"".join(chunks)).items()} if status == 0 else {}
        except (OSError, ValueError):
            return {}

    return collect
