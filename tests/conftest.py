"""Shared test helpers: the markers and the helper for tests that need the house's beds (root,
network namespaces, Slurm, fio, Open MPI, ...), and the CI settings.

Under CI=true (.ci/run sets it) a test whose bed is missing FAILS instead of skipping, so a
CI machine that lacks root, namespaces, Slurm or fio cannot go green on skips; and
hypothesis runs derandomized (the same examples every run). Optional extras (the SkyPilot and
dstack parsers, a GPU) stay skips everywhere: use pytest.skip/importorskip for those.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import NoReturn

import pytest
from hypothesis import settings

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data"
# The interpreter running the tests; subprocesses use the same one (and its venv).
PYTHON = sys.executable
STOKER = [PYTHON, "-m", "launchers.cli"]

CI = os.environ.get("CI", "").lower() == "true"
IS_ROOT = os.geteuid() == 0

# the same examples on every CI run: a red CI is reproducible, a green one not luck
# (hypothesis loads a profile of its own when it sees a CI variable; this one does not
# depend on which variables it knows)
settings.register_profile("stoker-ci", derandomize=True, database=None, print_blob=True)
if CI:
    settings.load_profile("stoker-ci")


def ctrl_c_default() -> None:
    """A Popen preexec_fn for a child the test will Ctrl-C: SIGINT back to its default. A
    shell starts background jobs with SIGINT ignored, children inherit that, and Python then
    installs no KeyboardInterrupt handler: a suite run as `pytest ... &` would see the child
    run to its end instead of stopping (two tests failed so)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def bed_missing(reason: str) -> NoReturn:
    """End a test whose bed is missing here: a skip on a developer's machine, a failure under
    CI=true (where install.sh provides every bed, so a missing one is a broken CI machine)."""
    if CI:
        pytest.fail(f"CI=true and this test's bed is missing: {reason}", pytrace=False)
    pytest.skip(reason)


def _needs(missing: bool, reason: str) -> pytest.MarkDecorator:
    return pytest.mark.needs_bed(missing=missing, reason=reason)


needs_root = _needs(not IS_ROOT, "needs root (namespaces, loop devices, SLURM daemons); runs in CI")


def needs_tool(name: str) -> pytest.MarkDecorator:
    return _needs(shutil.which(name) is None, f"{name} not installed (./install.sh installs it as root)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "needs_bed(missing, reason): the test needs root or a tool; skip (fail under CI=true)"
    )


@pytest.hookimpl(tryfirst=True)  # before any fixture builds a bed (a Slurm cluster, namespaces)
def pytest_runtest_setup(item: pytest.Item) -> None:
    for mark in item.iter_markers("needs_bed"):
        if mark.kwargs["missing"]:
            bed_missing(mark.kwargs["reason"])


@pytest.fixture
def data_dir() -> Path:
    return DATA
