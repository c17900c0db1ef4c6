"""Tests and benchmarks carry their own data: nothing under tests/ or bench/ may point at a `shared` folder
beside the checkout. A user's clone has no such folder, so a test reading it fails (or quietly skips) there
while passing on a machine that has one."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.paths import FIXTURES, PAYLOADS, SAMPLE_TRANSCRIPT

REPO = Path(__file__).resolve().parents[2]
SCANNED = ("tests", "bench")
# This file spells the patterns out, so it is the one file not scanned.
EXCLUDED = {Path(__file__).resolve()}
SKIPPED_DIRS = {"__pycache__", ".pytest_cache", ".ruff_cache", ".mypy_cache"}

# Ways a path to the sibling folder gets written: relative ("../" + the name), absolute (under /work), pathlib
# joins on either side of the name, os.path.join(…, "..", name), joinpath(name…), and the folder's own
# subfolders (fixtures, bench, spec, tools, hooks) written after the name and a slash.
SHARED_PATH = re.compile(
    r"""\.\.[\\/]shared\b"""
    r"""|/work/shared\b"""
    r"""|/\s*["']shared["']"""
    r"""|["']shared["']\s*/"""
    r"""|["']\.\.["']\s*,\s*["']shared["']"""
    r"""|joinpath\(\s*["']shared"""
    r"""|\bshared/(?:fixtures|bench|spec|tools|hooks)\b"""
)


def offending_lines(text: str) -> list[str]:
    return [f"{number}: {line.strip()}" for number, line in enumerate(text.splitlines(), 1)
            if SHARED_PATH.search(line)]


def scanned_files() -> list[Path]:
    files = []
    for top in SCANNED:
        for path in sorted((REPO / top).rglob("*")):
            if path.is_file() and not SKIPPED_DIRS & set(path.relative_to(REPO).parts):
                if path.resolve() not in EXCLUDED:
                    files.append(path)
    return files


@pytest.mark.parametrize(
    "line",
    [
        'PAYLOADS = REPO.parent / "@" / "fixtures" / "claude-code" / "payloads"',
        "SAMPLE = Path(__file__).resolve().parents[2].parent / '@'",
        'DATA = Path("../@/bench/locomo")',
        "see /work/@/spec/claude-code/hooks-reference.md",
        'os.path.join(REPO, "..", "@", "bench")',
        'REPO.parent.joinpath("@", "tools")',
        "`cems eval --locomo ../@/bench/locomo/locomo10.json`",
        'root = base / "@/fixtures"',
    ],
)
def test_the_scan_recognises_paths_to_the_sibling_folder(line):
    # The samples name the folder as "@": spelled out, they would be the very lines other checks look for.
    assert offending_lines(line.replace("@", "shared"))


@pytest.mark.parametrize(
    "line",
    [
        '(["remember", "x", "--scope", "shared"], None, "shared memories need a team")',
        'assert rule.scope == "shared"',
        "force pushes rewrite shared history",
        '"""Helpers shared by the bench scripts."""',
        'shared = cli("share", private, "--json").json()',
        "tests/support/shared_helpers.py",
    ],
)
def test_the_scan_leaves_other_uses_of_the_word_alone(line):
    assert offending_lines(line) == []


def test_no_file_under_tests_or_bench_points_at_a_sibling_shared_folder():
    files = scanned_files()
    assert any(path.name == "conftest.py" for path in files) and any(p.parent.name == "bench" for p in files)
    found = {}
    for path in files:
        lines = offending_lines(path.read_bytes().decode("utf-8", errors="replace"))
        if lines:
            found[str(path.relative_to(REPO))] = lines
    assert not found, "paths to ../shared (tests must use tests/fixtures instead):\n" + "\n".join(
        f"{name}:{line}" for name, lines in found.items() for line in lines
    )


def test_the_fixtures_the_tests_read_are_in_the_checkout():
    assert FIXTURES.is_relative_to(REPO / "tests")
    assert SAMPLE_TRANSCRIPT.is_file()
    payloads = {path.name for path in PAYLOADS.glob("*.json")}
    assert {"PreToolUse.json", "PostToolUse.json", "UserPromptSubmit.json", "Stop.json"} <= payloads
