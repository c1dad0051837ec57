"""The plain host-name rule (reports/shared/hostnames.py): cases written out by hand."""

from __future__ import annotations

import pytest

from reports.shared.hostnames import MAX_HOST_LEN, actionable_host, is_plain_host, why_not_plain


@pytest.mark.parametrize("name", ["gpu001", "node-1", "n1.cluster.local", "a", "A_b-9", "x" * MAX_HOST_LEN])
def test_plain_names(name: str) -> None:
    assert is_plain_host(name)
    assert why_not_plain(name) == ""


@pytest.mark.parametrize(
    "name",
    [
        "gpu[001-512]",
        "n1,n2",
        "n1 n2",
        "n1\nn2",
        "ALL",
        "all",
        "",
        "-all",
        "--all",
        ".hidden",
        "n1;reboot",
        "x" * (MAX_HOST_LEN + 1),
        "n\udc80",
        None,
        7,
    ],
)
def test_not_plain(name: object) -> None:
    assert not is_plain_host(name)
    assert why_not_plain(name)


def test_placeholders_are_not_actionable() -> None:
    assert is_plain_host("unknown") and not actionable_host("unknown")
    assert actionable_host("gpu7")
