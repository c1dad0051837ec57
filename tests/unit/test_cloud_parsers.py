"""SkyPilot's and dstack's task files checked with the platforms' own parsers, where those
are installed (an optional extra, `pip install -e '.[cloud-parsers]'`, large and never
installed by CI; skipped otherwise)."""

from __future__ import annotations

import pytest
import yaml

from tests.unit.test_cloud_render import CASES, rendered


@pytest.mark.parametrize("name", sorted(n for n, (p, _) in CASES.items() if p == "skypilot"))
def test_skypilot_parses_the_task(name: str) -> None:
    sky = pytest.importorskip("sky", reason="SkyPilot not installed (optional extra cloud-parsers; large)")
    task = sky.Task.from_yaml_config(yaml.safe_load(rendered(name)))
    assert task.num_nodes == 2


@pytest.mark.parametrize("name", sorted(n for n, (p, _) in CASES.items() if p == "dstack"))
def test_dstack_parses_the_task(name: str) -> None:
    conf = pytest.importorskip(
        "dstack._internal.core.models.configurations",
        reason="dstack not installed (optional extra cloud-parsers; large)",
    )
    parsed = conf.parse_run_configuration(yaml.safe_load(rendered(name)))
    assert parsed.nodes == 2
