"""Rule validation and normalisation: nothing invalid can be built, so nothing invalid can be stored."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import datetime

import pytest

from cems_cli.rules.model import Rule, make_rule, validate_rule


def test_make_rule_defaults():
    rule = make_rule("git push --force*", "Bash")
    assert rule.action == "block"
    assert rule.reason == ""
    assert rule.field is None and rule.regex is False and rule.project is None
    assert rule.scope == "personal" and rule.user_id == "" and rule.team_id is None
    uuid.UUID(rule.id)  # a fresh id
    assert datetime.fromisoformat(rule.created_at).tzinfo is not None
    assert make_rule("x", "Bash").id != rule.id


def test_make_rule_normalises_input():
    rule = make_rule("  git push*  ", " Bash ", action=" ASK ", reason="  rewrites\n  history ",
                     field=" command ", project="Acme/API", scope="team", user_id="u1", team_id="t1")
    assert rule.pattern == "git push*"
    assert rule.tool == "Bash"
    assert rule.action == "ask"
    assert rule.reason == "rewrites history"
    assert rule.field == "command"
    assert rule.project == "project:acme/api"
    assert rule.scope == "shared"
    assert (rule.user_id, rule.team_id) == ("u1", "t1")


def test_make_rule_keeps_given_id_and_timestamp():
    rule = make_rule("x", "Bash", id="r-1", created_at="2026-01-02T03:04:05+00:00")
    assert (rule.id, rule.created_at) == ("r-1", "2026-01-02T03:04:05+00:00")


def test_project_prefix_is_not_doubled():
    assert make_rule("x", "Bash", project="project:org/repo").project == "project:org/repo"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"pattern": "x(", "tool": "Bash", "regex": True},
         "invalid regex 'x(': missing ), unterminated subpattern at position 1"),
        ({"pattern": "[a-", "tool": "Bash", "regex": True},
         "invalid regex '[a-': unterminated character set at position 0"),
        ({"pattern": "x", "tool": "Bash", "action": "nuke"},
         "unknown action 'nuke' (expected block, ask or warn)"),
        ({"pattern": "x", "tool": "Bash", "action": ""}, "unknown action '' (expected block, ask or warn)"),
        ({"pattern": "", "tool": "Bash"}, "pattern must not be empty"),
        ({"pattern": "   ", "tool": "Bash"}, "pattern must not be empty"),
        ({"pattern": "x", "tool": ""}, "tool must not be empty"),
        ({"pattern": "x", "tool": "  "}, "tool must not be empty"),
        ({"pattern": "x", "tool": "Bash Edit"},
         "invalid tool 'Bash Edit' (tool names have no spaces: Bash, mcp__github__*)"),
        ({"pattern": "x", "tool": "Bash", "field": " "}, "field must not be empty when given"),
        ({"pattern": "x", "tool": "Bash", "scope": "public"},
         "unknown scope 'public' (expected personal or shared)"),
        ({"pattern": "x", "tool": "Bash", "project": " "}, "project must not be empty"),
    ],
)
def test_invalid_rules_raise_one_line_errors(kwargs, message):
    with pytest.raises(ValueError) as error:
        make_rule(**kwargs)
    assert str(error.value) == message
    assert "\n" not in str(error.value)


def test_glob_patterns_are_not_regex_checked():
    assert make_rule("x(", "Bash").pattern == "x("  # a glob may contain any character


def test_rule_constructor_validates_too():
    with pytest.raises(ValueError, match="unknown action"):
        Rule(id="r", tool="Bash", pattern="x", action="deny")
    with pytest.raises(ValueError, match="project must look like"):
        Rule(id="r", tool="Bash", pattern="x", action="block", project="org/repo")
    with pytest.raises(ValueError, match="rule id must not be empty"):
        Rule(id=" ", tool="Bash", pattern="x", action="block")


def test_rule_is_frozen():
    rule = make_rule("x", "Bash")
    with pytest.raises(dataclasses.FrozenInstanceError):
        rule.action = "warn"  # type: ignore[misc]
    validate_rule(rule)


def test_strictness_orders_actions():
    ranks = [make_rule("x", "Bash", action=a).strictness for a in ("warn", "ask", "block")]
    assert ranks == sorted(ranks) and len(set(ranks)) == 3


def test_to_dict_from_dict_round_trip():
    rule = make_rule("^rm", "Bash", action="warn", reason="careful", field="command", regex=True,
                     project="org/repo", scope="shared", user_id="u", team_id="t")
    data = rule.to_dict()
    assert data == {
        "id": rule.id, "tool": "Bash", "pattern": "^rm", "action": "warn", "reason": "careful",
        "field": "command", "regex": True, "project": "project:org/repo", "scope": "shared",
        "user_id": "u", "team_id": "t", "created_at": rule.created_at,
    }
    assert Rule.from_dict(data) == rule
    assert Rule.from_dict({**data, "category": "rules", "extra": 1}) == rule  # unknown keys ignored


def test_from_dict_fills_optional_fields():
    rule = Rule.from_dict({"id": "r", "tool": "Bash", "pattern": "x", "action": "ask", "field": None})
    assert (rule.reason, rule.field, rule.regex, rule.scope) == ("", None, False, "personal")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"tool": "Bash", "pattern": "x", "action": "block"}, "rule is missing 'id'"),
        ({"id": "r", "tool": "Bash", "pattern": 3, "action": "block"},
         "rule field 'pattern' must be str, not int"),
        ({"id": "r", "tool": "Bash", "pattern": "x", "action": "block", "regex": "yes"},
         "rule field 'regex' must be bool, not str"),
        ({"id": "r", "tool": "Bash", "pattern": "x(", "action": "block", "regex": True}, "invalid regex"),
        ({"id": "r", "tool": "Bash", "pattern": "x", "action": "nuke"}, "unknown action"),
        (["not", "a", "dict"], "a rule must be an object, not list"),
    ],
)
def test_from_dict_rejects_bad_records(data, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Rule.from_dict(data)
