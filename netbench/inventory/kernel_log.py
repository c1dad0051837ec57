"""The kernel log, where Xid and SXid lines are: `dmesg`, else the journal's kernel messages
(`journalctl -k`, this boot) where kernel.dmesg_restrict keeps dmesg from this user but the
journal is readable (root, or the systemd-journal/adm group). Through a `text_of` callable
(argument list -> the tool's answer, or None when absent, refused or failed) so tests pass
recorded output."""

from __future__ import annotations

from collections.abc import Callable, Sequence

DMESG = ("dmesg",)
# -k: kernel messages of this boot; -q: no "not seeing messages from other users" hint
JOURNAL = ("journalctl", "-k", "--no-pager", "-q", "-o", "short")
SOURCES = (DMESG, JOURNAL)


def read_kernel_log(text_of: Callable[[Sequence[str]], str | None]) -> str | None:
    """The first source that answers; None when none does. An empty journal is no answer: a
    journal this user may not read prints nothing and still exits 0, and a booted kernel's own
    log is never empty."""
    for argv in SOURCES:
        text = text_of(list(argv))
        if text is not None and (argv is DMESG or text.strip()):
            return text
    return None
