"""Confirm before fail (pure): a storage figure under its threshold that `stoker io --spec`
measured again at the end of its phase (the same test, the same nodes) is judged by both.

`stoker io` marks the second measurement `confirmation: true` (docs/contract.md). The first
measurements are judged as always; the confirmations apart, the same way. A failing finding
whose confirmation passes is a `transient` (shown, not failed: a dip that did not last); one
whose confirmation fails too fails with both figures. A finding without a confirmation is
left as it is.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from reports.findings import FAILING, Finding
from reports.judging import advertised
from reports.records import IoRecord
from reports.spec import Spec
from reports.storage_rule import is_confirmation

Key = tuple[str, str, str]  # path, workload, direction


def _key(f: Finding) -> Key:
    return (str(f.extra.get("path")), str(f.extra.get("workload")), str(f.extra.get("direction")))


def merge(first: Sequence[Finding], again: Sequence[Finding]) -> list[Finding]:
    """The first findings, each failing one judged with its confirmation when there is one."""
    confirming = {_key(f): f for f in again}
    out = []
    for f in first:
        c = confirming.get(_key(f))
        if c is None or f.status not in FAILING or c.measured is None or f.measured is None:
            out.append(f)
            continue
        both = {**f.extra, "first_GBps": f.measured, "confirm_GBps": c.measured}
        again_at = (
            f"measured again at the end of the phase (the same test, the same nodes): {c.measured:.2f} GB/s"
        )
        if c.status == "ok":
            head = f.message.split(":", 1)[0]
            msg = (
                f"{head}: {f.measured:.2f} GB/s at first, under the threshold, and {again_at}, which passes: "
                f"a transient dip, not failed; if it recurs, look at what else used the storage then."
            )
            out.append(
                dataclasses.replace(f, status="transient", measured=c.measured, message=msg, extra=both)
            )
        else:
            out.append(
                dataclasses.replace(
                    f, message=f"{f.message} {again_at[0].upper()}{again_at[1:]}, still under.", extra=both
                )
            )
    return out


def compare_storage(io: Sequence[IoRecord], spec: Spec | None) -> tuple[list[Finding], dict[str, float]]:
    """advertised.compare_storage over the first measurements, with the confirmations merged."""
    first, expected = advertised.compare_storage([r for r in io if not is_confirmation(r)], spec)
    again = [r for r in io if is_confirmation(r)]
    if not again:
        return first, expected
    return merge(first, advertised.compare_storage(again, spec)[0]), expected
