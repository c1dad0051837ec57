"""A large nccl-tests log parsed on every core: cut into parts at the start of a test, each
part parsed by a worker process into its own spool, the spools read back in order.

Parsing is nearly the whole cost of a streamed import, all of it Python: per 25 MB of a dense
log on the 2-core bed, ~0.6 s of CPU reading lines into tables, ~0.4 s the rows' figures,
~0.3 s their JSON; hashing the file for its run id, ~0.1 s, stays before it. On 2 cores a
250 MB log took 14.5-16.3 s against 17.7-20.9 s on one, with the cores shared with other work
(the parts divide the parse among the cores; what that gains depends on their being free).
Nothing of the output may change with the cut, so a part starts only at a line where a
sequential reading starts a new table *whatever came before it*:

- a comment line ('#' first, never a row) that the reader takes for "Collective test
  starting: X" (it starts a new table when the one before has rows or a program) or for the
  parameter line "... warmup iters: N iters: M" (a new table when the one before has rows);
- line numbers (the notes name lines) are counted from the file's start, in the pass that
  hashes the file for its run id;
- what a part leaves besides records (notes, skipped rows, versions, ranks, averages) is
  added up in order (LogState.extend), as one reading of the whole would have gathered it.

Whether the table before a cut had rows (or a program) is only known once the part before
is parsed: each part reports the table it ended in, and a part whose cut turns out not to
start a new table (a test that printed no rows just before it) is parsed again here, in
order, from that table — the output is the sequential reading's in every case.
"""

from __future__ import annotations

import codecs
import hashlib
import io
import multiprocessing
import os
import signal
import tempfile
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from reports.ingest import nccl_log
from reports.ingest import nccl_tests as nt
from reports.shared.safe_read import open_regular

PART_BYTES = 16 << 20  # the smallest part worth a process; a smaller log is read in one
_PARTS_PER_WORKER = 4  # parts of unequal cost (noise, damaged rows) even out over several
_FIND_BYTES = 1 << 20  # read at a time while looking for a cut


def workers() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _find_cut(fh: IO[bytes], at: int, stop: int) -> tuple[int, str] | None:
    """The offset and kind of the first cut line starting after `at` and before `stop`."""
    fh.seek(at)
    pos, rest = at, b""
    while pos < stop:
        block = fh.read(min(_FIND_BYTES, stop - pos))
        if not block:
            return None
        data = rest + block
        base = pos - len(rest)
        pos += len(block)
        lines = data.split(b"\n")
        rest = lines.pop()  # not yet whole
        offset = base
        for i, raw in enumerate(lines):
            start, offset = offset, offset + len(raw) + 1
            if (i == 0 and base == at and at > 0) or not raw:
                continue  # the line `at` falls in may have begun before it
            text = raw.decode("utf-8", errors="replace")
            m = nccl_log.PREFIX.match(text)
            kind = nccl_log.cut_kind((text[m.end() :] if m else text).strip())
            if kind and start > at:
                return start, kind
    return None


