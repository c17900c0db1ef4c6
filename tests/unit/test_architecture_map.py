"""ARCHITECTURE.md names real files, modules and functions: a map that points at something moved or
deleted sends a newcomer the wrong way, so a rename that forgets the map fails here.

Read with `ast`, never imported: checking the map costs no import of the package.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "cems_cli"
MAP = REPO / "ARCHITECTURE.md"

_CODE = re.compile(r"`([^`]+)`")
_IDENTIFIER = re.compile(r"^[A-Za-z_]\w*$")
# Bare names the map mentions in passing are checked when they cannot be anything else: a class name
# (`MemoryService`) or a private function of the module the sentence is about (`_rate_confidence`).
_CLASS = re.compile(r"^[A-Z][a-z]\w*$")
_PRIVATE = re.compile(r"^_[a-z]\w*$")
# Placeholders and runtime locations (`sql/NNN_name.sql`, `hooks/<event>.py`, `$CEMS_HOME/…`, `~/.claude`)
# name no file of the repository; commands and sample values (`import cems`, `op: search`) hold a space.
_NOT_A_NAME = re.compile(r"[\s<>$~*{}:]|NNN")
# Files CEMS writes at run time (`config.toml`, `spool.db`), not modules with an attribute.
_DATA_FILE = (".toml", ".json", ".log", ".db", ".lock", ".md", ".sha256", ".sock")


@cache
def _modules() -> dict[str, Path]:
    """Dotted module name (without `cems_cli.`) → file; a package is its `__init__.py`."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if parts:
            found[".".join(parts)] = path
    return found


@cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def _names(body: list[ast.stmt]) -> set[str]:
    """What a module or class body defines: functions, classes, assigned names, imported names."""
    names: set[str] = set()
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return names


def _classes(name: str) -> list[ast.ClassDef]:
    return [
        node
        for path in _modules().values()
        for node in _tree(path).body
        if isinstance(node, ast.ClassDef) and node.name == name
    ]


def _members(cls: ast.ClassDef) -> set[str]:
    """What a class defines, its bases' members included (a class split over bases by job, as
    `MemoryService` is, still has every method the map names)."""
    names = _names(cls.body)
    for base in cls.bases:
        if isinstance(base, ast.Name):
            for parent in _classes(base.id):
                names |= _members(parent)
    return names


def _function_anywhere(name: str) -> bool:
    return any(
        isinstance(node, ast.FunctionDef) and node.name == name
        for path in _modules().values()
        for node in ast.walk(_tree(path))
    )


def _modules_ending(parts: list[str]) -> list[Path]:
    dotted = ".".join(parts)
    if dotted.startswith("cems_cli."):
        dotted = dotted.removeprefix("cems_cli.")
        return [p for name, p in _modules().items() if name == dotted]
    return [p for name, p in _modules().items() if name == dotted or name.endswith("." + dotted)]


def _defined(parts: list[str]) -> bool | None:
    """Whether `module.name`, `module.Class.method`, `Class.method` or a dotted module exists; None when
    the text is not a reference to the package (`cand.explain`, `cems.rerankers`)."""
    for split in range(len(parts), 0, -1):
        modules = _modules_ending(parts[:split])
        if not modules:
            continue
        rest = parts[split:]
        if not rest:
            return True
        for module in modules:
            body = _tree(module).body
            if rest[0] not in _names(body):
                continue
            if len(rest) == 1:
                return True
            classes = [n for n in body if isinstance(n, ast.ClassDef) and n.name == rest[0]]
            if any(rest[1] in _members(c) for c in classes):
                return True
        return False
    classes = _classes(parts[0])
    if classes and len(parts) == 2:
        return any(parts[1] in _members(c) for c in classes)
    return None


def _file_exists(text: str) -> bool | None:
    """A path at the repository root or in the package (`rules/guard.py`, `cems_cli/cli/`), a bare module
    or migration file name (`hooks_install.py`, `013_team_walls.sql`); `path.name` names something in it."""
    bare = text.rstrip("/")
    if "/" not in text:
        if bare.endswith(".py"):
            return any(p.name == bare for p in PACKAGE.rglob(bare)) or (REPO / bare).is_file()
        if bare.endswith(".sql"):
            return (REPO / "sql" / bare).is_file()
        return None
    for root in (REPO, PACKAGE):
        if (root / bare).exists():
            return True
    folder, _, last = bare.rpartition("/")
    stem, dot, attribute = last.partition(".")
    if not dot or not _IDENTIFIER.match(attribute):
        return False
    module = ".".join([*folder.removeprefix("cems_cli/").split("/"), stem])
    return _defined(module.split(".") + [attribute]) is True


def _references() -> list[str]:
    text = MAP.read_text(encoding="utf-8")
    return [code.split("(")[0] for code in _CODE.findall(text) if not _NOT_A_NAME.search(code.split("(")[0])]


def test_every_file_module_and_function_the_map_names_exists():
    checked, missing = 0, []
    for reference in _references():
        if "/" in reference or reference.endswith((".py", ".sql")):
            found = _file_exists(reference)
        elif reference.endswith(_DATA_FILE):
            continue
        elif "." in reference and all(_IDENTIFIER.match(p) for p in reference.split(".")):
            found = _defined(reference.split("."))
        elif _CLASS.match(reference):
            found = bool(_classes(reference))
        elif _PRIVATE.match(reference):
            found = _function_anywhere(reference)
        else:
            continue
        if found is None:
            continue
        checked += 1
        if not found:
            missing.append(reference)
    assert not missing, f"ARCHITECTURE.md names what the tree does not have: {sorted(set(missing))}"
    # The map is mostly references: if far fewer are recognised, this test stopped reading them.
    assert checked >= 80, checked


def test_the_map_finds_a_moved_function_and_a_deleted_file():
    assert _defined(["pipeline", "run_search"]) is True
    assert _defined(["pipeline", "no_such_stage"]) is False
    assert _defined(["MemoryService", "recall"]) is True
    assert _file_exists("rules/guard.check") is True
    assert _file_exists("rules/no_such_module.py") is False
    assert _defined(["cand", "explain"]) is None  # a variable in the text, not a reference
    assert _file_exists("retrieval/") is True
    assert _function_anywhere("_rate_confidence") and not _function_anywhere("_no_such_stage")


def test_the_readme_links_the_map():
    assert "(ARCHITECTURE.md)" in (REPO / "README.md").read_text(encoding="utf-8")
