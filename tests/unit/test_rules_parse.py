"""The one-line rule form (`Bash: git push --force* — reason`) and rules files."""

from __future__ import annotations

import pytest

from cems_cli.rules.model import make_rule
from cems_cli.rules.parse import parse_one_line, parse_rules_file


@pytest.mark.parametrize(
    ("text", "tool", "pattern", "reason", "action"),
    [
        ("Bash: git push --force* — force pushes rewrite history",
         "Bash", "git push --force*", "force pushes rewrite history", "block"),
        ("Bash: git push --force* -- force pushes rewrite history",
         "Bash", "git push --force*", "force pushes rewrite history", "block"),
        ("Bash: git push --force* – en dash works", "Bash", "git push --force*", "en dash works", "block"),
        ("Bash: git push --force*", "Bash", "git push --force*", "", "block"),
        ("Bash:git status", "Bash", "git status", "", "block"),
        ("  Edit:   *.env   —   secrets live there  ", "Edit", "*.env", "secrets live there", "block"),
        ("warn Bash: rm -rf * — check the directory", "Bash", "rm -rf *", "check the directory", "warn"),
        ("ASK Edit: migrations/* -- they are frozen", "Edit", "migrations/*", "they are frozen", "ask"),
        # the first colon ends the tool; later colons belong to the pattern
        ("WebFetch: https://*.internal/* — wiki", "WebFetch", "https://*.internal/*", "wiki", "block"),
        ("mcp__github__create_issue: * — ask first", "mcp__github__create_issue", "*", "ask first", "block"),
        # patterns may contain ` -- `: the reason starts after the last one
        ("Bash: git checkout -- * -- discards local changes",
         "Bash", "git checkout -- *", "discards local changes", "block"),
        # an em dash splits at its first occurrence so reasons may contain dashes
        ("Bash: terraform destroy* — prod — really", "Bash", "terraform destroy*", "prod — really", "block"),
        ("Bash: git push --force* —", "Bash", "git push --force*", "", "block"),
        ("Bash: a\nb — wrapped", "Bash", "a b", "wrapped", "block"),
    ],
)
def test_parse_one_line(text, tool, pattern, reason, action):
    assert parse_one_line(text) == {"tool": tool, "pattern": pattern, "reason": reason, "action": action}


def test_parsed_parts_feed_make_rule():
    rule = make_rule(**parse_one_line("Bash: git push --force* — force pushes rewrite history"))
    assert (rule.tool, rule.pattern, rule.action, rule.reason) == (
        "Bash", "git push --force*", "block", "force pushes rewrite history")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("git push --force", "expected 'Tool: pattern — reason'"),
        ("", "expected 'Tool: pattern — reason'"),
        ("Bash:", "pattern must not be empty"),
        ("Bash:   — reason only", "pattern must not be empty"),
        ("curl http://example.com", "tool names have no spaces"),
        ("a b c: x", "tool names have no spaces"),
    ],
)
def test_parse_one_line_errors(text, message):
    with pytest.raises(ValueError, match=message):
        parse_one_line(text)


@pytest.mark.parametrize("text", ["nuke Bash: x", "deny mcp__github__create_issue: *", "allow *: x"])
def test_unknown_action_word(text):
    with pytest.raises(ValueError, match=r"unknown action '\w+' \(expected block, ask or warn\)"):
        parse_one_line(text)


RULES_FILE = """\
# team guard rails
Bash: git push --force* — force pushes rewrite history

ask Edit: migrations/* -- migrations are frozen
   # indented comment
warn Bash: rm -rf *
"""


def test_parse_rules_file():
    rules = parse_rules_file(RULES_FILE, project="acme/api", scope="shared", team_id="t1", user_id="u1")
    assert [(r.action, r.tool, r.pattern, r.reason) for r in rules] == [
        ("block", "Bash", "git push --force*", "force pushes rewrite history"),
        ("ask", "Edit", "migrations/*", "migrations are frozen"),
        ("warn", "Bash", "rm -rf *", ""),
    ]
    assert {(r.project, r.scope, r.team_id, r.user_id) for r in rules} == {
        ("project:acme/api", "shared", "t1", "u1")}
    assert len({r.id for r in rules}) == 3


def test_empty_rules_file():
    assert parse_rules_file("") == []
    assert parse_rules_file("# only comments\n\n") == []


def test_rules_file_errors_name_every_bad_line_and_store_nothing():
    text = "Bash: ok*\nnot a rule\nnuke Bash: x\nEdit: *.env\nBash:\n"
    with pytest.raises(ValueError) as error:
        parse_rules_file(text)
    message = str(error.value)
    assert message.startswith("line 2: expected 'Tool: pattern — reason'")
    assert "line 3: unknown action 'nuke' (expected block, ask or warn)" in message
    assert "line 5: pattern must not be empty" in message
    assert "line 1" not in message and "line 4" not in message
    assert "\n" not in message


def test_rules_file_options_are_validated():
    with pytest.raises(ValueError, match="line 1: unknown scope"):
        parse_rules_file("Bash: x", scope="public")