def cuts(path: Path, size: int, n_workers: int) -> list[tuple[int, str]]:
    """Where the parts start: (0, '') and one cut about every size / parts bytes."""
    parts = min(n_workers * _PARTS_PER_WORKER, size // PART_BYTES)
    out: list[tuple[int, str]] = [(0, "")]
    if n_workers < 2 or parts < 2:
        return out
    step = size // parts
    with open_regular(path, "file to import") as fh:
        for k in range(1, parts):
            at = max(k * step, out[-1][0])
            if (cut := _find_cut(fh, at, min((k + 1) * step, size))) is not None:
                out.append(cut)
    return out


def scan(path: Path, marks: Sequence[int] = ()) -> tuple[str, list[int]]:
    """The run id of the file's text (sniff.run_id_for, without holding the text) and
    the number of the line starting at each offset in `marks` (sorted)."""
    h = hashlib.sha256()
    dec = codecs.getincrementaldecoder("utf-8")(errors="replace")
    lines, pos, newlines = [], 0, 0
    todo = list(marks)
    with open_regular(path, "file to import") as fh:
        while chunk := fh.read(8 << 20):
            while todo and todo[0] <= pos + len(chunk):
                lines.append(newlines + chunk.count(b"\n", 0, todo.pop(0) - pos) + 1)
            if todo:
                newlines += chunk.count(b"\n")
            pos += len(chunk)
            if chunk.isascii() and not dec.getstate()[0]:
                h.update(chunk)  # what decoding and encoding it again gives, at a fifth of the cost
            else:
                h.update(dec.decode(chunk).encode("utf-8", "replace"))
        h.update(dec.decode(b"", final=True).encode("utf-8", "replace"))
    lines += [newlines + 1] * len(todo)  # marks at the end (none: cuts are line starts)
    return "import-" + h.hexdigest()[:12], lines


def _lines(path: Path, start: int, end: int | None) -> Iterator[str]:
    # lines end at "\n" only, as parse_log's text.split("\n"); read in blocks through the
    # incremental decoder, which decodes a sequence cut by a block's end as decoding the
    # whole text would; a part starts at a line start, where no UTF-8 sequence is open
    dec = codecs.getincrementaldecoder("utf-8")(errors="replace")
    rest = ""
    with open_regular(path, "file to import") as fh:
        fh.seek(start)
        left = None if end is None else end - start  # None: to the end of the file
        while left != 0 and (chunk := fh.read(4 << 20 if left is None else min(4 << 20, left))):
            if left is not None:
                left -= len(chunk)
            lines = (rest + dec.decode(chunk)).split("\n")
            rest = lines.pop()
            yield from lines
    rest += dec.decode(b"", final=True)
    if rest:
        yield rest


@dataclass(frozen=True, kw_only=True)
class Part:
    path: str
    start: int
    end: int | None  # None: to the end of the file (the last part)
    first_line: int
    spool_fd: int  # the spool this part's lines go to (inherited by a forked worker)
    run_id: str
    ts: str
    source_name: str
    op: str | None


@dataclass(kw_only=True)
class PartResult:
    count: int
    state: nt.LogState  # .table: the table read at the part's last line, None when it has rows
    ended_with_rows: bool


def parse_part(part: Part, table: nccl_log.Section | None = None) -> PartResult:
    """One part's records as JSON lines written to its spool (from its start: a redo),
    starting within `table` (None: a new one)."""
    state = nt.LogState(first_line=part.first_line, table=table)
    os.lseek(part.spool_fd, 0, os.SEEK_SET)
    os.ftruncate(part.spool_fd, 0)
    count = 0
    buf: list[str] = []
    lines = nt.iter_log_lines(
        _lines(Path(part.path), part.start, part.end),
        run_id=part.run_id,
        ts=part.ts,
        source_name=part.source_name,
        op=part.op,
        state=state,
    )
    for line in lines:
        buf.append(line)
        if len(buf) >= 10_000:
            count += _write(part.spool_fd, buf)
    count += _write(part.spool_fd, buf)
    rows = bool(state.table and state.table.rows)
    if rows:
        state.table = None  # its rows are given; the next part needs only to know it had them
    return PartResult(count=count, state=state, ended_with_rows=rows)


def _write(fd: int, buf: list[str]) -> int:
    n = len(buf)
    if n:
        data = memoryview(("\n".join(buf) + "\n").encode("utf-8"))
        while data:
            data = data[os.write(fd, data) :]
        buf.clear()
    return n


def _parse_all(parts: Sequence[Part]) -> list[PartResult]:
    """Each part parsed, in a worker process each when there are several (forked: the
    workers inherit the spools' descriptors); here, in order, when a worker died (killed
    for memory, say) or this platform cannot fork."""
    if len(parts) > 1 and "fork" in multiprocessing.get_all_start_methods():
        try:
            with ProcessPoolExecutor(
                max_workers=min(workers(), len(parts)),
                mp_context=multiprocessing.get_context("fork"),
                initializer=signal.signal,  # Ctrl-C: this process stops the workers
                initargs=(signal.SIGINT, signal.SIG_IGN),
            ) as pool:
                return list(pool.map(parse_part, parts))
        except BrokenProcessPool:
            pass
    return [parse_part(p) for p in parts]


def _starts_table(kind: str, before: PartResult) -> bool:
    """Whether the cut line starts a new table after the part `before` (see the docstring)."""
    if before.ended_with_rows:
        return True
    return kind == "start" and before.state.table is not None and bool(before.state.table.program)


def parse(
    path: Path,
    cut_list: Sequence[tuple[int, str]],
    first_lines: Sequence[int],
    *,
    run_id: str,
    ts: str,
    source_name: str,
    op: str | None,
) -> tuple[int, nt.LogState, IO[bytes]]:
    """Every part parsed (in worker processes when there are several), checked and redone
    where its cut did not start a table; (records, LogState, spool of all the lines)."""
    spools = [tempfile.TemporaryFile(prefix="stoker-import-") for _ in cut_list]
    try:
        parts = [
            Part(
                path=str(path),
                start=at,
                end=cut_list[i + 1][0] if i + 1 < len(cut_list) else None,
                first_line=first_lines[i],
                spool_fd=spools[i].fileno(),
                run_id=run_id,
                ts=ts,
                source_name=source_name,
                op=op,
            )
            for i, (at, _) in enumerate(cut_list)
        ]
        results = _parse_all(parts)
        state = nt.LogState()
        count = 0
        for i, got in enumerate(results):
            if i and not _starts_table(cut_list[i][1], results[i - 1]):
                # the part before ended in a table without rows: this part read on in it
                results[i] = got = parse_part(parts[i], table=results[i - 1].state.table)
            state.extend(got.state)
            count += got.count
        for s in spools:
            s.seek(0)
        return count, state, io.BufferedReader(_Chain(spools), buffer_size=8 << 20)
    except BaseException:
        for s in spools:
            s.close()
        raise


class _Chain(io.RawIOBase):
    """The spools read one after the other, as one file; closing it closes them all."""

    def __init__(self, files: Sequence[IO[bytes]]) -> None:
        super().__init__()
        self._files = list(files)
        self._i = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        while self._i < len(self._files):
            n = self._files[self._i].readinto(b)  # type: ignore[attr-defined]
            if n:
                return int(n)
            self._i += 1
        return 0

    def close(self) -> None:
        for f in self._files:
            f.close()
        super().close()
