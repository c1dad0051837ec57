"""`stoker submit --platform k8s|skypilot|dstack` without --fabric (auto): the fabric the spec
says (network.fabric, else its inter-node link's), else tcp with one stderr line saying it
was not known and how to set it; an explicit --fabric wins. Goldens of the rendered Job for
an InfiniBand spec and an EFA spec (launchers/cloud/fabrics.py `choose`)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from launchers.cli import build_parser
from launchers.cloud.fabrics import AUTO, choose
from launchers.cloud.submit_cloud import job_from_args, render
from reports.shared.errors import UsageError
from reports.shared.spec import Spec, load_spec, parse_spec
from tests.conftest import DATA

GOLDEN = DATA / "launchers" / "cloud"
K8S = ["submit", "--platform", "k8s", "--nodes", "2", "--gpus-per-node", "8", "--profile", "quick"]
K8S += ["--image", "registry.example/stoker:1.0", "--job-name", "stoker-golden"]
K8S += ["--results-volume", "stoker-results-rwx"]
SPECS = {
    "ib": "name: ib-cluster\naccelerator: H100-SXM\nnetwork:\n  inter_node: {link: ib-ndr, count: 8}\n",
    "efa": "name: efa-cluster\naccelerator: H100-SXM\nnetwork:\n  inter_node: {link: efa-v2, count: 32}\n",
}
# (golden, spec, further arguments): the fabric comes from the spec alone
GOLDENS = {"k8s-job-auto-ib-spec.yaml": ("ib", []), "k8s-job-auto-efa-spec.yaml": ("efa", [])}


def spec(text: str) -> Spec:
    return parse_spec(yaml.safe_load(text), "spec.yaml")


@pytest.mark.parametrize(
    "given,text,fabric,note",
    [
        (None, SPECS["ib"], "ib", "from the spec's network.inter_node link ib-ndr"),
        (AUTO, SPECS["efa"], "efa", "from the spec's network.inter_node link efa-v2"),
        ("tcp", SPECS["ib"], "tcp", ""),  # an explicit --fabric wins, silently
        ("roce", None, "roce", ""),
        (
            None,
            "network:\n  fabric: roce\n  inter_node: {link: ib-ndr, count: 8}\n",
            "roce",
            "network.fabric",
        ),
        (None, "network:\n  inter_node: {link: ethernet-400g, count: 8}\n", "tcp", "may be RoCE or TCP"),
        (None, "name: bare\n", "tcp", "names no network.fabric nor an inter-node link"),
        (None, None, "tcp", "no --spec"),
    ],
)
def test_choose(given: str | None, text: str | None, fabric: str, note: str) -> None:
    got, line = choose(given, spec(text) if text else None)
    assert got == fabric
    assert note in line and (line == "") == (note == "")
    if got == "tcp" and note:
        assert line.startswith("warning: the fabric is not known") and "--fabric ib|efa|roce" in line


def test_a_bad_network_fabric_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text("network:\n  fabric: nvlink\n", encoding="utf-8")
    with pytest.raises(UsageError, match=r"network.fabric: expected one of ib, efa, roce, tcp, got 'nvlink'"):
        load_spec(path)


def rendered(name: str, tmp: Path) -> str:
    which, more = GOLDENS[name]
    (tmp / "spec.yaml").write_text(SPECS[which], encoding="utf-8")
    args = build_parser("submit").parse_args([*K8S, "--spec", "spec.yaml", *more])
    job = job_from_args(args, tmp, "20260101-000000")
    return render(job, "k8s")


@pytest.mark.parametrize("name", sorted(GOLDENS))
def test_auto_fabric_matches_golden(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text, err = rendered(name, tmp_path), capsys.readouterr().err
    assert text.splitlines() == (GOLDEN / name).read_text(encoding="utf-8").splitlines()
    which = GOLDENS[name][0]
    assert err.splitlines() == [
        f"stoker submit: --fabric {which}: from the spec's network.inter_node link "
        f"{'ib-ndr' if which == 'ib' else 'efa-v2'} (--fabric overrides it)"
    ]


def test_auto_renders_what_the_explicit_fabric_renders(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, (which, _) in GOLDENS.items():
        auto = rendered(name, tmp_path)
        capsys.readouterr()
        args = build_parser("submit").parse_args([*K8S, "--spec", "spec.yaml", "--fabric", which])
        explicit = render(job_from_args(args, tmp_path, "20260101-000000"), "k8s")
        assert auto == explicit and capsys.readouterr().err == ""


def test_without_a_spec_tcp_and_one_warning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = job_from_args(build_parser("submit").parse_args(K8S), tmp_path, "20260101-000000")
    assert job.fabric == "tcp"
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("stoker submit: warning: the fabric is not known (no --spec)")
    assert "--fabric ib|efa|roce" in line
    # an explicit --fabric wins and says nothing
    job = job_from_args(build_parser("submit").parse_args([*K8S, "--fabric", "efa"]), tmp_path, "x")
    assert job.fabric == "efa" and capsys.readouterr().err == ""


def write_goldens(directory: Path = GOLDEN) -> None:
    """Regenerate: python -c 'from tests.unit.test_cloud_fabric_auto import write_goldens; write_goldens()'"""
    import tempfile

    for name in GOLDENS:
        with tempfile.TemporaryDirectory() as tmp:
            (directory / name).write_text(rendered(name, Path(tmp)), encoding="utf-8")
