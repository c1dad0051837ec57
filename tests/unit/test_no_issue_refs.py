"""Source says what the code is and why, in the present tense: no file of the code or tests
cites a tracker issue by number ("issue 22: ..."), whose story belongs in git's history. A
reference to another project's tracker is its URL (github.com/<owner>/<repo>/issues/N).
Test data (tests/data) is the tools' own bytes and is left as it is."""

from __future__ import annotations

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TREES = ("netbench", "iobench", "launchers", "reports", "benchmarks", "tests")
SUFFIXES = {".py", ".sh", ".yaml", ".yml", ".sbatch"}
ISSUE = re.compile(r"\bissues? \d+", re.IGNORECASE)


def _files(root: Path) -> list[Path]:
    """The trees' source files, tests/data and caches left out (pruned, not walked)."""
    out = []
    for t in TREES:
        for d, dirs, names in os.walk(root / t):
            here = Path(d)
            dirs[:] = [x for x in dirs if x != "__pycache__" and here / x != root / "tests" / "data"]
            out += [here / n for n in names if Path(n).suffix in SUFFIXES]
    return sorted(p for p in out if p.resolve() != Path(__file__).resolve())


def _hits(root: Path) -> list[str]:
    return [
        f"{p.relative_to(root)}:{n}: {line.strip()[:100]}"
        for p in _files(root)
        for n, line in enumerate(p.read_text(errors="replace").splitlines(), 1)
        if ISSUE.search(line)
    ]


def test_no_source_file_cites_an_issue_number() -> None:
    hits = _hits(ROOT)
    assert not hits, "say what the code is and why instead:\n" + "\n".join(hits)


def test_the_rule_sees_a_citation_and_spares_a_url(tmp_path: Path) -> None:
    (tmp_path / "reports").mkdir()
    (tmp_path / "tests" / "data").mkdir(parents=True)
    (tmp_path / "reports" / "a.py").write_text("x = 1  # Issue 22: refused\n")
    (tmp_path / "reports" / "b.sh").write_text("# see github.com/pytorch/pytorch/issues/134332\n")
    (tmp_path / "tests" / "data" / "c.yaml").write_text("# issue 3 of the tool, kept as it came\n")
    assert _hits(tmp_path) == ["reports/a.py:1: x = 1  # Issue 22: refused"]
