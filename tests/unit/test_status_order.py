"""The order report.md and report.html list findings in: every failing status before anything
that passed or could not be judged (reports/render/markdown.py STATUS_ORDER, derived from
reports/shared/findings.py STATUSES and FAILING)."""

from __future__ import annotations

from reports.render.markdown import STATUS_ORDER, findings_table, sorted_findings
from reports.shared.findings import FAILING, STATUSES, Finding


def _f(status: str, component: str = "shared storage") -> Finding:
    return Finding(
        component=component,  # type: ignore[arg-type]
        check=f"{status} check",
        status=status,  # type: ignore[arg-type]
        measured=1.0,
        expected=1.0,
        unit="GB/s",
        hosts=("n1",),
        message="m",
    )


def test_every_status_has_a_place_and_the_failures_come_first() -> None:
    assert set(STATUS_ORDER) == set(STATUSES)
    worst_passing = min(STATUS_ORDER[s] for s in STATUSES if s not in FAILING)
    assert all(STATUS_ORDER[s] < worst_passing for s in FAILING)


def test_an_unstable_soak_finding_sorts_with_the_failures() -> None:
    # by hand: a soak's dip (unstable) is a failure; it is listed before ok and no_reference rows,
    # whatever their components (the component only orders rows of one status rank)
    rows = [
        _f("ok", "gpu"),
        _f("no_reference", "gpu"),
        _f("unstable", "shared storage"),
        _f("below_spec", "intra-node network"),
        _f("suspect", "link"),
    ]
    got = [f.status for f in sorted_findings(rows)]
    assert got == ["below_spec", "unstable", "suspect", "no_reference", "ok"]
    assert list(findings_table(rows)["status"])[:2] == ["below_spec", "unstable"]
