"""Every option of `stoker run` is checked by the phases' own rules before
any phase runs (it was refused by the phase, minutes in, as "incomplete", exit 3), and
`--timeout nan|-5|inf`, `--runtime 1e20` are one line, exit 2 for `stoker net` / `stoker io`."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import STOKER


def _stoker(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*STOKER, *args], capture_output=True, text=True, timeout=60, cwd=tmp_path)


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["--ckpt-bytes", "1"], "--ckpt-bytes"),
        (["--ops", "bogus"], "--ops: unknown name 'bogus'"),
        (["--iters", "0"], "--iters"),
        (["--step-factor", "1"], "--step-factor"),
        (["--workloads", "bogus"], "--workloads: unknown name 'bogus'"),
        (["--io-runtime", "0"], "--runtime"),
        (["--min-bytes", "1G", "--max-bytes", "1K"], "swap them"),
        (["--path", "/tmp/a\nb"], "control characters"),
    ],
)
def test_run_refuses_before_any_phase(tmp_path: Path, argv: list[str], needle: str) -> None:
    if argv[0] == "--path":
        Path("/tmp/a\nb").mkdir(exist_ok=True)  # exists: the path text itself is refused
    p = _stoker(tmp_path, "run", "--out", str(tmp_path / "o"), *argv)
    assert p.returncode == 2, p.stdout[-2000:] + p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and needle in p.stderr, p.stderr
    assert "started" not in p.stdout and not (tmp_path / "o").exists()


@pytest.mark.parametrize("cmd", ["net", "io"])
@pytest.mark.parametrize("value", ["nan", "-5", "inf", "1e20"])
def test_timeouts_are_finite_seconds(tmp_path: Path, cmd: str, value: str) -> None:
    p = _stoker(tmp_path, cmd, "--timeout", value, "--out", str(tmp_path / "o"))
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "--timeout" in p.stderr, p.stderr
    assert not (tmp_path / "o").exists()


def test_io_runtime_bounded(tmp_path: Path) -> None:
    p = _stoker(tmp_path, "io", "--runtime", "999999999", "--out", str(tmp_path / "o"))
    assert p.returncode == 2 and "--runtime must be between" in p.stderr, p.stderr
