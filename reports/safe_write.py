"""The one writer of stoker's output files (report.md/.html, verdict.json, compare.*).

`stoker report DIR` overwrote the user's own report.md and wrote its HTML through a
report.html symlink into another file; `stoker compare` did the same in `.`. Here a file is
written only when it does not exist yet, or when it is the very file stoker wrote there
last time — a regular file (never a symlink, FIFO or directory) whose SHA-256 is the one
recorded in the directory's ledger, `.stoker-outputs`. Ownership is decided by that
record of content, never by a file's name. Each file is written aside (O_CREAT|O_EXCL|
O_NOFOLLOW) and moved into place: a new name with link() (which never replaces anything), a
file of ours with rename() (which replaces the directory entry, never writes through it).
Every target is checked before the first is written, so a refusal leaves nothing half done.
Failures (a read-only mount, a foreign file) are one UsageError line.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import stat
from collections.abc import Mapping
from pathlib import Path

from reports.errors import UsageError

LEDGER = ".stoker-outputs"
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read_nofollow(path: Path, limit: int = 64 << 20) -> bytes | None:
    """The bytes of a regular file at `path`, not following a symlink; None otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read(limit + 1)
    finally:
        os.close(fd)


def ledger(directory: Path) -> dict[str, str]:
    data = _read_nofollow(directory / LEDGER)
    try:
        got = json.loads(data) if data else {}
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in got.items()} if isinstance(got, dict) else {}


def _why_not(directory: Path, name: str, ours: Mapping[str, str]) -> str:
    """Why `directory/name` may not be (over)written, or "" when it may."""
    target = directory / name
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        return ""
    except OSError as exc:
        return exc.strerror or str(exc)
    if stat.S_ISLNK(st.st_mode):
        return "is a symlink stoker did not make"
    if not stat.S_ISREG(st.st_mode):
        return "exists and is not a regular file"
    data = _read_nofollow(target)
    if data is None or ours.get(name) != _sha(data):
        return "exists and was not written by stoker (or was changed since)"
    return ""


def _write_aside(directory: Path, name: str, data: bytes) -> Path:
    tmp = directory / f".stoker-tmp-{secrets.token_hex(6)}-{name}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        with os.fdopen(fd, "wb", closefd=False) as fh:
            fh.write(data)
    except BaseException:  # a full disk, say: the part written aside goes too
        tmp.unlink(missing_ok=True)
        raise
    finally:
        os.close(fd)
    return tmp


def _link_or_create(tmp: Path, target: Path, data: bytes) -> None:
    """`tmp` linked to the new name `target`; never replaces: a file made meanwhile wins.
    File systems without hard links get the same guarantee from O_EXCL."""
    try:
        os.link(tmp, target)
    except FileExistsError:
        raise
    except OSError:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | os.O_CLOEXEC, 0o644)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)


def write_outputs(directory: Path, files: Mapping[str, str], hint: str = "give another directory") -> None:
    """Write each `name: text` into `directory` under the rules above, or raise UsageError
    (before writing anything) naming the first file that may not be written."""
    directory = Path(directory)
    ours = ledger(directory)
    for name in files:
        if why := _why_not(directory, name, ours):
            raise UsageError(f"{directory / name}: {why}; move it away or {hint}")
    done = dict(ours)
    try:
        for name, text in files.items():
            data = text.encode("utf-8")
            tmp = _write_aside(directory, name, data)
            try:
                if name in ours and os.path.lexists(directory / name):
                    os.replace(tmp, directory / name)  # ours (checked above): replace the entry
                else:
                    _link_or_create(tmp, directory / name, data)
            finally:
                if tmp.exists():
                    tmp.unlink()
            done[name] = _sha(data)
        tmp = _write_aside(directory, LEDGER, (json.dumps(done, indent=1, sort_keys=True) + "\n").encode())
        try:
            os.replace(tmp, directory / LEDGER)
        finally:
            tmp.unlink(missing_ok=True)
    except FileExistsError:
        raise UsageError(f"{directory}: a file appeared while stoker wrote its outputs; {hint}") from None
    except OSError as exc:
        raise UsageError(
            f"cannot write into {directory}: {exc.strerror or exc}; {hint} (a writable one)"
        ) from None
