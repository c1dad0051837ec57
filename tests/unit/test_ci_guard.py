"""tests/conftest.py's guard: under CI=true a test whose bed (root, namespaces,
Slurm, fio, ...) is missing fails instead of skipping, and hypothesis is derandomized. Run on a
real test file of the suite, with fio hidden from PATH."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.conftest import PYTHON, REPO

FIO_TEST = "tests/integration/test_io_local.py"


def _pytest(ci: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PATH"] = "/nonexistent"  # no fio, no tools at all: the bed is missing
    if ci is not None:
        env["CI"] = ci
    return subprocess.run(
        [PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", FIO_TEST],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(("ci", "want"), [(None, "skipped"), ("false", "skipped"), ("true", "1 error")])
def test_a_missing_bed_skips_except_under_ci(ci: str | None, want: str) -> None:
    p = _pytest(ci)
    tail = p.stdout.strip().splitlines()[-1]
    assert want in tail and (p.returncode != 0) == (ci == "true"), p.stdout[-2000:]
    if ci == "true":  # failed in setup, before anything ran: pytest counts it as an error
        assert "CI=true and this test's bed is missing: fio not installed" in p.stdout


def test_hypothesis_is_derandomized_under_ci() -> None:
    code = "import tests.conftest; from hypothesis import settings; print(settings.default.derandomize)"
    no_ci = {k: v for k, v in os.environ.items() if k != "CI"}
    for env, want in (({**no_ci, "CI": "true"}, "True"), (no_ci, "False")):
        p = subprocess.run([PYTHON, "-c", code], cwd=REPO, env=env, capture_output=True, text=True)
        assert p.stdout.strip() == want, p.stderr
