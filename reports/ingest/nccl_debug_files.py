"""NCCL's account of stoker's own GPU runs (IO): the per-rank files `stoker net` has NCCL
write into DIR/nccl-debug/ (NCCL_DEBUG=INFO, NCCL_DEBUG_FILE=%h.%p.log: netbench/nccl_env.py),
read with the parser of imported logs' NCCL lines (reports/ingest/nccl_debug.py) into one
manifest line whose quoted lines name their file, so that the report's diagnosis
(reports/judging/network/diagnosis.py) reads stoker's runs as it reads anyone's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reports.ingest.nccl_debug import DebugFacts
from reports.shared.errors import UsageError
from reports.shared.records import NCCL_DEBUG_DIR
from reports.shared.safe_read import read_bytes

_MAX_FILES = 4096  # the first ranks' files say what NCCL chose; a 10,000-GPU run's are not all read
_MAX_BYTES = 16 << 20  # one rank's INFO lines of a sweep are a few hundred kB


def read_debug_dir(directory: Path) -> list[dict[str, Any]]:
    """The manifest line of DIR/nccl-debug/*.log (none when there is no such file)."""
    d = directory / NCCL_DEBUG_DIR
    if not d.is_dir() or d.is_symlink():
        return []
    facts = DebugFacts()
    files = sorted(p for p in d.glob("*.log") if p.is_file() and not p.is_symlink())[:_MAX_FILES]
    for p in files:
        try:
            text = read_bytes(p, "NCCL debug file", max_bytes=_MAX_BYTES).decode("utf-8", errors="replace")
        except (OSError, UsageError):
            continue  # unreadable or too large: the others still tell
        where = f"{NCCL_DEBUG_DIR}/{p.name}"
        for n, line in enumerate(text.split("\n"), 1):
            if "NCCL INFO" in line or "NCCL WARN" in line:
                facts.add(n, line.strip(), where)
    if facts.empty():
        return []
    return [
        {
            "schema": 1,
            "kind": "manifest",
            "tool": "nccl",
            "source": NCCL_DEBUG_DIR,
            "files": len(files),
            "nccl_debug": facts.to_dict(),
        }
    ]
