"""Shared test helpers: skip markers for root-only and tool-dependent tests."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data"
# The interpreter running the tests; subprocesses use the same one (and its venv).
PYTHON = sys.executable
STOKER = [PYTHON, "-m", "launchers.cli"]

IS_ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(
    not IS_ROOT, reason="needs root (namespaces, loop devices, SLURM daemons); runs in CI"
)


def needs_tool(name: str) -> pytest.MarkDecorator:
    return pytest.mark.skipif(
        shutil.which(name) is None, reason=f"{name} not installed (./install.sh installs it as root)"
    )


@pytest.fixture
def data_dir() -> Path:
    return DATA
