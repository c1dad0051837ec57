"""The pyarrow parse of net.jsonl for reports/table/read.py (the column path): the line check, the
contract's required fields at their types, and the parse started early in a thread.

`stoker report` starts parsing net.jsonl before it imports pandas and the judging and rendering
modules (~1 s of Python on this machine's cores): pyarrow parses without the GIL, so the two
overlap. read_records takes the result, and runs the line check on its own thread meanwhile;
a file never read leaves a daemon thread behind.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from reports.shared.records import NET_FIGURES, NET_FILE, NET_OPTIONAL, NET_REQUIRED

# Columns every row must have (the contract's minimum, NetRecord's fields without a default), by
# arrow type family: the text ones here, `hosts` a list of text, the figures numbers.
STRINGS = tuple(n for n in NET_REQUIRED if n != "hosts" and n not in dict(NET_FIGURES))


def parse(path: Path) -> tuple[int, Any] | None:
    """(lines, pyarrow table) of a file the column reader may take, else None. Only C code
    runs here (numpy's scan, pyarrow's parser): the caller imports what both need first."""
    lines = clean_lines(path)
    if lines is None:
        return None
    table = read_json(path)
    return None if table is None else (lines, table)


# A file this large is parsed in two halves at once (the second on the calling thread), each
# on one arrow thread: at 10,000 nodes (870 MB) the parse took ~5 s of wall time alone, ~3 s in
# halves, and peaked at ~1.1-1.3 GB, where arrow's own threads (which read blocks ahead of the
# parse) peaked at ~1.9 GB. Below, one parse: a thread costs more than it saves.
SPLIT_BYTES = 64 << 20


def read_json(path: Path) -> Any:
    """The pyarrow table of a JSONL file, None when pyarrow refuses it: two halves cut at a
    line's end, parsed at once and joined, when they join as they are (a field the same type
    in both, or absent or all null in one); else the whole file, as one parse: the halves
    are only ever a faster way to the same table."""
    import pyarrow as pa

    with open(path, "rb", buffering=0) as fh:
        cut = _middle_line(fh.fileno())
        if cut is None:
            return _parse_stream(pa.OSFile(str(path)))
        box: list[Any] = []

        def first() -> None:
            try:
                box.append(_parse_stream(pa.PythonFile(_Head(fh.fileno(), cut), mode="r")))
            except BaseException as exc:  # noqa: BLE001 - raised on the calling thread
                box.append(exc)

        t = threading.Thread(target=first, name="stoker-parse-head", daemon=True)
        t.start()
        try:
            tail = pa.OSFile(str(path))
            tail.seek(cut)
            second = _parse_stream(tail)
        finally:
            t.join()  # the first half reads through fh: it ends before fh is closed
    if isinstance(box[0], BaseException):
        raise box[0]
    if box[0] is not None and second is not None:
        try:
            return pa.concat_tables([box[0], second], promote_options="default")
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            pass  # the halves inferred a field differently: the whole file decides
    return _parse_stream(pa.OSFile(str(path)))


def _parse_stream(stream: Any) -> Any:
    """The pyarrow table of the JSON lines `stream` holds from where it stands, None when
    pyarrow refuses them. In blocks: the text is never held whole; on one arrow thread."""
    import pyarrow as pa
    import pyarrow.json as pj

    try:
        with stream:
            return pj.read_json(
                stream,
                read_options=pj.ReadOptions(block_size=16 << 20, use_threads=False),
                parse_options=pj.ParseOptions(explicit_schema=required_schema()),
                memory_pool=parse_pool(),
            )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def _middle_line(fd: int) -> int | None:
    """The offset just past the first newline at or after the middle of a file of at least
    SPLIT_BYTES, if one ends before the file does; else None (one parse)."""
    size = os.fstat(fd).st_size
    at = size // 2
    if size < SPLIT_BYTES:
        return None
    while window := os.pread(fd, 1 << 20, at):
        if (nl := window.find(b"\n")) >= 0:
            return at + nl + 1 if at + nl + 1 < size else None
        at += len(window)
    return None


class _Head:
    """The bytes of a file up to `end`, read as a Python file object (the first half's stream:
    arrow's own file reads to the end)."""

    closed = False

    def __init__(self, fd: int, end: int) -> None:
        self.fd, self.pos, self.end = fd, 0, end

    def read(self, n: int = -1) -> bytes:
        n = self.end - self.pos if n < 0 else min(n, self.end - self.pos)
        out = os.pread(self.fd, n, self.pos)
        self.pos += len(out)
        return out

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def close(self) -> None:
        self.closed = True


def parse_pool() -> Any:
    """The memory pool the parse allocates from: jemalloc where pyarrow is built with it, else
    pyarrow's default. The parse allocates and frees each block's intermediate arrays; on the
    default pool (mimalloc) that cost ~3.5 s of system time on an 870 MB file (pages handed
    back and faulted in again), on jemalloc ~0.6-1 s, for the same table. Only the parse: on
    jemalloc the frame built after it peaked ~0.3 GB higher."""
    import pyarrow as pa

    try:
        return pa.jemalloc_memory_pool()
    except NotImplementedError:  # a pyarrow built without jemalloc (its default pool then)
        return None


def required_schema() -> Any:
    """The contract's required fields at their types, so the parser infers only the optional
    ones (a value of another type fails the parse: the line reader then names its line). ts is
    a string: inferred, an ISO date becomes a timestamp."""
    import pyarrow as pa

    fields = [(n, pa.string()) for n in STRINGS] + [("hosts", pa.list_(pa.string()))]
    fields += [(n, pa.int64() if integer else pa.float64()) for n, integer in NET_FIGURES]
    return pa.schema(fields)


# -- the parse started early ----------------------------------------------------------------
NOT_PREFETCHED = object()
_prefetched: dict[str, tuple[threading.Thread, list[Any]]] = {}


def prefetch(directory: str | os.PathLike[str], then: Callable[[], None] | None = None) -> None:
    """Start parsing DIR/net.jsonl in a thread (nothing when pyarrow is missing or the file is
    not a regular file: read_records then reads, and refuses, as it would have). `then` is
    called on that thread when pyarrow is done (report_cmd: the figure process may start its
    imports: the cores are free)."""
    path = Path(directory) / NET_FILE
    try:
        from reports.shared.safe_read import check_regular

        check_regular(path, "records file")  # a FIFO would block the thread for ever
        if not path.is_file():
            return
        import numpy  # noqa: F401 - imported here, not in the thread: no two threads import at once
        import pyarrow.json  # noqa: F401
    except Exception:  # noqa: BLE001 - read_records says what is wrong, in its own words
        return
    box: list[Any] = []

    def work() -> None:
        try:
            box.append(read_json(path))
        except BaseException as exc:  # noqa: BLE001 - handed to the reader, raised there
            box.append(exc)
        if then is not None:
            then()

    t = threading.Thread(target=work, name="stoker-parse-net", daemon=True)
    _prefetched[str(path)] = (t, box)
    t.start()


def forget_prefetched(directory: str | os.PathLike[str]) -> None:
    """Drop a parse prefetch started that no reader took (the command stopped before reading
    DIR/net.jsonl: another records file refused first); its thread ends on its own."""
    _prefetched.pop(str(Path(directory) / NET_FILE), None)


def take_prefetched(path: Path) -> Any:
    """What parse(path) gives, from the parse started by prefetch: the line check runs here,
    on the caller's thread, while pyarrow finishes (run in the parse thread, its numpy calls
    waited for the GIL behind the imports: 0.2 s of work took 1.2 s before pyarrow began)."""
    got = _prefetched.pop(str(path), None)
    if got is None:
        return NOT_PREFETCHED
    t, box = got
    lines = clean_lines(path)
    t.join()
    if not box:
        return NOT_PREFETCHED
    if lines is None:
        return None  # what parse() gives: the line reader names the bad line
    if isinstance(box[0], BaseException):
        raise box[0]
    return None if box[0] is None else (lines, box[0])


def clean_lines(path: Path, chunk: int = 16 << 20) -> int | None:
    """The number of lines of a file the column reader may take, else None. Line numbers are
    row numbers + 1 only without blank lines or carriage returns; a missing final newline is a
    line cut short by a crash (the line reader says so). Read in chunks into one buffer, never
    whole; the newlines found with numpy (half the time of bytes searches on a 300 MB file).
    The same pass hashes the file for the verdict's ledger of inputs (reports.pipeline.
    input_digests): the file is read once, and hashed while pyarrow parses it."""
    import hashlib

    import numpy as np

    from reports.shared.safe_write import remember_sha256

    lines, prev = 0, 10  # as if a line ended before the file: a leading newline is a blank line
    buf = bytearray(chunk)
    view = memoryview(buf)
    digest = hashlib.sha256()
    with open(path, "rb", buffering=0) as fh:
        before = os.fstat(fh.fileno())
        while n := fh.readinto(buf):
            if buf.find(b"\r", 0, n) >= 0:
                return None
            a = np.frombuffer(buf, np.uint8, n)
            nl = np.flatnonzero(a == 10)
            if len(nl) and ((prev == 10 and nl[0] == 0) or bool((np.diff(nl) == 1).any())):
                return None  # a blank line: two newlines in a row, within a chunk or across two
            lines += len(nl)
            prev = int(a[-1])
            digest.update(view[:n])  # hashlib lets go of the GIL: the parse thread goes on
        remember_sha256(before, os.fstat(fh.fileno()), digest.hexdigest())
    return lines if lines and prev == 10 else None


def typed(table: Any) -> bool:
    """Every required column present, without nulls, of the type the contract says; else
    the line reader gives each bad line its own reason."""
    import pyarrow as pa

    t = table.schema
    for name in (*STRINGS, *(n for n, _ in NET_FIGURES), "hosts"):
        if name not in t.names or table.column(name).null_count:
            return False
    if not all(pa.types.is_string(t.field(n).type) for n in STRINGS):
        return False
    for name, integer in NET_FIGURES:
        kind = t.field(name).type
        if not (pa.types.is_int64(kind) or (not integer and pa.types.is_floating(kind))):
            return False
    # optional statistics may be null on every line (imported results carry none)
    optional = [t.field(n).type for n in NET_OPTIONAL if n in t.names]
    if not all(pa.types.is_floating(x) or pa.types.is_int64(x) or pa.types.is_null(x) for x in optional):
        return False
    hosts = t.field("hosts").type
    if not (pa.types.is_list(hosts) and pa.types.is_string(hosts.value_type)):
        return False
    # a null among the names (["n1", null]): the line reader says "hosts is not a list of host names"
    return not any(chunk.values.null_count for chunk in table.column("hosts").chunks)
