"""Foreign results -> records: nccl-tests logs and `-J` JSON, fio JSON or text. Files are told apart
by their content, never by their name. The IO is here (reading files); the parsing is in
`reports.ingest.nccl_tests` and `reports.shared.fio_json` (pure).

A file's run id is derived from its content (`import-<sha256[:12]>`), so importing the
same file twice, or a copy left in a results directory that was already imported, is
recognised and not counted twice.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reports.ingest import nccl_tests
from reports.ingest.sniff import is_stoker_output, looks_like_fio, mtime_utc, run_id_for
from reports.shared.errors import UsageError
from reports.shared.fio_text import FioTextError
from reports.shared.records import IO_FILE, MANIFEST_FILE, NCCL_DEBUG_DIR, NET_FILE, IoRecord, NetRecord

# Files stoker writes itself, never read back as foreign results.
OWN_FILES = frozenset(
    {
        NET_FILE,
        IO_FILE,
        MANIFEST_FILE,
        "report.md",
        "report.html",
        "verdict.json",
        "compare.md",
        "compare.html",
    }
)
_SUFFIXES = frozenset({"", ".log", ".txt", ".out", ".err", ".json", ".stdout"})
_MAX_BYTES = 256 << 20  # larger files are not test outputs
_SCAN_DEPTH = 2  # DIR and its sub-folders (e.g. DIR/nccl-tests/*.log)


@dataclass(kw_only=True, slots=True)
class Imported:
    net: list[NetRecord] = field(default_factory=list)
    io: list[IoRecord] = field(default_factory=list)
    manifests: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)  # files that gave records

    def extend(self, other: Imported) -> None:
        self.net += other.net
        self.io += other.io
        self.manifests += other.manifests
        self.notes += other.notes
        self.sources += other.sources


def _fio(text: str, *, run_id: str, source_name: str) -> tuple[list[IoRecord], str | None]:
    """fio JSON through the iobench parser; imported lazily so that reports works without it."""
    try:
        mod = importlib.import_module("reports.ingest.fio_records")
    except ImportError:
        return [], f"{source_name}: fio JSON found but this stoker has no fio parser yet; skipped"
    notes: list[str] = []
    try:
        recs = list(mod.records_from_fio_output(text, run_id=run_id, source_name=source_name, notes=notes))
        return recs, "; ".join(notes) or None
    except FioTextError as exc:  # fio's text output with a line that does not read
        return [], f"{source_name}: {exc}; expected fio's own output, unedited"
    except UsageError:  # no complete document: cut short, or not fio's JSON after all
        return [], (
            f"{source_name}: no complete fio JSON document in it (cut short at line {text.count(chr(10)) + 1}?); "
            "expected the whole "
            f"output of fio --output-format=json"
        )
    except _NOT_UNDERSTOOD as exc:
        return [], f"{source_name}: fio JSON not understood ({_why(exc)}); expected fio --output-format=json"


# What a parser raises on a shape it was not written for; turned into a note naming the file
# (tests/unit/test_import_total.py feeds damaged files to find the cases that reach here).
_NOT_UNDERSTOOD = (ValueError, KeyError, TypeError, AttributeError, IndexError, OverflowError, RecursionError)


def _why(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:200]


def import_text(text: str, *, source_name: str, ts: str, op: str | None = None) -> Imported | None:
    """Records from one file's text; None when it is neither nccl-tests nor fio output."""
    if is_stoker_output(text):
        return None
    run_id = run_id_for(text)
    out = Imported()
    if looks_like_fio(text):
        recs, note = _fio(text, run_id=run_id, source_name=source_name)
        out.io += recs
        out.notes += [note] if note else []
        if recs:
            out.sources.append(source_name)
        return out
    try:
        parsed = nccl_tests.parse_text(text, run_id=run_id, ts=ts, source_name=source_name, op=op)
    except _NOT_UNDERSTOOD as exc:
        out.notes.append(
            f"{source_name}: nccl-tests output not understood ({_why(exc)}); expected an "
            "nccl-tests stdout log or -J JSON"
        )
        return out
    if parsed is None:
        return None
    out.net += parsed.records
    out.notes += parsed.notes
    # NCCL's own lines where no table gave records (none printed, or the run died before it)
    told = not parsed.records and not parsed.refused and "nccl_debug" in parsed.manifest
    if parsed.records or told:
        out.manifests.append(parsed.manifest)
        out.sources.append(source_name)
    if told:
        out.notes.append(
            f"{source_name}: no nccl-tests table in it; NCCL's own lines read (reports/ingest/nccl_debug.py)"
        )
    elif not parsed.records and not parsed.notes:
        out.notes.append(f"{source_name}: nccl-tests output with no result rows (did the test finish?)")
    return out


