"""Whose results dir is this? A dir stoker writes records into is either new (or empty), or
stoker's own dir of the same run (a resume: the phases of one `stoker run` or Slurm job,
the ranks of one sweep), or refused in one line — never someone's notes, never their
spec.yaml, never another run's net.jsonl, which a report would then mix with this one.

stoker marks a dir as its own with `DIR/.stoker-run`, one line: the run id. `stoker submit`
writes `(submitted)` there (the job's run id, slurm-<job id>, is not known before sbatch
answers); the job's first phase replaces it with the run id.
"""

from __future__ import annotations

import os
from pathlib import Path

from reports.shared.errors import UsageError
from reports.shared.records import check_run_id

MARKER = ".stoker-run"
SUBMITTED = "(submitted)"  # not a valid run id, so no run can be mistaken for it
# Ownership is the marker alone, never a file's name (a user's phases.jsonl, phase-1-notes.md
# or io-scratch/ would make their dir look like stoker's, to be appended to). The
# launchers (torchrun.sh, mpirun.sh, the Slurm job) write the marker, "(submitted)", before
# anything else, so their own files are always in a marked dir.


def owner(out: Path) -> str | None:
    """The run id in `out`'s marker (or SUBMITTED); None when there is no marker."""
    try:
        return (out / MARKER).read_text(encoding="utf-8").strip() or None
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {out / MARKER}: {exc}; give a new --out") from None


def _write_marker(out: Path, content: str) -> None:
    # written aside and renamed into place: a concurrent reader sees no marker or a whole one
    tmp = out / f"{MARKER}.tmp-{os.getpid()}"
    try:
        tmp.write_text(content + "\n", encoding="utf-8")
        os.replace(tmp, out / MARKER)
    except OSError as exc:  # a read-only mount, a full disk: one line, not a crash
        raise UsageError(
            f"cannot write into {out}: {exc.strerror or exc}; give a writable results dir"
        ) from None


def _foreign(out: Path) -> list[str]:
    # a marker being written aside (.stoker-run.tmp-PID) by a rank of this same run is ours
    return sorted(p.name for p in out.iterdir() if not p.name.startswith(f"{MARKER}.tmp-"))


def _log_hint(out: Path, found: list[str]) -> str:
    """`mkdir R && stoker run --out R 2>&1 | tee R/run.log`: the shell opens the log before
    stoker starts, so R holds a file stoker did not make. Say so, and where a log goes."""
    logs = [n for n in found if n.endswith((".log", ".txt", ".out")) and (out / n).is_file()]
    if len(logs) != len(found) or any((out / n).stat().st_size > 1 << 20 for n in logs):
        return ""
    return (
        f" — if your shell made {logs[0]} for `| tee` before stoker started, put the log beside the "
        f"results dir instead: `stoker run --out {out} 2>&1 | tee {out}.log`"
    )


def _make(out: Path, option: str) -> None:
    if out.exists() and not out.is_dir():
        raise UsageError(f"{option} {out}: is a file; give a results directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(
            f"cannot create the results dir {out}: {exc.strerror}; pass {option} a writable dir"
        ) from None


def claim(out: Path, run_id: str, option: str = "--out") -> None:
    """Make `out` the results dir of `run_id` (creating it), or raise UsageError saying why not."""
    check_run_id(run_id)
    _make(out, option)
    have = owner(out)
    if have is None:
        found = _foreign(out)
        # a rank of this same run may have claimed it between the two reads: look again
        if found and (have := owner(out)) is None:
            more = f" and {len(found) - 1} more" if len(found) > 1 else ""
            raise UsageError(
                f"{option} {out}: exists and was not made by stoker (it holds {found[0]}{more}); "
                "give a new or empty directory" + _log_hint(out, found)
            )
    if have is None or have == SUBMITTED:
        _write_marker(out, run_id)
        return
    if have != run_id:
        raise UsageError(
            f"{option} {out}: holds the results of run {have}; give a new directory "
            f"(or STOKER_RUN_ID={have} to add to that run)"
        )


def mark_submitted(out: Path, option: str = "--out") -> None:
    """For `stoker submit`: the dir is new or empty (else UsageError); mark it for the job."""
    _make(out, option)
    have = owner(out)
    found = (
        [n for n in _foreign(out) if n not in (MARKER, "acceptance.sbatch", "spec.yaml", "workload.yaml")]
        if have == SUBMITTED
        else _foreign(out)
    )
    if have not in (None, SUBMITTED):
        raise UsageError(f"{option} {out}: holds the results of run {have}; give a new directory")
    if found:
        raise UsageError(
            f"{option} {out}: exists and was not made by stoker (it holds {found[0]}); "
            "give a new or empty directory"
        )
    _write_marker(out, SUBMITTED)
