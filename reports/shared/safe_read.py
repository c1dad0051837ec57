"""The one way stoker reads a file named by input: specs, workloads, records, imports.

Every such file is a regular file (a FIFO hung the report forever, a link to /dev/zero ate
14 GB in 30 s, a directory crashed it), of bounded size, UTF-8 where it is text; YAML is
parsed with bounded depth and bounded alias expansion (a nine-level billion-laughs spec
took over 60 s and 5 GB); JSON lines with bounded depth and digits. Failures are
UsageError, one line that names the file and says what to give instead (exit 2).
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import yaml

from reports.shared.errors import UsageError

MAX_YAML_BYTES = 4 << 20  # a spec or workload is a page of text
MAX_YAML_DEPTH = 64
MAX_YAML_NODES = 200_000  # after expanding aliases: the billion laughs stops here
MAX_JSON_DEPTH = 64
MAX_JSON_DIGITS = 400  # a figure longer than this is no measurement (and int() of 5000 raises)

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _refuse(path: Path, what: str, why: str) -> UsageError:
    return UsageError(f"{what} {path}: {why}; give a regular file")


def open_regular(path: str | os.PathLike[str], what: str = "file", max_bytes: int | None = None) -> IO[bytes]:
    """`path` opened for reading in binary, after checking (on the open file, so no swap
    between check and open) that it is a regular file of at most `max_bytes`."""
    p = Path(path)
    try:
        # O_NONBLOCK: opening a FIFO with no writer would block forever before fstat could refuse it
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except IsADirectoryError:
        raise _refuse(p, what, "is a directory") from None
    except OSError as exc:
        raise UsageError(f"cannot read {what} {p}: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        for test, name in _KINDS:
            if test(st.st_mode):
                raise _refuse(p, what, f"is {name}")
        if max_bytes is not None and st.st_size > max_bytes:
            raise UsageError(
                f"{what} {p}: is {st.st_size} bytes, more than the {max_bytes} a {what} may have"
            )
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: str | os.PathLike[str], what: str = "file", max_bytes: int | None = None) -> bytes:
    with open_regular(path, what, max_bytes) as fh:
        data = fh.read() if max_bytes is None else fh.read(max_bytes + 1)
    if max_bytes is not None and len(data) > max_bytes:  # grew since fstat
        raise UsageError(f"{what} {path}: is more than the {max_bytes} bytes a {what} may have")
    return data


def read_text(path: str | os.PathLike[str], what: str = "file", max_bytes: int | None = None) -> str:
    """The file as UTF-8 text; a latin-1 or binary file is refused with the offending offset."""
    data = read_bytes(path, what, max_bytes)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{what} {path}: not UTF-8 text (byte {exc.start}); save it as UTF-8") from None


def check_regular(path: str | os.PathLike[str], what: str = "file") -> None:
    """Refuse (UsageError) a path that exists and is no regular file; say nothing otherwise."""
    open_regular(path, what).close()


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader that counts nesting while composing (PyYAML recurses: 5000 levels crashed)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                raise _TooBig(f"nested more than {MAX_YAML_DEPTH} levels deep")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


class _TooBig(Exception):
    pass


def _expanded_size(root: yaml.Node) -> int:
    """Nodes the document would have with every alias expanded, without expanding it (each
    node's count is computed once); a cycle counts as too big."""
    memo: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    on_path: set[int] = set()
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            on_path.discard(key)
            kids = _children(node)
            memo[key] = min(MAX_YAML_NODES + 1, 1 + sum(memo[id(k)] for k in kids))
            continue
        if key in memo:
            continue
        if key in on_path:
            raise _TooBig("an alias refers to itself")
        on_path.add(key)
        stack.append((node, True))
        stack.extend((k, False) for k in _children(node) if id(k) not in memo)
    return memo[id(root)]


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [x for kv in node.value for x in kv]
    return []


def load_yaml(path: str | os.PathLike[str], what: str = "YAML file") -> Any:
    """The YAML document in `path`, read with the limits above; None for an empty file."""
    text = read_text(path, what, MAX_YAML_BYTES)
    return parse_yaml(text, f"{what} {path}")


def parse_yaml(text: str, where: str) -> Any:
    loader = _BoundedLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if (n := _expanded_size(node)) > MAX_YAML_NODES:
            raise _TooBig(f"expands to more than {MAX_YAML_NODES} values (n={n}; aliases of aliases?)")
        return loader.construct_document(node)
    except _TooBig as exc:
        raise UsageError(f"{where}: {exc}; write the values out plainly") from None
    except (ValueError, RecursionError) as exc:  # int() of thousands of digits, deep flow
        raise UsageError(f"{where}: a value cannot be read ({str(exc)[:80]}); write it plainly") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        raise UsageError(f"{where}: not valid YAML{at}: {getattr(exc, 'problem', None) or exc}") from None
    finally:
        loader.dispose()


def _depth_ok(line: str) -> bool:
    """Brackets never nest deeper than MAX_JSON_DEPTH (a cheap upper bound: brackets inside
    strings count too, which only makes the check stricter for odd lines)."""
    if line.count("[") + line.count("{") <= MAX_JSON_DEPTH:
        return True
    depth = 0
    for ch in line:
        if ch in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                return False
        elif ch in "]}":
            depth -= 1
    return True


def _no_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True
    if isinstance(value, dict):
        return all(_no_surrogate(k) and _no_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_no_surrogate(v) for v in value)
    return True


def _parse_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_JSON_DIGITS:
        raise _TooBig(f"a number of {len(text)} digits")
    return int(text)


def loads_line(line: str) -> tuple[Any, str]:
    """(value, "") for one JSON line, or (None, why) — never raises on bad data: not JSON,
    nested too deep, a number with hundreds of digits, a lone surrogate in a string."""
    if not _depth_ok(line):
        return None, f"nested more than {MAX_JSON_DEPTH} levels deep"
    try:
        obj = json.loads(line, parse_int=_parse_int)
    except json.JSONDecodeError as exc:
        return None, f"not JSON ({exc.msg})"
    except _TooBig as exc:
        return None, f"not a figure: {exc}"
    except (ValueError, RecursionError) as exc:
        return None, f"not JSON ({str(exc)[:60]})"
    if "\\u" in line and not _no_surrogate(obj):  # only \u escapes can make a lone surrogate
        return None, "a string holds a lone surrogate (\\ud800-\\udfff): not text"
    return obj, ""


def iter_lines(path: str | os.PathLike[str], what: str = "records file") -> Iterator[tuple[int, str]]:
    """(line number, text) of a regular UTF-8-ish text file, streamed (undecodable bytes
    replaced: a record line with them is named by the JSON check, not the whole file)."""
    with (
        open_regular(path, what) as raw,
        open(raw.fileno(), encoding="utf-8", errors="replace", closefd=False) as fh,
    ):
        yield from enumerate(fh, 1)
