"""Which rule applies to a tool call: field choice, glob/regex matching, Bash sub-commands, strictness."""

from __future__ import annotations

import fnmatch
import random

import pytest

from cems_cli.rules import matcher
from cems_cli.rules.matcher import (
    Decision,
    candidate_values,
    compile_pattern,
    decide,
    main_field,
    split_compound,
    strip_prefixes,
)
from cems_cli.rules.model import make_rule
from cems_cli.rules.snapshot import SnapshotRule


def rule(pattern: str, tool: str = "Bash", action: str = "block", **kw):
    return make_rule(pattern, tool, action=action, **kw)


@pytest.mark.parametrize(
    ("tool", "field", "expected"),
    [
        ("Bash", None, "command"),
        ("Edit", None, "file_path"),
        ("MultiEdit", None, "file_path"),
        ("Write", None, "file_path"),
        ("Read", None, "file_path"),
        ("NotebookEdit", None, "notebook_path"),
        ("WebFetch", None, "url"),
        ("Bash", "description", "description"),
        ("mcp__github__create_issue", "title", "title"),
        ("mcp__github__create_issue", None, ""),
        ("Glob", None, ""),
        ("bash", None, ""),  # tool names are case-sensitive
    ],
)
def test_main_field(tool, field, expected):
    assert main_field(tool, field) == expected


