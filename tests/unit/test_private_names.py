"""No private name (`_x`) is imported across files: a helper another module needs is public
where it lives (or lives where it is used), so a split follows a seam, not a file's size. Read
from the source with ast: every `from <project module> import _name`, in functions too."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("netbench", "iobench", "launchers", "reports", "benchmarks", "tests")


def private_imports(source: str) -> list[str]:
    """`module.name` of each private name the source imports from a project module."""
    return [
        f"{node.module}.{a.name}"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in PACKAGES
        for a in node.names
        if a.name.startswith("_") and not a.name.startswith("__")
    ]


def test_no_private_name_is_imported_across_files() -> None:
    found = sorted(
        f"{p.relative_to(ROOT)}: {name}"
        for pkg in PACKAGES
        for p in (ROOT / pkg).rglob("*.py")
        for name in private_imports(p.read_text())
    )
    assert not found, "make it public where it lives, or move it:\n" + "\n".join(found)


def test_the_rule_sees_a_private_import_inside_a_function() -> None:
    src = "from reports.a import b, _c\ndef f():\n    from netbench.x import _y\nfrom os import _exit\n"
    assert private_imports(src) == ["reports.a._c", "netbench.x._y"]
