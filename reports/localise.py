"""Localisation: name the slow node or link from pair and per-node results (pure).
Placeholder with the final signatures; the localisation issue fills it in."""
from __future__ import annotations

from collections.abc import Sequence

from reports.findings import Finding
from reports.records import IoRecord, NetRecord


def pair_matrix(net: Sequence[NetRecord]) -> tuple[list[str], list[list[float | None]]]:
    """Hosts (sorted) and the symmetric matrix of pair busbw (GB/s) at the largest size."""
    return [], []


def localise(net: Sequence[NetRecord], io: Sequence[IoRecord], expected_pair_GBps: float | None = None) -> list[Finding]:
    """`node` and `link` findings naming culprit hosts; [] when nothing stands out."""
    return []


def confirmation_pairs(pair_GBps: dict[tuple[str, str], float]) -> list[tuple[str, str]]:
    """Second pass: re-pair each suspect host with known-good hosts. Input: busbw per
    (host, host) pair from the round-robin pass. Output: pairs to measure again."""
    return []