# (rule pattern, rule tool, rule options, call tool, call input, should match)
MATCH_TABLE = [
    # Bash globs against the whole command
    ("git push --force*", "Bash", {}, "Bash", {"command": "git push --force origin main"}, True),
    ("git push --force*", "Bash", {}, "Bash", {"command": "git push --force"}, True),
    ("git push --force*", "Bash", {}, "Bash", {"command": "git push origin main"}, False),
    ("git push --force*", "Bash", {}, "Bash", {"command": "echo git push --force"}, False),
    ("rm -rf /", "Bash", {}, "Bash", {"command": "rm -rf /"}, True),
    ("rm -rf /", "Bash", {}, "Bash", {"command": "rm -rf /tmp/x"}, False),
    ("*--no-verify*", "Bash", {}, "Bash", {"command": "git commit -m x --no-verify"}, True),
    ("git push --force*", "Bash", {}, "Bash", {"command": "GIT PUSH --FORCE"}, False),  # case-sensitive
    # compound commands: each sub-command is tried
    ("git push --force*", "Bash", {}, "Bash", {"command": "cd x && git push --force"}, True),
    ("git push --force*", "Bash", {}, "Bash", {"command": "make test || git push --force"}, True),
    ("git push --force*", "Bash", {}, "Bash", {"command": "ls; git push --force origin"}, True),
    ("git push --force*", "Bash", {}, "Bash", {"command": "echo y | git push --force"}, True),
    ("git push --force*", "Bash", {}, "Bash", {"command": "git status\ngit push --force"}, True),
    ("git push --force*", "Bash", {}, "Bash", {"command": "(cd x; git push --force)"}, True),
    ("git push --force*", "Bash", {}, "Bash", {"command": "if true; then git push --force; fi"}, True),
    # leading env assignments and wrappers
    ("git push --force*", "Bash", {}, "Bash", {"command": "FOO=1 git push --force"}, True),
    ("git push --force*", "Bash", {}, "Bash", {"command": 'A=1 B="x y" git push --force'}, True),
    ("git push --force*", "Bash", {}, "Bash", {"command": "cd x && GIT_SSH=ssh git push --force"}, True),
    ("git push --force*", "Bash", {}, "Bash", {"command": "sudo git push --force"}, True),
    ("git push --force*", "Bash", {}, "Bash", {"command": "git  push   --force"}, True),  # extra spaces
    ('printf "a  b"*', "Bash", {}, "Bash", {"command": 'X=1 printf "a  b" | cat'}, True),  # spaces kept too
    ("git push --force*", "Bash", {}, "Bash", {"command": "FOO==1 git push --force"}, True),  # FOO is "=1"
    ("git push --force*", "Bash", {}, "Bash", {"command": "echo FOO=1 git push --force"}, False),
    # regex rules use re.search
    (r"git\s+push\s+.*(-f|--force)\b", "Bash", {"regex": True}, "Bash", {"command": "git push x -f"}, True),
    (r"^rm\b", "Bash", {"regex": True}, "Bash", {"command": "cd / && rm -rf x"}, True),
    (r"^rm\b", "Bash", {"regex": True}, "Bash", {"command": "firm x"}, False),
    (r"DROP\s+TABLE", "Bash", {"regex": True}, "Bash", {"command": "psql -c 'drop table x'"}, False),
    (r"(?i)DROP\s+TABLE", "Bash", {"regex": True}, "Bash", {"command": "psql -c 'drop table x'"}, True),
    # file tools match file_path, absolute or relative to cwd
    ("*.env", "Edit", {}, "Edit", {"file_path": "/home/dev/app/.env"}, True),
    ("*.env", "Write", {}, "Write", {"file_path": "/home/dev/app/.env.example"}, False),
    ("*.env*", "Read", {}, "Read", {"file_path": "/home/dev/app/.env.example"}, True),
    ("migrations/*", "Edit", {}, "Edit", {"file_path": "/home/dev/app/migrations/001.sql"}, True),
    ("migrations/*", "Edit", {}, "Edit", {"file_path": "/elsewhere/migrations/001.sql"}, False),
    ("/etc/*", "Write", {}, "Write", {"file_path": "/etc/hosts"}, True),
    ("*.ipynb", "NotebookEdit", {}, "NotebookEdit", {"notebook_path": "/home/dev/app/a.ipynb"}, True),
    ("*.lock", "MultiEdit", {}, "MultiEdit", {"file_path": "/home/dev/app/poetry.lock"}, True),
    # a rule on Edit does not fire for Write
    ("*.env", "Edit", {}, "Write", {"file_path": "/home/dev/app/.env"}, False),
    # WebFetch matches url
    ("https://*.internal/*", "WebFetch", {}, "WebFetch", {"url": "https://wiki.internal/page"}, True),
    ("https://*.internal/*", "WebFetch", {}, "WebFetch", {"url": "https://example.com/"}, False),
    # --field for any other argument
    ("*prod*", "Bash", {"field": "description"}, "Bash", {"command": "x", "description": "to prod"}, True),
    ("*prod*", "Bash", {"field": "description"}, "Bash", {"command": "deploy prod"}, False),
    # MCP tools by full name, or by a glob on the tool name
    ("*", "mcp__github__create_issue", {}, "mcp__github__create_issue", {"title": "x"}, True),
    ("*", "mcp__github__create_issue", {}, "mcp__github__create_issue", {}, True),
    ("*", "mcp__github__create_issue", {}, "mcp__github__delete_repo", {"repo": "x"}, False),
    ("*", "mcp__github__*", {}, "mcp__github__delete_repo", {"repo": "x"}, True),
    ("*", "mcp__github__*", {}, "mcp__gitlab__delete_repo", {"repo": "x"}, False),
    ("acme/*", "mcp__github__*", {"field": "repo"}, "mcp__github__delete_repo", {"repo": "acme/api"}, True),
    ("acme/*", "mcp__github__*", {"field": "repo"}, "mcp__github__delete_repo", {"repo": "other/api"}, False),
    ("*secret*", "mcp__db__query", {}, "mcp__db__query", {"sql": "select secret from t", "n": 3}, True),
    # a `*` tool applies the pattern to each tool's main argument
    ("/etc/*", "*", {}, "Edit", {"file_path": "/etc/passwd"}, True),
    ("/etc/*", "*", {}, "Bash", {"command": "cat /etc/passwd"}, False),
    ("*/etc/*", "*", {}, "Bash", {"command": "cat /etc/passwd"}, True),
    ("Edit*", "*", {}, "NotebookEdit", {"notebook_path": "x"}, False),
    # glob tool names are whole-name matches
    ("*", "Edit*", {}, "NotebookEdit", {"notebook_path": "x"}, False),
    ("*", "*Edit", {}, "NotebookEdit", {"notebook_path": "x"}, True),
    # character classes and ? use fnmatch semantics
    ("git push -[fF]*", "Bash", {}, "Bash", {"command": "git push -F origin"}, True),
    ("rm -r? /*", "Bash", {}, "Bash", {"command": "rm -rf /var"}, True),
    ("rm -r? /*", "Bash", {}, "Bash", {"command": "rm -r /var"}, False),
    # non-string or missing values never match and never crash
    ("*", "Bash", {}, "Bash", {}, False),
    ("*", "Bash", {}, "Bash", {"command": None}, False),
    ("*", "Bash", {}, "Bash", {"command": {"nested": "git push"}}, False),
    ("*", "Bash", {}, "Bash", {"command": ["git", "push"]}, False),
    ("*", "Edit", {}, "Edit", {"file_path": 42}, False),
    ("*", "Bash", {"field": "timeout"}, "Bash", {"command": "x", "timeout": 1000}, False),
]


