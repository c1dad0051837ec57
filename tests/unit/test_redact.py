"""Secrets under allowlisted names are redacted by value — URL
credentials, token=/key=/password= query parameters, *PSK* names — in manifest.jsonl and in
report.md / report.html (which re-apply the rule to manifests read from elsewhere)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from reports.shared.manifest import allowlisted_env, base_manifest
from reports.shared.records import NET_FILE, RecordWriter
from reports.shared.redact import REDACTED, redact_value
from tests.conftest import STOKER
from tests.unit import recordgen

SECRET = "S3CR3T"
HOSTILE_ENV = {
    "TORCH_HOME": f"https://user:{SECRET}@host.example/models",
    "NCCL_DEBUG_FILE": f"/tmp/x?token={SECRET}&rank=1",
    "NCCL_IB_PSK": SECRET,
    "UCX_TLS_URL": f"s3://bucket/p?X-Amz-Signature={SECRET};password={SECRET}",
    "NCCL_SOCKET_IFNAME": "eth0",
}


@pytest.mark.parametrize(
    "value,kept",
    [
        (f"https://user:{SECRET}@host/p", "https://user:<redacted>@host/p"),
        (f"/tmp/x?token={SECRET}&rank=1", "/tmp/x?token=<redacted>&rank=1"),
        (f"http://h/?api_key={SECRET}#password={SECRET}", "http://h/?api_key=<redacted>#password=<redacted>"),
        ("eth0,ib0", "eth0,ib0"),
        ("https://user@host/p", "https://user@host/p"),
    ],
)
def test_redact_value(value: str, kept: str) -> None:
    assert redact_value(value) == kept


def test_manifest_keeps_no_secret_value() -> None:
    env = allowlisted_env(HOSTILE_ENV)
    assert SECRET not in json.dumps(env)
    assert env["NCCL_IB_PSK"] == REDACTED and env["NCCL_SOCKET_IFNAME"] == "eth0"
    assert env["TORCH_HOME"] == "https://user:<redacted>@host.example/models"
    assert SECRET not in json.dumps(base_manifest("t", "r1", HOSTILE_ENV))


def test_report_shows_no_secret_from_a_foreign_manifest(tmp_path: Path) -> None:
    with RecordWriter(tmp_path / NET_FILE) as w:
        for r in recordgen.flat("world", "all_reduce", 10.0):
            w.write(r)
    # a manifest written by an older stoker (or by hand): the report redacts again
    (tmp_path / "manifest.jsonl").write_text(
        json.dumps({"schema": 1, "kind": "manifest", "run_id": "r1", "host": "n1", "env": HOSTILE_ENV}) + "\n"
    )
    p = subprocess.run([*STOKER, "report", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert p.returncode in (0, 1), p.stderr
    for name in ("report.md", "report.html", "verdict.json"):
        assert SECRET not in (tmp_path / name).read_text(), name
    assert "NCCL_IB_PSK" in (tmp_path / "report.md").read_text()  # the name stays: that it was set matters
