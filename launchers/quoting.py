"""Values that reach a rendered script (sbatch, and any other job-file renderer): each one is
either checked against what it may be, or quoted so the shell sees exactly one word.

Three places a value can land, three helpers:
- a shell word (`OUT=...`, an argument): `word` quotes it; bash then sees one word whatever
  it holds, except a line break, which no path, partition or size ever holds and which
  would make a comment or a log line lie, so it is refused;
- a comment or a directive bash does not read (`# profile ...`, `#SBATCH --partition=...`):
  `plain` refuses line breaks and control characters, the only way out of a comment;
- a scheduler option with a known shape (partition, time limit, job name): `matching`
  checks it against its pattern, so nothing else is pasted there.
Refusals are `UsageError`s naming the option (exit 2), raised before anything is written.
"""

from __future__ import annotations

import re
import shlex

from reports.shared.errors import UsageError

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")

# Slurm's own shapes (sbatch(1)): partition names, comma-separated; the time formats
# "M", "M:S", "H:M:S", "D-H", "D-H:M", "D-H:M:S" and the words for no limit.
PARTITION = re.compile(r"[A-Za-z0-9_.-]+(,[A-Za-z0-9_.-]+)*")
SLURM_TIME = re.compile(r"(\d+-)?\d+(:\d+){0,2}|UNLIMITED|unlimited|infinite|INFINITE")
# one account, QOS or reservation name: a single token, no comma, quote or blank
SLURM_NAME = re.compile(r"[A-Za-z0-9_.-]+")
# a container image as pyxis takes it: registry/name:tag, name@sha256:..., nvcr.io#name, a .sqsh path
IMAGE = re.compile(r"[A-Za-z0-9_.:/#@+-]+")
# comma-separated names (ops, workloads) and sizes as profiles spell them ("64M", "1.5G")
NAMES = PARTITION
SIZE = re.compile(r"\d+(\.\d+)?[A-Za-z]{0,3}")
# a job or file name: what the scheduler and a file system both take without quoting
NAME = re.compile(r"[A-Za-z0-9_.%-]+")


def plain(value: str, what: str) -> str:
    """`value` unchanged if it holds no line break or control character, else UsageError."""
    if _CONTROL.search(value):
        raise UsageError(f"{what} {value!r}: holds a line break or control character; give it on one line")
    return value


def word(value: str, what: str) -> str:
    """`value` as one shell word (single-quoted when needed)."""
    return shlex.quote(plain(value, what))


def matching(value: str, pattern: re.Pattern[str], what: str, shape: str) -> str:
    """`value` unchanged if the whole of it matches `pattern`, else UsageError saying `shape`."""
    if not pattern.fullmatch(value):
        raise UsageError(f"{what} {value!r}: not {shape}")
    return value
