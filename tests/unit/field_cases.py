"""The field corpus (tests/data/field/, its manifest.yaml): each real output judged as a user
would — the file alone in a results dir, `stoker report DIR --spec SPEC` with a spec that says
only what its source states — and the answer held against the conclusion its source reached.

Shared by tests/unit/test_field_corpus.py and benchmarks/field_accuracy.py (which prints the
read rate and the agreement case by case).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

FIELD = Path(__file__).resolve().parents[1] / "data" / "field"

# the manifest's component -> the verdict's components that name it
COMPONENTS: dict[str, tuple[str, ...]] = {
    "intra_node": ("intra-node network", "nvlink", "link"),
    "inter_node": ("inter-node network", "network port"),
    "storage": ("shared storage", "local storage"),
    "correctness": ("intra-node network", "inter-node network"),
}
# causes a log can show in its own lines: a sick case with one of these must name it
SHOWN_CAUSES = frozenset(
    {"socket_fallback", "gdr_off", "p2p_disabled", "shm_transport", "data_corruption", "nccl_error"}
)
FAILING = ("incorrect", "misconfigured", "below_spec", "starving", "unstable", "regression")


def cases() -> list[dict[str, Any]]:
    return list(yaml.safe_load((FIELD / "manifest.yaml").read_text()) or [])


def labelled(case: Mapping[str, Any]) -> bool:
    """A case whose source reached a conclusion its excerpt can show (manifest `judgeable`)."""
    return case["expected"] in ("healthy", "sick") and case.get("judgeable", True)


@dataclass(frozen=True, kw_only=True, slots=True)
class Outcome:
    case: str
    read: bool  # records came out of the file
    verdict: str
    expected: str
    agrees: bool | None  # None: unlabelled
    why: str  # what the answer was, in a line


def _spec_yaml(spec: Mapping[str, Any] | None) -> str | None:
    if not spec:
        return None
    return yaml.safe_dump({"name": "field-case", **dict(spec)}, sort_keys=False)


def judge_case(case: Mapping[str, Any]) -> Outcome:
    """One corpus file through the report pipeline, in a dir of its own."""
    from reports.pipeline import collect
    from reports.shared.errors import UsageError

    with tempfile.TemporaryDirectory(prefix="field-") as tmp:
        d = Path(tmp) / "results"
        d.mkdir()
        shutil.copyfile(FIELD / case["file"], d / case["file"])
        spec_path = None
        if text := _spec_yaml(case.get("spec")):
            spec_path = Path(tmp) / "spec.yaml"
            spec_path.write_text(text)
        try:
            c = collect(
                d, str(spec_path) if spec_path else None, None, "cluster", None, None, lambda *a: None
            )
        except UsageError as exc:
            return Outcome(
                case=case["id"],
                read=False,
                verdict="error",
                expected=case["expected"],
                agrees=False if labelled(case) else None,
                why=str(exc)[:200],
            )
    v = c.verdict
    read = bool(v.get("imported"))
    findings = v.get("findings", [])
    failing = [f for f in findings if f.get("status") in FAILING]
    expected = case["expected"] if labelled(case) else "unlabelled"
    if expected == "healthy":
        agrees: bool | None = v["verdict"] != "fail"
        why = "no failing finding" if agrees else "failed: " + "; ".join(f["check"] for f in failing)[:200]
    elif expected == "sick":
        comps = COMPONENTS.get(case.get("component") or "", ())
        named = [f for f in failing if not comps or f.get("component") in comps]
        cause = case.get("cause")
        if cause in SHOWN_CAUSES:
            named = [f for f in named if f.get("cause") == cause]
        agrees = v["verdict"] == "fail" and bool(named)
        why = (
            f"fails {named[0]['component']}: {named[0].get('cause') or named[0]['check']}"
            if agrees
            else f"verdict {v['verdict']}; failing: "
            + "; ".join(f"{f['component']}/{f.get('cause')}" for f in failing)[:200]
        )
    else:
        agrees, why = None, f"verdict {v['verdict']}"
    return Outcome(
        case=case["id"], read=read, verdict=v["verdict"], expected=expected, agrees=agrees, why=why
    )