@pytest.mark.parametrize(("pattern", "tool", "options", "call_tool", "tool_input", "expected"), MATCH_TABLE)
def test_match_table(pattern, tool, options, call_tool, tool_input, expected):
    decision = decide([rule(pattern, tool, **options)], call_tool, tool_input, cwd="/home/dev/app")
    assert (decision is not None) == expected, decision


def test_decision_reports_rule_action_and_matched_value():
    force = rule("git push --force*", reason="rewrites history")
    decision = decide([force], "Bash", {"command": "cd x && FOO=1 git push --force origin"})
    assert decision == Decision("block", force, "git push --force origin")
    assert decision.rule.reason == "rewrites history"


@pytest.mark.parametrize(
    ("actions", "expected_index"),
    [
        (["warn", "ask", "block"], 2),
        (["block", "ask", "warn"], 0),
        (["ask", "warn"], 0),
        (["warn", "ask"], 1),
        (["warn", "warn"], 0),  # ties go to the first rule
        (["ask", "ask", "warn"], 0),
        (["block", "block"], 0),
    ],
)
def test_strictest_wins_and_ties_go_to_first(actions, expected_index):
    rules = [rule("git *", action=action, id=f"r{i}") for i, action in enumerate(actions)]
    decision = decide(rules, "Bash", {"command": "git push"})
    assert decision is not None
    assert decision.rule.id == f"r{expected_index}"
    assert decision.action == actions[expected_index]


def test_non_matching_strict_rule_does_not_win():
    rules = [rule("rm *", action="block"), rule("git *", action="warn", id="w")]
    assert decide(rules, "Bash", {"command": "git status"}).rule.id == "w"


def test_no_rules_or_no_match_is_none():
    assert decide([], "Bash", {"command": "ls"}) is None
    assert decide([rule("rm *")], "Bash", {"command": "ls"}) is None


@pytest.mark.parametrize("bad_input", [None, "git push", ["git push"], 3])
def test_tool_input_that_is_not_an_object_never_matches(bad_input):
    assert decide([rule("*")], "Bash", bad_input) is None


def test_project_rules_apply_only_inside_their_project():
    scoped = rule("git push*", project="Acme/API")
    assert scoped.project == "project:acme/api"
    assert decide([scoped], "Bash", {"command": "git push"}, project="project:acme/api") is not None
    assert decide([scoped], "Bash", {"command": "git push"}, project="project:ACME/api") is not None
    assert decide([scoped], "Bash", {"command": "git push"}, project="project:other/repo") is None
    assert decide([scoped], "Bash", {"command": "git push"}, project=None) is None


def test_project_is_computed_lazily_and_once():
    calls = []

    def project():
        calls.append(1)
        return "project:acme/api"

    global_rule = rule("ls*")
    scoped = [rule("git push*", project="acme/api", id="a"), rule("git push*", project="acme/api", id="b")]
    assert decide([global_rule], "Bash", {"command": "ls"}, project=project) is not None
    assert calls == []  # no project rule: never computed
    assert decide(scoped, "Bash", {"command": "git status"}, project=project) is None
    assert calls == []  # project rules that do not match: never computed
    assert decide([rule("git push*", action="warn", project="acme/api"), *scoped], "Bash",
                  {"command": "git push"}, project=project).rule.id == "a"
    assert calls == [1]


