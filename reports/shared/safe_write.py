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
from collections.abc import Iterable, Mapping
from pathlib import Path

from reports.shared.errors import UsageError

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


# {file identity: SHA-256} of files a reader hashed as it read them (reports/table/parse.py
# hashes net.jsonl in its line check's pass: a 10,000-node run's is ~800 MB, read once, not twice)
_DIGESTS: dict[tuple[int, ...], str] = {}


def _identity(st: os.stat_result) -> tuple[int, ...]:
    """What tells one version of a file from another: the same inode, size, mtime and ctime."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def remember_sha256(before: os.stat_result, after: os.stat_result, digest: str) -> None:
    """Keep the digest of a regular file hashed in one read (its stat before and after that
    read, which must be the same: a file written meanwhile is hashed again when asked)."""
    if stat.S_ISREG(before.st_mode) and _identity(before) == _identity(after):
        _DIGESTS[_identity(after)] = digest


def file_sha256(path: Path) -> str | None:
    """The SHA-256 of the regular file at `path` (a symlink is not followed), read in chunks
    whatever its size; None when there is no such regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        if (known := _DIGESTS.get(_identity(st))) is not None:
            return known
        h = hashlib.sha256()
        with os.fdopen(fd, "rb", closefd=False) as fh:
            while chunk := fh.read(1 << 20):
                h.update(chunk)
        return h.hexdigest()
    finally:
        os.close(fd)


def why_not_vouched(directory: Path, name: str) -> str:
    """Why `directory/name` is not the very file stoker wrote there last ("" when it is: a
    regular file whose SHA-256 is the one the ledger recorded for it)."""
    target = Path(directory) / name
    if not os.path.lexists(target):
        return "does not exist"
    if os.path.islink(target):
        return "is a symlink, not the file stoker wrote"
    digest = file_sha256(target)
    if digest is None:
        return "is not a regular file"
    if ledger(Path(directory)).get(name) != digest:
        return f"was not written by stoker (or was changed since): {LEDGER} does not vouch for it"
    return ""


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


def _write_aside(directory: Path, name: str, data: bytes, mode: int | None = None) -> Path:
    tmp = directory / f".stoker-tmp-{secrets.token_hex(6)}-{name}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        if mode is not None:
            os.fchmod(fd, mode)  # whatever the umask: a file another program must read
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


def check_outputs(directory: Path, names: Iterable[str], hint: str = "give another directory") -> None:
    """Raise UsageError naming the first of `names` that may not be written in `directory`."""
    ours = ledger(Path(directory))
    for name in names:
        if why := _why_not(Path(directory), name, ours):
            raise UsageError(f"{Path(directory) / name}: {why}; move it away or {hint}")


def write_outputs(
    directory: Path, files: Mapping[str, str], hint: str = "give another directory", mode: int | None = None
) -> None:
    """Write each `name: text` into `directory` under the rules above, or raise UsageError
    (before writing anything) naming the first file that may not be written. `mode`: the
    files' permissions whatever the umask (a metrics file node_exporter reads)."""
    directory = Path(directory)
    check_outputs(directory, files, hint)
    ours = ledger(directory)
    done = dict(ours)
    try:
        for name, text in files.items():
            data = text.encode("utf-8")
            tmp = _write_aside(directory, name, data, mode)
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
