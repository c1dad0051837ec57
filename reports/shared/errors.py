"""The three ways a stoker command ends badly, each with its contract exit code."""

from __future__ import annotations


class StokerError(Exception):
    """Base class; `exit_code` is what the CLI returns. The message is one line."""

    exit_code = 1


class UsageError(StokerError):
    """Bad input or a missing prerequisite: say what is wrong and how to fix it (exit 2)."""

    exit_code = 2


class MeasurementAborted(StokerError):
    """A timeout, a dead rank, a full disk: records measured so far are kept (exit 3)."""

    exit_code = 3
