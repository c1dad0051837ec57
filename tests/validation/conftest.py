"""The validation tests build real beds (namespaces, loop devices): root only, and one at a
time machine-wide is the caller's business (CI runs them in order)."""

from __future__ import annotations

import pytest

from tests.conftest import bed_missing
from tests.harness.netns import unavailable_reason


@pytest.fixture(scope="session")
def netns_ok() -> None:
    reason = unavailable_reason()
    if reason:
        bed_missing(reason)
