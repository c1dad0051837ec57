"""What a file is, told from its text or its metadata (pure): the import's run id, the time
stamp it takes from the file, and the marks of files that are not nccl-tests logs — stoker's
own `stoker net` table and fio JSON. The whole-text importer and the streaming one both ask.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

from reports.shared.fio_text import looks_like_fio_text

# `stoker net` prints an nccl-tests-style table too (netbench/output.py); a log of it kept in
# DIR (a tee, a Slurm job log) holds what net.jsonl already holds and must not count twice.
STOKER_MARK = "# stoker net:"


def run_id_for(text: str) -> str:
    return "import-" + hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:12]


def mtime_utc(path: Path) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(path.stat().st_mtime))


def is_stoker_output(text: str) -> bool:
    return STOKER_MARK in text[:1_000_000]


def looks_like_fio(text: str) -> bool:
    """fio's JSON, or its normal text output (reports/shared/fio_text.py)."""
    return '"fio version"' in text[:100_000] or looks_like_fio_text(text)