def _read(path: Path) -> str:
    from reports.shared.safe_read import read_bytes  # a FIFO, device or /dev/zero link is refused

    return read_bytes(path, "file to import").decode("utf-8", errors="replace")


def import_file(path: str | os.PathLike[str], op: str | None = None) -> Imported:
    """One file named by the user: unreadable or unknown is an error (exit 2)."""
    p = Path(path)
    if not p.is_file():
        raise UsageError(f"{p}: no such file (give nccl-tests logs or -J JSON, or fio output: JSON or text)")
    text = _read(p)
    if is_stoker_output(text):
        raise UsageError(
            f"{p}: this is stoker's own output; its records are in the net.jsonl of its --out directory"
        )
    got = import_text(text, source_name=p.name, ts=mtime_utc(p), op=op)
    if got is None:
        raise UsageError(
            f"{p}: neither an nccl-tests log/JSON nor fio output (JSON or text); nothing imported"
        )
    if not got.net and not got.io and not got.manifests:  # every line unusable: say the first reason
        raise UsageError(got.notes[0] if got.notes else f"{p}: no results in it; nothing imported")
    return got


def candidates(directory: Path, every_size: bool = False) -> list[Path]:
    """Files in `directory` (and its sub-folders) that could hold foreign results, sorted;
    those over _MAX_BYTES left out unless `every_size`."""
    found: list[Path] = []
    base_depth = len(directory.parts)
    for root, dirs, files in os.walk(directory):
        deep = len(Path(root).parts) - base_depth >= _SCAN_DEPTH - 1
        # DIR/nccl-debug: stoker's own runs' NCCL lines (reports/ingest/nccl_debug_files.py)
        dirs[:] = [] if deep else sorted(d for d in dirs if not d.startswith(".") and d != NCCL_DEBUG_DIR)
        for name in files:
            p = Path(root) / name
            if name in OWN_FILES or name.startswith(".") or p.suffix.lower() not in _SUFFIXES:
                continue
            if p.is_file() and not p.is_symlink() and (every_size or p.stat().st_size <= _MAX_BYTES):
                found.append(p)
    return sorted(found)


def _too_large(directory: Path, known: set[str]) -> list[str]:
    """A note for each file over _MAX_BYTES whose start is an nccl-tests log or fio JSON and
    that is not imported yet: `stoker report` does not read it (`stoker import` streams it)."""
    from reports.ingest.stream import head_text, run_id_of, streamable

    notes = []
    for p in candidates(directory, every_size=True):
        size = p.stat().st_size
        if size <= _MAX_BYTES:
            continue
        try:
            head = head_text(p)
            if not (looks_like_fio(head) or streamable(p)) or run_id_of(p) in known:
                continue
        except (OSError, UsageError):
            continue
        notes.append(
            f"{p.relative_to(directory)}: {size / 1e6:,.1f} MB, more than the {_MAX_BYTES / 1e6:,.1f} MB "
            f"`stoker report` reads; not judged: run `stoker import {p} --out {directory}` (it streams it)"
        )
    return notes


def import_dir(directory: str | os.PathLike[str], known_run_ids: Iterable[str] = ()) -> Imported:
    """Every foreign result in a results directory; other files are left alone silently.
    Files whose run id is already among the directory's records were imported before."""
    d = Path(directory)
    known = set(known_run_ids)
    out = Imported()
    for p in candidates(d):
        try:
            text = _read(p)
        except (OSError, UsageError):
            out.notes.append(f"{p.relative_to(d)}: unreadable; skipped")
            continue
        if run_id_for(text) in known:
            continue
        got = import_text(text, source_name=str(p.relative_to(d)), ts=mtime_utc(p))
        if got is not None:
            out.extend(got)
    out.notes += _too_large(d, known)
    return out
