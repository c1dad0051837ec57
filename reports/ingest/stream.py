"""`stoker import` of an nccl-tests log too large to hold: read twice, held never.

A 250 MB log was read whole, split into lines, parsed into a list of every record and then
written with one fsync per record: over 500 s and 4.5 GB before it was stopped. Here a log
over STREAM_BYTES is read line by line twice: once for its run id (the hash of its text, the
same as sniff.run_id_for gives for the whole text, so a second import is still seen as
one), once to parse, each record's JSON line written as it is parsed into spool files
(anonymous, in the temp dir; one per part of the log, the parts parsed on every core:
reports/ingest/stream_chunks.py); the spools are appended to DIR/net.jsonl only once every
file of the command has been read, so a bad file still imports nothing. Memory: one table
of the log per core.
"""

from __future__ import annotations

import codecs
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from reports.shared.errors import UsageError
from reports.shared.safe_read import open_regular

STREAM_BYTES = 32 << 20
_HEAD = 1 << 20


def head_text(path: Path) -> str:
    """The file's first _HEAD bytes as text."""
    with open_regular(path, "file to import") as fh:
        return fh.read(_HEAD).decode("utf-8", errors="replace")


def streamable(path: Path) -> bool:
    """A file too large to read whole whose start is an nccl-tests stdout log."""
    from reports.ingest import nccl_log, sniff

    try:
        if not path.is_file() or path.stat().st_size <= STREAM_BYTES:
            return False
    except OSError:
        return False
    head = head_text(path)
    return (
        not head.lstrip().startswith("{")
        and not sniff.is_stoker_output(head)
        and not sniff.looks_like_fio(head)
        and nccl_log.log_in_blocks(_blocks(path))
    )


def _blocks(path: Path) -> Iterator[str]:
    """The file's text in blocks of _HEAD bytes (the table may be anywhere in it)."""
    dec = codecs.getincrementaldecoder("utf-8")(errors="replace")
    with open_regular(path, "file to import") as fh:
        while chunk := fh.read(_HEAD):
            yield dec.decode(chunk)
    yield dec.decode(b"", final=True)


def run_id_of(path: Path) -> str:
    """sniff.run_id_for(the file's text), without holding the text."""
    from reports.ingest.stream_chunks import scan

    return scan(path)[0]


@dataclass(kw_only=True)
class Streamed:
    run_id: str
    count: int
    spool: IO[bytes]
    notes: list[str] = field(default_factory=list)
    manifest: dict[str, Any] = field(default_factory=dict)


def stream_log(path: Path, op: str | None) -> Streamed:
    """The log's records in a spool file; UsageError (as import_file) when none is usable."""
    from reports.ingest import stream_chunks
    from reports.ingest.sniff import mtime_utc

    with open_regular(path, "file to import") as fh:
        size = os.fstat(fh.fileno()).st_size
    # parts cut at the start of a test, parsed on every core (reports/ingest/stream_chunks.py)
    cut_list = stream_chunks.cuts(path, size, stream_chunks.workers())
    run_id, first_lines = stream_chunks.scan(path, [at for at, _ in cut_list])
    count, state, spool = stream_chunks.parse(
        path, cut_list, first_lines, run_id=run_id, ts=mtime_utc(path), source_name=path.name, op=op
    )
    parsed = state.parsed([], run_id, path.name)
    if not count:
        spool.close()
        raise UsageError(parsed.notes[0] if parsed.notes else f"{path}: no results in it; nothing imported")
    return Streamed(run_id=run_id, count=count, spool=spool, notes=parsed.notes, manifest=parsed.manifest)


def append_spool(spool: IO[bytes], target: Path) -> None:
    """Append the spool to `target` (never through a symlink), one fsync at the end."""
    fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        while chunk := spool.read(8 << 20):
            os.write(fd, chunk)
        os.fsync(fd)
    finally:
        os.close(fd)
        spool.close()
