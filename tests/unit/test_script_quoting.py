"""Every value that reaches the rendered acceptance script, given with shell metacharacters
and line breaks: either refused in one line (UsageError) or, in the script, exactly one word
that bash parses (`bash -n`) and reads back unchanged; never a line of its own."""

from __future__ import annotations

import dataclasses
import shlex
import subprocess

import pytest

from launchers import quoting as q
from launchers.profiles import get_profile, with_overrides
from launchers.slurm.sbatch import SbatchConfig, render
from reports.shared.errors import UsageError

PAYLOAD = "touch /tmp/stoker-badinput-pwned"
HOSTILE = [
    f"gpu\n{PAYLOAD}",
    f"gpu\r{PAYLOAD}",
    f"a; {PAYLOAD}",
    f"$({PAYLOAD})",
    f"`{PAYLOAD}`",
    'it\'s "quoted" $HOME',
    "a b\tc",
    "x && y || z > /tmp/w | v &",
    "-rf *",
    "#comment",
]
BASE = SbatchConfig(nodes=2, ranks_per_node=2, gpus_per_node=0, profile=get_profile("quick"), out="/shared/r")
# fields that land in shell words (assignments or arguments) and how to find them there
WORD_FIELDS = {"out": "OUT", "local_path": "LOCAL_IO", "shared_path": "SHARED_IO"}
ARG_FIELDS = ("spec", "workload")
DIRECTIVE_FIELDS = ("partition", "time")
PROFILE_FIELDS = ("ops", "workloads", "min_bytes", "max_bytes", "ckpt_bytes")


def _bash_n(script: str) -> None:
    p = subprocess.run(["bash", "-n"], input=script, text=True, capture_output=True)
    assert p.returncode == 0, p.stderr


def _no_payload_line(script: str) -> None:
    for line in script.splitlines():
        assert not line.lstrip().startswith(("touch", "`touch", "$(touch")), line


def _cases() -> list[tuple[str, str]]:
    fields = [*WORD_FIELDS, *ARG_FIELDS, *DIRECTIVE_FIELDS, *PROFILE_FIELDS]
    return [(f, v) for f in fields for v in HOSTILE]


def _config(field: str, value: str) -> SbatchConfig:
    if field in PROFILE_FIELDS:
        v: object = (value,) if field in ("ops", "workloads") else value
        return dataclasses.replace(BASE, profile=with_overrides(BASE.profile, **{field: v}))
    return dataclasses.replace(BASE, **{field: value})


@pytest.mark.parametrize(("field", "value"), _cases())
def test_hostile_value_is_refused_or_one_word(field: str, value: str) -> None:
    try:
        script = render(_config(field, value))
    except UsageError as exc:
        assert "\n" not in str(exc)
        return
    # accepted: only where the value is quoted, and it must survive as one word
    assert "\n" not in value and "\r" not in value
    assert field in (*WORD_FIELDS, *ARG_FIELDS), f"{field}={value!r} pasted into a directive or comment"
    _bash_n(script)
    _no_payload_line(script)
    if field in WORD_FIELDS:
        var = WORD_FIELDS[field]
        line = next(ln for ln in script.splitlines() if ln.startswith(f"{var}="))
        got = subprocess.run(["bash", "-c", f'{line}\nprintf %s "${var}"'], capture_output=True, text=True)
        assert got.stdout == value
    else:
        line = next(ln for ln in script.splitlines() if ln.startswith("timeout ") and " report " in ln)
        assert shlex.split(line).count(value) == 1


@pytest.mark.parametrize("field", [*DIRECTIVE_FIELDS, *PROFILE_FIELDS, *WORD_FIELDS, *ARG_FIELDS])
def test_line_break_is_refused_everywhere(field: str) -> None:
    with pytest.raises(UsageError):
        render(_config(field, f"gpu\n{PAYLOAD}"))


@pytest.mark.parametrize("value", ["gpu", "h100,a100", "batch-2.x_y"])
def test_good_partitions_pass_unchanged(value: str) -> None:
    assert f"#SBATCH --partition={value}\n" in render(dataclasses.replace(BASE, partition=value))


@pytest.mark.parametrize("value", ["30", "30:00", "4:00:00", "1-12", "1-12:30", "2-00:00:00", "UNLIMITED"])
def test_good_times_pass_unchanged(value: str) -> None:
    assert f"#SBATCH --time={value}\n" in render(dataclasses.replace(BASE, time=value))


def test_word_quotes_and_plain_refuses() -> None:
    assert q.word("a b", "--x") == "'a b'"
    assert q.word("plain", "--x") == "plain"
    with pytest.raises(UsageError, match="--x"):
        q.plain("a\x00b", "--x")


def test_submit_dry_run_refuses_a_partition_with_a_command(capsys: pytest.CaptureFixture[str]) -> None:
    from launchers.cli import main

    rc = main(["submit", "--nodes", "2", "--partition", f"gpu\n{PAYLOAD}", "--dry-run"])
    out, err = capsys.readouterr()
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and "--partition" in err
