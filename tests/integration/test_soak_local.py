"""`stoker soak` on this machine with real gloo ranks: passes numbered and timed, a progress
line per pass; SIGTERM mid-pass lets that pass finish, then ends the soak with every pass
kept and reported (exit 3); SIGTERM while the report is written lets it finish (exit 3); a
full `--path` ends the checkpoint writes, not the network passes. ~40 s each on 2 cores."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from reports.table.read import read_records
from tests.conftest import STOKER

SMALL = ["--profile", "quick", "--ops", "all_reduce", "--backend", "gloo", "--nproc", "2", "--iters", "3"]
# passes of ~2 s (200 iterations at 1 and 4 MiB), so that a signal lands inside one
LONGER = [*SMALL[:-1], "200"]


def _soak(argv: list[str], log: Path, until: str, sig: signal.Signals, after_s: float = 0.0) -> int:
    """Run `stoker soak argv`, send `sig` `after_s` after `until` shows in its output; its exit code."""
    with open(log, "w") as fh:
        p = subprocess.Popen([*STOKER, "soak", *argv], stdout=fh, stderr=subprocess.STDOUT, text=True)
        deadline = time.monotonic() + 150
        while until not in log.read_text() and time.monotonic() < deadline and p.poll() is None:
            time.sleep(0.05)
        assert until in log.read_text(), log.read_text()[-3000:]
        time.sleep(after_s)
        p.send_signal(sig)
        return p.wait(timeout=120)


def _phases(out: Path) -> list[dict[str, object]]:
    return [json.loads(x) for x in (out / "phases.jsonl").read_text().splitlines()]


def test_sigterm_mid_pass_lets_it_finish_then_reports_every_pass(tmp_path: Path) -> None:
    out, log = tmp_path / "r", tmp_path / "log"
    rc = _soak(
        ["--duration", "10m", "--io-every", "0", "--out", str(out), *LONGER],
        log,
        "soak pass 2:",
        signal.SIGTERM,
        0.3,
    )
    text = log.read_text()
    said = {int(ln.split("soak pass ")[1].split(":")[0]) for ln in text.splitlines() if "| soak pass " in ln}
    recs = read_records(out)
    per_pass = Counter(int(r.extra["soak_pass"]) for r in recs.net.records())
    # the pass in flight (3) finished: every pass has its all_reduce at 1 and 4 MiB, and said so
    assert said == set(per_pass) and set(per_pass.values()) == {2} and max(said) >= 3, (said, per_pass)
    assert all(r.ts and r.extra["soak_pass"] >= 1 for r in recs.net.records())
    verdict = json.loads((out / "verdict.json").read_text())
    assert (out / "report.html").is_file() and "<h2>Soak</h2>" in (out / "report.html").read_text()
    phases = _phases(out)
    net = phases[-2]
    assert phases[-1]["phase"] == "report" and net["rc"] == 130, phases  # stopped, then reported
    assert "stopped by SIGTERM: the pass in flight finished" in str(net["error"]), net
    assert float(net["elapsed_s"]) >= 1.0, net  # its real time (start-up and 3 passes), not 0.0
    assert "writing the report on the passes kept" in text, text[-2000:]
    # exit 3: stopped; 1 when a dip of CPU ranks on this shared machine failed the passes kept
    assert rc == (1 if verdict["verdict"] == "fail" else 3), (rc, verdict["verdict"], text[-2000:])
    print(f"SIGTERM in pass 3: {len(per_pass)} passes kept whole, verdict {verdict['verdict']}, exit {rc}")


def test_sigterm_while_the_report_is_written_lets_it_finish_exit_3(tmp_path: Path) -> None:
    out, log = tmp_path / "r", tmp_path / "log"
    rc = _soak(
        ["--duration", "5s", "--io-every", "0", "--out", str(out), *SMALL],
        log,
        "report: started",
        signal.SIGTERM,
        0.2,  # the report takes 2-5 s here (pandas, figures)
    )
    text = log.read_text()
    phases = _phases(out)
    # the report ran to its verdict: 0 (unjudged) or 1 (a dip of CPU ranks on this shared
    # machine is an `unstable` finding), never ended by the signal
    verdict = json.loads((out / "verdict.json").read_text())["verdict"]
    assert phases[-1]["phase"] == "report" and phases[-1]["rc"] == (1 if verdict == "fail" else 0), phases
    assert (out / "report.md").is_file()
    assert "report | verdict:" in text and "SIGTERM asked; it finishes first" in text, text[-2000:]
    # the soak was stopped: exit 3, unless the passes kept fail (1, as `stoker run`)
    assert rc == (1 if verdict == "fail" else 3), (rc, verdict, text[-2000:])


@pytest.mark.root
def test_a_full_path_ends_the_checkpoint_writes_not_the_soak(tmp_path: Path) -> None:
    full = tmp_path / "full"
    full.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(full)], check=True)
    out, log = tmp_path / "r", tmp_path / "log"
    try:
        argv = ["--duration", "40s", "--io-every", "1", "--path", str(full), "--out", str(out), *SMALL]
        with open(log, "w") as fh:
            rc = subprocess.run(
                [*STOKER, "soak", *argv], stdout=fh, stderr=subprocess.STDOUT, timeout=300
            ).returncode
    finally:
        subprocess.run(["umount", str(full)], check=False)
    text = log.read_text()
    phases = _phases(out)
    names = [str(p["phase"]) for p in phases]
    ckpt = [p for p in phases if p["phase"] == "checkpoint"]
    # one checkpoint write (refused: no room), never another; network phases before and after it
    assert len(ckpt) == 1 and ckpt[0]["rc"] != 0, phases
    said = str(ckpt[0]["error"])
    assert said.startswith("checkpoint writes ended after pass") and str(full) in said, ckpt
    after = names[names.index("checkpoint") + 1 :]
    assert after[0].startswith("network") and after[-1] == "report", names
    passes = {int(r.extra["soak_pass"]) for r in read_records(out).net.records()}
    first_after = int(after[0].split()[1].rstrip("."))
    assert max(passes) >= first_after > 1, (passes, names)  # passes measured after the disk was full
    assert (
        "checkpoint writes ended after pass 1, the network passes went on" in (out / "report.md").read_text()
    )
    # the refused checkpoint leaves the run incomplete (3); a kept pass that failed on this
    # loaded 2-core machine (a dip) makes it fail (1) instead: never a pass
    assert rc in (1, 3), (rc, text[-2000:])
    assert json.loads((out / "verdict.json").read_text())["verdict"] == {1: "fail", 3: "incomplete"}[rc]
