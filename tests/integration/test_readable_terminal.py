"""What `cems` prints for a person on a terminal: ids whole on a narrow one, `--explain` one line per factor
(every number behind `--explain-full`), `show` with values rather than Python reprs."""

from __future__ import annotations

import re

import pytest

from cems_cli.cli import common

NARROW = 44  # columns: every table must give way somewhere other than its ids

MEMORIES = (
    ("Deploys go through the staging cluster first, then production after a smoke test passes.", "decisions"),
    ("Staging deploys need the VPN and a green CI run on the release branch before they start.", "patterns"),
    ("The staging cluster runs in eu-west-1 with three nodes and autoscaling switched off.", "context"),
)


@pytest.fixture
def narrow(monkeypatch):
    monkeypatch.setattr(common.console, "_width", NARROW)


@pytest.fixture
def stored(cli) -> list[str]:
    ids = []
    for text, category in MEMORIES:
        result = cli("remember", text, "--category", category, "--tags", "deploy,staging", "--json")
        assert result.code == 0, result.stderr
        ids.append(result.json()["id"])
    return ids


@pytest.mark.real_model  # all three memories clear the confidence floor with the real model
def test_search_and_list_never_break_an_id(cli, stored, narrow):
    found = cli("search", "how do staging deploys work?")
    listed = cli("list")
    assert found.code == 0 and listed.code == 0, found.stderr + listed.stderr
    for output in (found.stdout, listed.stdout):
        assert max(map(len, output.splitlines())) <= NARROW
        for memory_id in stored:
            assert memory_id[:8] in output, output  # on one line, not folded into two


@pytest.mark.real_model  # all three memories clear the confidence floor with the real model
def test_explain_is_one_line_per_factor_and_full_behind_a_flag(cli, stored):
    compact = cli("search", "how do staging deploys work?", "--explain")
    full = cli("search", "how do staging deploys work?", "--explain-full")
    assert compact.code == 0 and full.code == 0, compact.stderr + full.stderr
    after_table = compact.stdout.split("\n#1 ", 1)[1]
    blocks = re.split(r"\n#\d+ ", "#1 " + after_table)
    assert len(blocks) == 3  # each result's header, then its factors
    for block in blocks:
        header, *factors = block.strip("\n").splitlines()
        assert re.search(r"^(#1 )?[0-9a-f]{8}  score \d\.\d{3}, confidence \d\.\d\d", header), header
        names = [line.split()[0] for line in factors]
        assert {"fusion", "adjust", "confidence"} <= set(names), factors
        assert len(names) == len(set(names))  # one line per factor
        assert all(line.startswith("  ") and "{" not in line for line in factors)
    assert "logistic(" in compact.stdout
    # The full form: every number, as JSON.
    assert '"fusion": {' in full.stdout and '"adjust": {' in full.stdout and '"built_from"' in full.stdout
    assert len(full.stdout.splitlines()) > 3 * len(compact.stdout.splitlines())


def test_show_prints_values_not_reprs(cli, stored):
    result = cli("show", stored[0][:8])
    assert result.code == 0, result.stderr
    out = result.stdout
    assert "deploy, staging" in out and "['deploy'" not in out
    assert "None" not in out and "False" not in out and "True" not in out
    assert re.search(r"pinned\s+│?\s*no\b", out), out
    assert stored[0] in out
