"""`stoker check --prometheus`: the exit code and the metrics file, dry and not, in-process with
the inventory step alone (a few seconds, no bed: it reads what this machine shows)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from launchers.cli import main

# docs/contract.md: a check's verdict and its exit code
EXIT = {"pass": 0, "fail": 1, "incomplete": 3}


@pytest.fixture(autouse=True)
def _host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STOKER_HOSTNAME", "n1")
    monkeypatch.delenv("SLURMD_NODENAME", raising=False)


def test_a_dry_run_writes_no_metrics_file_and_its_exit_is_the_verdicts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc = main(["check", "--checks", "inventory", "-v", "--dry-run", "--prometheus", str(tmp_path / "m.prom")])
    out = capsys.readouterr().out
    verdict = re.search(r"^stoker check n1: (\w+) after ", out, re.M)
    assert verdict, out
    assert re.search(
        rf"^would write \d+ figures and \d+ statuses to {re.escape(str(tmp_path / 'm.prom'))}$", out, re.M
    )
    assert not (tmp_path / "m.prom").exists()
    # a dry export is no failed action: the exit is the verdict's (a pass is 0, never 4)
    assert rc == EXIT[verdict.group(1)], out


def test_the_metrics_file_is_written_and_its_exit_is_the_verdicts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc = main(["check", "--checks", "inventory", "-v", "--prometheus", str(tmp_path / "m.prom")])
    out = capsys.readouterr().out
    verdict = re.search(r"^stoker check n1: (\w+) after ", out, re.M)
    assert verdict, out
    text = (tmp_path / "m.prom").read_text()
    assert 'host="n1"' in text, text
    assert rc == EXIT[verdict.group(1)], out
