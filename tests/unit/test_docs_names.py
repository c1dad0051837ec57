"""The docs cannot drift from the code: every repository path (`reports/shared/records.py`,
`tests/unit/`), module and dotted name (`reports.shared.outliers.confirmation_pairs`), test file
and constant (`NET_FIGURES`) that the README, docs/*.md and the modules' docstrings name exists.

Paths and modules are looked up on disk; a dotted name's attributes in the module's source
(ast: its top-level definitions, imports and a class's body), so nothing is imported. A test
file or constant named alone (`test_layout.py`, `FAMILIES`) must be in some file of the repo."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("netbench", "iobench", "launchers", "reports", "benchmarks", "tests")
TREES = (*PACKAGES, "docs", "examples")
SOURCES = ("netbench", "iobench", "launchers", "reports", "benchmarks")

PATH = re.compile(r"(?<![\w./<-])((?:" + "|".join(TREES) + r")/[\w./*{},-]*)")
DOTTED = re.compile(r"(?<![\w./-])((?:" + "|".join(PACKAGES) + r")(?:\.\w+)+)")
TEST_FILE = re.compile(r"(?<![\w/])(test_\w+\.py)\b")
CONSTANT = re.compile(r"`([A-Z][A-Z0-9]*_[A-Z0-9_]+)`")


def _texts() -> list[tuple[str, str]]:
    """(where, text) of the README, each docs/*.md and each module's docstring."""
    out = [("README.md", (ROOT / "README.md").read_text())]
    out += [(str(p.relative_to(ROOT)), p.read_text()) for p in sorted((ROOT / "docs").glob("*.md"))]
    for pkg in PACKAGES:
        for p in sorted((ROOT / pkg).rglob("*.py")):
            doc = ast.get_docstring(ast.parse(p.read_text()))
            if doc:
                out.append((str(p.relative_to(ROOT)), doc))
    return out


def _path_exists(name: str) -> bool:
    name = re.sub(r"[.,:;]*\*\*$", "", name).rstrip(".,:;")  # a bold mark after a name
    if re.search(r"[*{]|\.\.\.", name):  # a pattern: some file must match it
        pattern = re.sub(r"\*+", "*", re.sub(r"\{[^}]*\}?|\.\.\.", "*", name)).rstrip("/")
        return any(ROOT.glob(pattern))
    return (ROOT / name).exists() or (ROOT / (name + ".py")).exists()  # a module's path may omit .py


@functools.cache
def _defined(path: Path) -> dict[str, set[str]]:
    """Top-level names of a module, each with the names in its body (a class's attributes)."""
    out: dict[str, set[str]] = {}
    tree = ast.parse(path.read_text())
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            inner = set()
            if isinstance(node, ast.ClassDef):
                for n in node.body:
                    if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                        inner.add(n.name)
                    elif isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name):
                        inner.add(n.target.id)
                    elif isinstance(n, ast.Assign):
                        inner.update(t.id for t in n.targets if isinstance(t, ast.Name))
            out[node.name] = inner
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        out[n.id] = set()
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out[node.target.id] = set()
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                out[(a.asname or a.name).split(".")[0]] = set()
    return out


def _dotted_exists(name: str) -> bool:
    parts = name.rstrip(".").split(".")
    for i in range(len(parts), 0, -1):  # the longest prefix that is a module or package
        base = ROOT.joinpath(*parts[:i])
        module = base.with_suffix(".py") if base.with_suffix(".py").is_file() else base / "__init__.py"
        if module.is_file() or base.is_dir():
            rest = parts[i:]
            if not rest:
                return True
            if not module.is_file():
                return False
            names = _defined(module)
            if rest[0] not in names:
                return False
            return len(rest) == 1 or rest[1] in names[rest[0]] or not names[rest[0]]
    return False


@functools.cache
def _all_text() -> str:
    here = Path(__file__).resolve()
    files = [p for t in PACKAGES for p in (ROOT / t).rglob("*") if p.is_file() and p != here]
    return "\n".join(
        p.read_text(errors="replace") for p in files if p.suffix in {".py", ".sh", ".sbatch", ".yaml"}
    )


@functools.cache
def _file_names() -> set[str]:
    return {p.name for t in PACKAGES for p in (ROOT / t).rglob("*.py")}


def _missing() -> list[str]:
    out = []
    for where, text in _texts():
        out += [f"{where}: path {m}" for m in PATH.findall(text) if not _path_exists(m)]
        out += [f"{where}: name {m}" for m in DOTTED.findall(text) if not _dotted_exists(m)]
        out += [f"{where}: test file {m}" for m in TEST_FILE.findall(text) if m not in _file_names()]
        out += [f"{where}: constant {m}" for m in CONSTANT.findall(text) if m not in _all_text()]
    return sorted(set(out))


def test_every_name_the_docs_mention_exists() -> None:
    missing = _missing()
    assert not missing, "named in the docs but not in the code:\n" + "\n".join(missing)


# counts near the whole (a smaller one counts a subset: "the three ops nccl-tests added")
NUMBERS = {w: i for i, w in enumerate("six seven eight nine ten eleven twelve".split(), start=6)}
ALL_OPS = re.compile(r"\b(?:all|the) (" + "|".join(NUMBERS) + r") (?:ops|collectives)\b")
OTHER_OPS = re.compile(r"\b(?:all-reduce|all_reduce) and the other (" + "|".join(NUMBERS) + r")\b")


def test_the_docs_count_the_ops_right() -> None:
    from reports.shared.ops import OPS

    wrong = [
        f"{where}: {m.group(0)!r}"
        for where, text in _texts()
        for rule, n in ((ALL_OPS, len(OPS)), (OTHER_OPS, len(OPS) - 1))
        for m in rule.finditer(" ".join(text.split()))
        if NUMBERS[m.group(1)] != n
    ]
    assert not wrong, f"{len(OPS)} ops exist: {wrong}"


def test_the_checker_finds_a_name_that_is_gone() -> None:
    # by hand: names the docs once used that no longer exist, and ones that do
    assert not _path_exists("reports/columns.py") and not _path_exists("tests/gpu/")
    assert _path_exists("reports/shared/records.py") and _path_exists("tests/unit/")
    assert not _dotted_exists("reports.judging.network.localise.confirmation_pairs")
    assert _dotted_exists("reports.shared.outliers.confirmation_pairs")
    assert _dotted_exists("reports.shared.records.NetRecord.busbw_GBps")
    assert "FIGURE_RULES" not in _all_text() and "NET_FIGURES" in _all_text()
    assert "test_clusters.py" not in _file_names() and "test_layout.py" in _file_names()
