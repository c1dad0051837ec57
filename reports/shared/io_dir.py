"""Whether a directory can hold a storage test: the one check behind `stoker io --path` (an
error, exit 2) and `stoker run --spec` (a spec path it leaves unmeasured, with the reason).
stoker tests inside a directory of its own there and creates no directory it was given."""

from __future__ import annotations

import os
from pathlib import Path


def io_dir_problem(text: str) -> tuple[str, str] | None:
    """(what is wrong, what to do) when `text` cannot be tested in; None when it can."""
    if ":" in text:
        # fio separates several directories/files with ':' and would split this one
        return "contains ':', which fio cannot take", "use a path without ':'"
    p = Path(text).expanduser()
    if not p.exists():
        return "does not exist", "create it or give an existing directory"
    if not p.is_dir():
        return "is not a directory", "give a directory to test in"
    if not os.access(p, os.W_OK | os.X_OK):
        return "is not writable by this user", "give a directory you can write to"
    return None
