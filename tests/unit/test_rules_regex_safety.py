"""Regex rules that would backtrack catastrophically are refused where rules are written."""

from __future__ import annotations

import pytest

from cems_cli.rules.model import Rule, catastrophic_regex_error, make_rule
from cems_cli.rules.parse import parse_rules_file


@pytest.mark.parametrize(
    "pattern",
    [r"(a+)+$", r"(a*)*b", r"(\w+\s?)*$", r"(?:x+y?)+z", r"((a+)?)+", r"(a{2,})+", r"(?=(a+)+)x",
     r"(?i)(A+)+", r"x(?:y|(a+)*)+"],
)
def test_nested_unbounded_repeats_are_refused(pattern):
    message = catastrophic_regex_error(pattern)
    assert message is not None and "exponential" in message
    with pytest.raises(ValueError, match="exponential time"):
        make_rule(pattern, "Bash", regex=True)


@pytest.mark.parametrize(
    "pattern",
    [r"^rm\b", r"git\s+push\s+.*(-f|--force)\b", r"(\d+\.){3}\d+", r"(a++)+", r"(?>a+)+$", r"(ab)+",
     r"(a{1,3})+", r"curl .*\| *sh", r"(?i)drop\s+table"],
)
def test_ordinary_and_atomic_patterns_are_accepted(pattern):
    assert catastrophic_regex_error(pattern) is None
    assert make_rule(pattern, "Bash", regex=True).pattern == pattern


def test_globs_are_never_regex_checked():
    assert make_rule("(a+)+$", "Bash").pattern == "(a+)+$"


def test_a_stored_rule_still_loads():
    # Refused only where rules are written: a rule stored before the check must still load, be listed and
    # be removed, and the snapshot must still be rebuilt around it (the hook bounds its time).
    rule = Rule(id="old", tool="Bash", pattern=r"(a+)+$", action="block", regex=True)
    assert Rule.from_dict(rule.to_dict()) == rule


def test_invalid_regex_error_wins():
    with pytest.raises(ValueError, match="invalid regex"):
        make_rule("(a+", "Bash", regex=True)


def test_rules_files_go_through_the_same_check():
    # The one-line form has no regex flag, so a file's patterns are globs and pass as they are.
    assert parse_rules_file("Bash: (a+)+$")[0].regex is False