def test_failing_project_lookup_skips_project_rules_only():
    def broken():
        raise PermissionError("cannot read .git/config")

    rules = [rule("git push*", project="acme/api", id="scoped"), rule("git *", action="warn", id="global")]
    assert decide(rules, "Bash", {"command": "git push"}, project=broken).rule.id == "global"


def test_a_broken_rule_does_not_disable_the_others():
    broken = SnapshotRule({"id": "bad", "tool": "Bash", "pattern": "x(", "action": "block", "regex": True})
    good = SnapshotRule({"id": "good", "tool": "Bash", "pattern": "git push*", "action": "block"})
    decision = decide([broken, good], "Bash", {"command": "git push"})
    assert decision is not None and decision.rule.id == "good"


def test_unknown_action_in_a_record_is_ignored():
    odd = SnapshotRule({"id": "odd", "tool": "Bash", "pattern": "*", "action": "nuke"})
    assert decide([odd], "Bash", {"command": "ls"}) is None


def test_snapshot_records_and_rules_decide_the_same():
    rules = [rule("git push --force*", id="a"), rule("*.env", "Edit", action="ask", id="b")]
    views = [SnapshotRule(r.to_dict()) for r in rules]
    for tool, tool_input in [("Bash", {"command": "git push --force"}), ("Edit", {"file_path": "/x/.env"}),
                             ("Bash", {"command": "ls"})]:
        expected = decide(rules, tool, tool_input)
        got = decide(views, tool, tool_input)
        assert (expected and (expected.action, expected.rule.id, expected.value)) == (
            got and (got.action, got.rule.id, got.value))


@pytest.mark.parametrize(
    ("command", "parts"),
    [
        ("ls", ["ls"]),
        ("a && b", ["a", "b"]),
        ("a || b ; c | d", ["a", "b", "c", "d"]),
        ("a\nb\n\n", ["a", "b"]),
        ("a |& b", ["a", "b"]),
        ("  ", []),
    ],
)
def test_split_compound(command, parts):
    assert split_compound(command) == parts


@pytest.mark.parametrize(
    ("command", "bare"),
    [
        ("git push", "git push"),
        ("FOO=1 git push", "git push"),
        ("FOO=1 BAR=2 git push", "git push"),
        ('FOO="a b" git push', "git push"),
        ("FOO='a b' BAR=\"c\" git push", "git push"),
        ("sudo env X=1 git push", "git push"),
        ("(git push", "git push"),
        ("1FOO=1 git push", "1FOO=1 git push"),  # not a valid name: not an assignment
        ("--x=1 git push", "--x=1 git push"),
        ("FOO=1", ""),
    ],
)
def test_strip_prefixes(command, bare):
    assert strip_prefixes(command) == bare


def test_candidate_values_for_paths_and_fallback():
    assert candidate_values("file_path", {"file_path": "/r/src/a.py"}, "/r") == ["/r/src/a.py", "src/a.py"]
    assert candidate_values("file_path", {"file_path": "/elsewhere/a.py"}, "/r") == ["/elsewhere/a.py"]
    assert candidate_values("file_path", {"file_path": "rel/a.py"}, "/r") == ["rel/a.py"]
    assert candidate_values("", {"a": "x", "b": 2, "c": "y"}) == ["x", "y"]
    assert candidate_values("", {"b": 2}) == [""]
    assert candidate_values("url", {"url": ["x"]}) == []


def test_patterns_are_compiled_once():
    first = compile_pattern("git push --force*")
    assert compile_pattern("git push --force*") is first
    assert compile_pattern("git push --force*", regex=True) is not first
    assert ("git push --force*", False) in matcher._cache


def _random_pattern(rng: random.Random) -> str:
    alphabet = ["a", "b", "/", "*", "*", "?", "[ab]", "[!a]", "-", " "]
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 7)))


