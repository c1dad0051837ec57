"""Which runs of a results directory are judged together.

A record of another run, plausible and silently mixed in, flipped a fail to a pass (only the
header's "Run: a,b" showed it). Records of more than one stoker run in one directory are
judged only with `--runs` naming them; else the report is refused in one line. Imported
results (run ids `import-…`, one per file imported) are the user's own collection and stay
judged together as before.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from reports.shared.errors import UsageError

IMPORTED = "import-"


class MixedRuns(UsageError):
    """A directory holds records of several stoker runs and none was chosen."""

    def __init__(self, message: str, directory: object, runs: list[str]) -> None:
        super().__init__(message)
        self.directory, self.runs = directory, runs


def parse_runs(arg: str | None) -> frozenset[str] | None:
    """`--runs a,b` -> {"a", "b"}; None when not given."""
    if arg is None:
        return None
    names = frozenset(x.strip() for x in arg.split(",") if x.strip())
    if not names:
        raise UsageError("--runs: give one or more run ids, comma-separated (e.g. --runs slurm-41,slurm-42)")
    return names


def check_runs(directory: Any, run_ids: Iterable[str], wanted: frozenset[str] | None) -> None:
    """UsageError unless the stoker runs in `run_ids` are one, or all named in `wanted`."""
    present = sorted(r for r in set(run_ids) if not r.startswith(IMPORTED))
    if wanted is not None:
        unknown = sorted(wanted - set(run_ids))
        if unknown:
            raise UsageError(
                f"--runs {','.join(unknown)}: no records of that run in {directory} "
                f"(it holds {', '.join(present) or 'imported results only'})"
            )
        return
    if len(present) > 1:
        shown = ", ".join(present[:4]) + (f" and {len(present) - 4} more" if len(present) > 4 else "")
        raise MixedRuns(
            f"{directory} holds records of {len(present)} runs ({shown}): give --runs "
            f"{present[0]} to judge one, or --runs {','.join(present[:2])} to judge them together",
            directory,
            present,
        )


def keep_runs(rs: Any, wanted: frozenset[str] | None) -> None:
    """Drop from the RecordSet `rs` every net/io/host record of a run not in `wanted`
    (imported results are kept)."""
    if wanted is None:
        return

    def keep(run_id: object) -> bool:
        return str(run_id) in wanted or str(run_id).startswith(IMPORTED)

    ids = rs.net.frame["run_id"].astype(str)
    rs.net = type(rs.net).of(
        rs.net.where((ids.isin(sorted(wanted)) | ids.str.startswith(IMPORTED)).to_numpy())
    )
    rs.io = [r for r in rs.io if keep(r.run_id)]
    rs.host = [h for h in rs.host if keep(h.get("run_id", next(iter(wanted))))]
    rs.manifests = [m for m in rs.manifests if keep(m.get("run_id", next(iter(wanted))))]
