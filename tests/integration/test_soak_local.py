"""`stoker soak` on this machine with real gloo ranks (issue 25): passes numbered and timed,
a progress line per pass, and SIGTERM mid-soak ends it with every finished pass kept and
reported. No root needed; ~40 s on 2 cores."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

from reports.table import read_records
from tests.conftest import STOKER

SMALL = ["--profile", "quick", "--ops", "all_reduce", "--backend", "gloo", "--nproc", "2", "--iters", "3"]


def test_sigterm_mid_soak_keeps_and_reports_every_finished_pass(tmp_path: Path) -> None:
    out = tmp_path / "r"
    log = tmp_path / "log"
    with open(log, "w") as fh:
        p = subprocess.Popen(
            [*STOKER, "soak", "--duration", "10m", "--io-every", "0", "--out", str(out), *SMALL],
            stdout=fh,
            stderr=subprocess.STDOUT,
            text=True,
        )
        deadline = time.monotonic() + 150
        while "soak pass 3:" not in log.read_text() and time.monotonic() < deadline and p.poll() is None:
            time.sleep(0.5)
        assert "soak pass 3:" in log.read_text(), log.read_text()[-3000:]
        p.send_signal(signal.SIGTERM)
        rc = p.wait(timeout=120)
    text = log.read_text()
    said = {int(ln.split("soak pass ")[1].split(":")[0]) for ln in text.splitlines() if "| soak pass " in ln}
    recs = read_records(out)
    kept = {int(r.extra["soak_pass"]) for r in recs.net.records()}
    assert said <= kept and len(said) >= 3, (said, kept)
    assert all(r.ts and r.extra["soak_pass"] >= 1 for r in recs.net.records())
    verdict = json.loads((out / "verdict.json").read_text())
    assert (out / "report.html").is_file() and "<h2>Soak</h2>" in (out / "report.html").read_text()
    phases = [json.loads(x) for x in (out / "phases.jsonl").read_text().splitlines()]
    assert phases[-1]["phase"] == "report" and phases[-2]["rc"] == 130, phases  # interrupted, then reported
    assert rc == 3 and "interrupted; writing the report" in text, (rc, text[-2000:])
    print(f"SIGTERM after {len(said)} passes: {len(kept)} kept, verdict {verdict['verdict']}, exit {rc}")
