"""Typed access to parsed JSON whose shape is not trusted (pure): a member that is not what
the format says reads as empty, so a damaged file gives notes, not a traceback."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def mapping_at(obj: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """obj[key] when it is an object, else an empty one."""
    v = obj.get(key)
    return v if isinstance(v, Mapping) else {}


def list_at(obj: Mapping[str, Any], key: str) -> list[Any]:
    """obj[key] when it is a list, else an empty one."""
    v = obj.get(key)
    return v if isinstance(v, list) else []
