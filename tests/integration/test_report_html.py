"""report.html opened in a real headless Chromium: it renders, every embedded image
decodes (naturalWidth > 0), nothing is fetched from outside the file."""

from __future__ import annotations

import base64
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from reports.pipeline import build
from tests.conftest import DATA, needs_tool

CHROMIUM = [
    "chromium",
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# Appended to a copy of the page under test only: the report itself carries no script.
PROBE = (
    "<script>window.addEventListener('load',function(){var s=[].map.call(document.images,function(i)"
    "{return i.complete&&i.naturalWidth>0?'1':'0'}).join('');var p=document.createElement('pre');"
    "p.id='rp-probe';p.textContent='IMGS:'+s+':END';document.body.appendChild(p);});</script>"
)


def chromium_path(*args: str) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory(prefix="rp_chromium_") as profile:
        return subprocess.run(
            [*CHROMIUM, f"--user-data-dir={profile}", *args], capture_output=True, text=True, timeout=120
        )


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("rp_html") / "basic"
    shutil.copytree(DATA / "reports" / "basic", d)
    out = d / "report.html"
    out.write_text(build(d).html, encoding="utf-8")
    return out


def test_embedded_pngs_decode(page: Path) -> None:
    imgs = re.findall(r'src="data:image/png;base64,([^"]+)"', page.read_text())
    # 3 sweep scopes, storage bars, per-host grid, pair matrix
    assert len(imgs) == 6
    for b64 in imgs:
        raw = base64.b64decode(b64)
        assert raw[:8] == b"\x89PNG\r\n\x1a\n" and len(raw) > 5000
    assert not re.search(r'(src|href)="(https?:)?//', page.read_text())


@needs_tool("chromium")
def test_chromium_loads_every_image(page: Path, tmp_path: Path) -> None:
    probe = tmp_path / "probe.html"
    probe.write_text(page.read_text().replace("</body>", PROBE + "</body>"), encoding="utf-8")
    p = chromium_path("--virtual-time-budget=10000", "--dump-dom", probe.as_uri())
    m = re.search(r"IMGS:([01]*):END", p.stdout)
    assert m, p.stderr[-2000:]
    assert m.group(1) == "1" * 6


@needs_tool("chromium")
def test_chromium_screenshot_is_not_blank(page: Path, tmp_path: Path) -> None:
    shot = tmp_path / "shot.png"
    chromium_path(f"--screenshot={shot}", "--window-size=1280,2000", page.as_uri())
    raw = shot.read_bytes()
    assert raw[:8] == b"\x89PNG\r\n\x1a\n"
    import matplotlib.image as mpimg
    import numpy as np

    pixels = mpimg.imread(str(shot))
    assert pixels.shape[:2] == (2000, 1280)
    # a blank page is one colour; a rendered report has text, tables and plots
    assert float(np.std(pixels)) > 0.05 and len(np.unique(pixels.reshape(-1, pixels.shape[2]), axis=0)) > 200