def test_glob_semantics_equal_fnmatchcase():
    rng = random.Random(1234)
    values = ["", "a", "b", "ab", "ba", "aab", "a/b", "a-b a", "bbb", "abab", "a b", "-", "*", "a\nb"]
    for _ in range(3000):
        pattern = _random_pattern(rng)
        predicate = compile_pattern(pattern)
        for value in values:
            assert predicate(value) == fnmatch.fnmatchcase(value, pattern), (pattern, value)


def test_star_only_globs_handle_overlapping_head_and_tail():
    assert not compile_pattern("ab*b")("ab")
    assert compile_pattern("ab*b")("abb")
    assert compile_pattern("a*a*a")("aaa")
    assert not compile_pattern("a*a*a")("aa")
    assert compile_pattern("**")("")


@pytest.mark.parametrize(
    ("pattern", "literals"),
    [
        (r"^git\s+push\s+.*--force", ["git", "push", "--force"]),
        (r"\bterraform destroy\b", ["terraform destroy"]),
        (r"(?i)drop table", []),
        (r"(?x) drop table", []),
        (r"(?i:drop) table", [" table"]),
        (r"gits?", ["git"]),
        (r"ab{2}c", ["a", "c"]),
        (r"a{2,}?b", ["b"]),
        (r"x*", []),
        (r"push|pull", []),
        (r"(push|pull) --force", [" --force"]),
        (r"\Adocker rm", ["docker rm"]),
        (r".*secret", ["secret"]),
        (r"rm -rf /\.git", ["rm -rf /.git"]),
        (r"[)|(]x", ["x"]),
        (r"a\|b", ["a|b"]),
        (r"\x41bc", ["bc"]),
        (r"\u0041bc", ["bc"]),
        (r"\N{DIGIT ONE}23", ["23"]),
        (r"\10123", []),
        (r"(a)\1 23", [" 23"]),
        (r"DROP\s+(TABLE|DATABASE)\b", ["DROP"]),
    ],
)
def test_regex_literals(pattern, literals):
    import re

    re.compile(pattern)
    assert matcher.regex_literals(pattern) == literals


def test_regex_literals_are_always_inside_a_match():
    import re

    rng = random.Random(99)
    alphabet = ["a", "b", "c", " ", "^", "$", ".", "*", "+", "?", "|", "(", ")", "[ab]", "[^a]", "\\b",
                "\\s", "{2}", "{1,2}", "(?i)", "(?i:", "(?:", "\\.", "\\A", "*?", "\\|", "[]a]", "(?=a)",
                "(?x)", "#", "\\x61", "\\u0062", "\\N{LATIN SMALL LETTER A}", "\\141", "\\0", "\\1", "(a)"]
    strings = ["", "a", "ab", "abc", "cab", "a b", "AB", "aab c", "b.a", "ab ab", "ccc", "abcabc", " a",
               "A B", "a|b", "ba.", "aa bb", "#a"]
    checked = 0
    for _ in range(20000):
        pattern = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 7)))
        try:
            compiled = re.compile(pattern)
        except re.error:
            continue
        literals = matcher.regex_literals(pattern)
        for value in strings:
            if compiled.search(value):
                checked += 1
                assert all(text in value for text in literals), (pattern, literals, value)
    assert checked > 5000


def test_glob_literal_head_is_always_a_prefix_of_a_match():
    rng = random.Random(7)
    values = ["", "a", "ab", "ba", "a/b", "ab ab", "-a", "[a"]
    for _ in range(3000):
        pattern = _random_pattern(rng)
        head = matcher._glob_literal_head(pattern)
        for value in values:
            if fnmatch.fnmatchcase(value, pattern):
                assert value.startswith(head), (pattern, head, value)


def test_regex_rules_that_cannot_match_do_not_compile():
    matcher._cache.pop((r"^kubectl\s+delete", True), None)
    assert decide([rule(r"^kubectl\s+delete", regex=True)], "Bash", {"command": "git status"}) is None
    assert (r"^kubectl\s+delete", True) not in matcher._cache
    kubectl = rule(r"^kubectl\s+delete", regex=True)
    assert decide([kubectl], "Bash", {"command": "kubectl  delete x"}) is not None
