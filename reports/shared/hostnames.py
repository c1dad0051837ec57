"""The one rule for a host name stoker may record, judge by, or act on.

A plain name is what Slurm's `NodeName=` and Kubernetes' node name take for exactly one node:
letters, digits, '.', '_' and '-', starting with a letter or digit, at most MAX_HOST_LEN
characters. Hostlist syntax (`gpu[001-512]`), comma or whitespace lists, shell characters and
Slurm's `ALL` keyword are not plain: a name that holds them can stand for many nodes.
PLACEHOLDER_HOSTS are the names stoker writes when a record's host is unknown (an imported
file that names none); they are recorded but never acted on.
"""

from __future__ import annotations

import re

MAX_HOST_LEN = 253  # a DNS name's length; Slurm and Kubernetes accept no longer node names
PLAIN_HOST = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
KEYWORDS = frozenset({"all"})  # scontrol reads NodeName=ALL as every node
PLACEHOLDER_HOSTS = frozenset({"unknown", "localhost"})


def is_plain_host(name: object) -> bool:
    """One node's plain name (see the module docstring)."""
    return (
        isinstance(name, str)
        and 0 < len(name) <= MAX_HOST_LEN
        and PLAIN_HOST.fullmatch(name) is not None
        and name.lower() not in KEYWORDS
    )


def why_not_plain(name: object) -> str:
    """One phrase saying why `name` is not a plain host name ("" when it is)."""
    if is_plain_host(name):
        return ""
    if not isinstance(name, str) or not name:
        return "is empty or not text"
    if len(name) > MAX_HOST_LEN:
        return f"is {len(name)} characters long (at most {MAX_HOST_LEN})"
    if name.lower() in KEYWORDS:
        return f"is the scheduler keyword {name!r}, which means every node"
    return "is not one plain node name (letters, digits, '.', '_', '-'; no hostlists, lists or spaces)"


def actionable_host(name: object) -> bool:
    """A name stoker may act on: plain and not a placeholder."""
    return is_plain_host(name) and str(name).lower() not in PLACEHOLDER_HOSTS


def short_name(name: str) -> str:
    """The name the scheduler knows a node by: the part of an FQDN before the first dot
    (`gpu02.cluster.local` -> `gpu02`); the name whole when it has no dot. The actions hand
    exactly this string to sinfo / scontrol, and check it first (launchers/actions/node_actions.py)."""
    return name.split(".", 1)[0]


def host_key(name: str) -> str:
    """One identity per node, for comparing names read from different files (a baseline, a
    verdict, records): the short name, case-folded (`GPU02`, `gpu02.cluster.local` and
    `gpu02` are one node). Comparison only: what is shown and acted on keeps its spelling."""
    return short_name(name).casefold()


def why_not_node(name: object) -> str:
    """Why the short name of `name` (what the scheduler would be handed) is not one node's
    name stoker may act on ("" when it is): the checks of this module on exactly that string,
    and never a bare number (`1.2.3.4x` -> `1`) or an address."""
    if not isinstance(name, str) or not actionable_host(name):
        return why_not_plain(name) or "is a placeholder, not a node's name"
    short = short_name(name)
    if all(part.isdigit() for part in name.split(".") if part):
        return "is an address, not a node name"
    if short.isdigit():
        return f"shortens to {short!r}, a number, not a node name"
    if not actionable_host(short):
        shown = why_not_plain(short) or "is a placeholder, not a node's name"
        return f"shortens to {short!r}, which {shown}"
    return ""
