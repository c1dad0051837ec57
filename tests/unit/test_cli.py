import subprocess

from tests.conftest import STOKER


def test_help_lists_every_command() -> None:
    out = subprocess.run([*STOKER, "--help"], capture_output=True, text=True, check=True).stdout
    for cmd in ("run", "net", "io", "report", "submit", "compare", "import"):
        assert cmd in out


def test_unknown_option_is_one_line_exit_2() -> None:
    p = subprocess.run([*STOKER, "net", "--no-such-flag"], capture_output=True, text=True)
    assert p.returncode == 2
    assert len(p.stderr.strip().splitlines()) == 1
