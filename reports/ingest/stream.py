"""`stoker import` of an nccl-tests log too large to hold: read twice, held never.

A 250 MB log was read whole, split into lines, parsed into a list of every record and then
written with one fsync per record: over 500 s and 4.5 GB before it was stopped. Here a log
over STREAM_BYTES is read line by line twice: once for its run id (the hash of its text, the
same as importers.run_id_for gives for the whole text, so a second import is still seen as
one), once to parse, each record written as it is parsed into a spool file (anonymous, in
the temp dir); the spool is appended to DIR/net.jsonl only once every file of the command
has been read, so a bad file still imports nothing. Memory: one table of the log.
"""

from __future__ import annotations

import codecs
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from reports.errors import UsageError
from reports.safe_read import open_regular

STREAM_BYTES = 32 << 20
_HEAD = 1 << 20


def _head(path: Path) -> str:
    with open_regular(path, "file to import") as fh:
        return fh.read(_HEAD).decode("utf-8", errors="replace")


def streamable(path: Path) -> bool:
    """A file too large to read whole whose start is an nccl-tests stdout log."""
    from reports.ingest import importers, nccl_tests

    try:
        if not path.is_file() or path.stat().st_size <= STREAM_BYTES:
            return False
    except OSError:
        return False
    head = _head(path)
    return (
        not head.lstrip().startswith("{")
        and not importers._is_stoker_output(head)
        and not importers._looks_like_fio(head)
        and nccl_tests.looks_like_log(head)
    )


def run_id_of(path: Path) -> str:
    """importers.run_id_for(the file's text), without holding the text."""
    h = hashlib.sha256()
    dec = codecs.getincrementaldecoder("utf-8")(errors="replace")
    with open_regular(path, "file to import") as fh:
        while chunk := fh.read(8 << 20):
            h.update(dec.decode(chunk).encode("utf-8", "replace"))
        h.update(dec.decode(b"", final=True).encode("utf-8", "replace"))
    return "import-" + h.hexdigest()[:12]


def _lines(path: Path) -> Iterator[str]:
    # binary lines end at b"\n" only, as parse_log's text.split("\n"); "\n" is never inside a
    # UTF-8 sequence, so decoding line by line gives what decoding the whole text gives
    with open_regular(path, "file to import") as fh:
        for raw in fh:
            yield raw.decode("utf-8", errors="replace").removesuffix("\n")


@dataclass(kw_only=True)
class Streamed:
    run_id: str
    count: int
    spool: IO[bytes]
    notes: list[str] = field(default_factory=list)
    manifest: dict[str, Any] = field(default_factory=dict)


def stream_log(path: Path, op: str | None) -> Streamed:
    """The log's records in a spool file; UsageError (as import_file) when none is usable."""
    from reports.ingest.importers import _mtime_utc
    from reports.ingest.nccl_tests import LogState, iter_log
    from reports.records import to_dict

    run_id = run_id_of(path)
    state = LogState()
    spool = tempfile.TemporaryFile(prefix="stoker-import-")
    count = 0
    buf: list[str] = []
    for rec in iter_log(
        _lines(path), run_id=run_id, ts=_mtime_utc(path), source_name=path.name, op=op, state=state
    ):
        buf.append(json.dumps(to_dict(rec), separators=(",", ":")))
        count += 1
        if len(buf) >= 10_000:
            spool.write(("\n".join(buf) + "\n").encode("utf-8"))
            buf.clear()
    if buf:
        spool.write(("\n".join(buf) + "\n").encode("utf-8"))
    parsed = state.parsed([], run_id, path.name)
    if not count:
        spool.close()
        raise UsageError(parsed.notes[0] if parsed.notes else f"{path}: no results in it; nothing imported")
    spool.seek(0)
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
