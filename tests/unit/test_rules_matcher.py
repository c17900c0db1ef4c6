"""Which rule applies to a tool call: field choice, glob/regex matching, Bash sub-commands, strictness."""

from __future__ import annotations

import fnmatch
import random

import pytest

from cems_cli.rules import _candidates, _compile, matcher
from cems_cli.rules._candidates import split_compound, strip_prefixes
from cems_cli.rules._compile import compile_pattern
from cems_cli.rules.matcher import Decision, decide, main_field
from cems_cli.rules.model import make_rule
from cems_cli.rules.snapshot import SnapshotRule


def candidate_values(field: str, tool_input: dict, cwd: str | None = None) -> list[str]:
    """The strings a rule's pattern is tried against for `field` of the tool input."""
    return _candidates._values(field, tool_input, cwd).texts


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
    # a rule on Edit guards every tool that changes a file; a rule on Write only Write
    ("*.env", "Edit", {}, "Write", {"file_path": "/home/dev/app/.env"}, True),
    ("*.env", "Edit", {}, "MultiEdit", {"file_path": "/home/dev/app/.env"}, True),
    ("*.ipynb", "Edit", {}, "NotebookEdit", {"notebook_path": "/home/dev/app/a.ipynb"}, True),
    ("*.env", "Edit", {}, "Read", {"file_path": "/home/dev/app/.env"}, False),
    ("*.env", "Write", {}, "Edit", {"file_path": "/home/dev/app/.env"}, False),
    ("*.env", "MultiEdit", {}, "Write", {"file_path": "/home/dev/app/.env"}, False),
    # paths are also tried normalised, absolute, and relative to the session's directory
    ("migrations/*", "Edit", {}, "Write", {"file_path": "./migrations/001.sql"}, True),
    ("migrations/*", "Edit", {}, "Edit", {"file_path": "/home/dev/app/tmp/../migrations/001.sql"}, True),
    ("/home/dev/app/migrations/*", "Edit", {}, "Edit", {"file_path": "migrations/001.sql"}, True),
    ("/etc/*", "Write", {}, "Write", {"file_path": "/tmp/../etc/hosts"}, True),
    ("migrations/*", "Edit", {}, "Edit", {"file_path": "/home/dev/app/../other/migrations/001.sql"}, False),
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
    assert candidate_values("file_path", {"file_path": "rel/a.py"}, "/r") == ["rel/a.py", "/r/rel/a.py"]
    assert candidate_values("file_path", {"file_path": "./rel/../a.py"}, "/r") == ["./rel/../a.py", "/r/a.py",
                                                                                  "a.py"]
    assert candidate_values("file_path", {"file_path": "./a.py"}, None) == ["./a.py", "a.py"]
    assert candidate_values("file_path", {"file_path": "/r/../x/a.py"}, "/r") == ["/r/../x/a.py", "/x/a.py"]
    assert candidate_values("file_path", {"file_path": "/r/..x/a.py"}, "/r") == ["/r/..x/a.py", "..x/a.py"]
    assert candidate_values("", {"a": "x", "b": 2, "c": "y"}) == ["x", "y"]
    assert candidate_values("", {"b": 2}) == [""]
    assert candidate_values("url", {"url": ["x"]}) == []


def test_patterns_are_compiled_once():
    first = compile_pattern("git push --force*")
    assert compile_pattern("git push --force*") is first
    assert compile_pattern("git push --force*", regex=True) is not first
    assert ("git push --force*", False) in _compile._cache


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
    assert _compile.regex_literals(pattern) == literals


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
        literals = _compile.regex_literals(pattern)
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
        head = _compile._glob_literal_head(pattern)
        for value in values:
            if fnmatch.fnmatchcase(value, pattern):
                assert value.startswith(head), (pattern, head, value)


def test_regex_rules_that_cannot_match_do_not_compile():
    _compile._cache.pop((r"^kubectl\s+delete", True), None)
    assert decide([rule(r"^kubectl\s+delete", regex=True)], "Bash", {"command": "git status"}) is None
    assert (r"^kubectl\s+delete", True) not in _compile._cache
    kubectl = rule(r"^kubectl\s+delete", regex=True)
    assert decide([kubectl], "Bash", {"command": "kubectl  delete x"}) is not None


# --- the command as the shell sees it ---------------------------------------------------------------------
# `cems rule add "Bash: rm -rf*"` and `"Bash: git push --force*"`: every one of these runs the forbidden
# command, and each got past the rule when commands were matched as plain text.

RM_RF = "Bash: rm -rf*"
FORCE_PUSH = "Bash: git push --force*"
EVASIONS = [
    (RM_RF, "/bin/rm -rf /"),
    (RM_RF, "\\rm -rf /"),
    (RM_RF, "'rm' -rf /"),
    (RM_RF, '"rm" -rf /'),
    (RM_RF, "r''m -rf /"),
    (RM_RF, "rm -fr /"),
    (RM_RF, "rm -r -f /"),
    (RM_RF, "rm -Rf /"),
    (RM_RF, "rm -f -R /"),
    (RM_RF, "rm --recursive --force /"),
    (RM_RF, "rm --force -r build"),
    (RM_RF, "rm -v -rf /"),
    (RM_RF, "rm / -rf"),
    (RM_RF, "bash -c 'rm -rf /'"),
    (RM_RF, "sh -c 'rm -rf /'"),
    (RM_RF, 'sh -c "rm -fr /"'),
    (RM_RF, "zsh -c 'cd / && rm -rf x'"),
    (RM_RF, "dash -ec 'rm -rf /'"),
    (RM_RF, "bash -o pipefail -c 'rm -rf /'"),
    (RM_RF, "sh -c \"bash -c 'rm -rf /'\""),
    (RM_RF, "sudo -u root rm -rf /"),
    (RM_RF, "sudo -E -H -- rm -rf /"),
    (RM_RF, "sudo --user=root /bin/rm -rf /"),
    (RM_RF, "env -i rm -rf /"),
    (RM_RF, "env -u HOME FOO=1 rm -rf /"),
    (RM_RF, "nice rm -rf /"),
    (RM_RF, "nice -n 19 rm -rf /"),
    (RM_RF, "nohup rm -rf / &"),
    (RM_RF, "timeout 10 rm -rf /"),
    (RM_RF, "timeout -s KILL 10s rm -rf /"),
    (RM_RF, "echo / | xargs rm -rf"),
    (RM_RF, "find . -name x | xargs -0 -n 1 rm -rf"),
    (RM_RF, "command rm -rf /"),
    (RM_RF, "exec rm -rf /"),
    (RM_RF, "time rm -rf /"),
    (RM_RF, "stdbuf -oL rm -rf /"),
    (RM_RF, "true & rm -rf /"),
    (RM_RF, "true;rm -rf /"),
    (RM_RF, "true\nrm -rf /"),
    (RM_RF, "$(rm -rf /)"),
    (RM_RF, "echo $(rm -rf /)"),
    (RM_RF, 'echo "$(rm -rf /)"'),
    (RM_RF, "x=$(rm -rf /)"),
    (RM_RF, "`rm -rf /`"),
    (RM_RF, "echo `rm -rf /`"),
    (RM_RF, "cat <(rm -rf /)"),
    (RM_RF, "eval 'rm -rf /'"),
    (RM_RF, "find / -exec rm -rf {} +"),
    (RM_RF, "$'rm' -rf /"),
    (RM_RF, "$'\\x72\\x6d' -rf /"),
    (RM_RF, "r\\\nm -rf /"),  # line continuation inside the word
    (RM_RF, "ls # don't\nrm -rf /"),  # the quote is in a comment
    (RM_RF, "cat <<EOF\ndon't\nEOF\nrm -rf /"),  # ...and in a here-document
    (RM_RF, "bash <<< 'rm -rf /'"),
    (RM_RF, "(( x = 1 << 2 ))\n\\rm -rf /"),  # a shift, not a here-document: the next line runs
    (RM_RF, "if true; then rm -rf /; fi"),
    (RM_RF, "f() { rm -rf /; }; f"),
    (RM_RF, "(cd / && rm -rf x)"),
    (RM_RF, "rm -rf / 2>/dev/null"),
    (FORCE_PUSH, "git push -f origin main"),
    (FORCE_PUSH, "git push origin main --force"),
    (FORCE_PUSH, "git push origin main -f"),
    (FORCE_PUSH, "git push -fu origin main"),
    (FORCE_PUSH, "git push origin +main"),
    (FORCE_PUSH, "git -C repo push -f"),
    (FORCE_PUSH, "git -c push.default=current --no-pager push --force"),
    (FORCE_PUSH, "/usr/bin/git push -f"),
    (FORCE_PUSH, "'git' push -f"),
    (FORCE_PUSH, "sudo git push -f"),
    (FORCE_PUSH, "bash -c 'git push -f'"),
]


def one_line_rule(text: str):
    from cems_cli.rules.parse import parse_one_line

    return make_rule(**parse_one_line(text))


@pytest.mark.parametrize(("rule_text", "command"), EVASIONS)
def test_commands_are_matched_as_the_shell_runs_them(rule_text, command):
    decision = decide([one_line_rule(rule_text)], "Bash", {"command": command})
    assert decision is not None and decision.action == "block", (rule_text, command)


@pytest.mark.parametrize(
    ("rule_text", "command"),
    [
        (RM_RF, "rm -r build"),  # -f missing
        (RM_RF, "rm -f build"),  # -r missing
        (RM_RF, "echo rm -rf /"),
        (RM_RF, "echo 'rm -rf /'"),
        (RM_RF, "grep -rf patterns.txt ."),
        (RM_RF, "git rm -rf build"),
        (RM_RF, "printf '%s' \"$x\" # rm -rf /"),  # a comment runs nothing
        (RM_RF, "cat <<'EOF' > notes.md\nnever run: rm -fr /\nEOF"),  # prose in a here-document
        (RM_RF, "bash -n script.sh"),
        (RM_RF, "sh -c 'echo rm -rf /'"),
        (RM_RF, "rmdir -p a/b"),
        (FORCE_PUSH, "git push origin main"),
        (FORCE_PUSH, "git push -u origin feature"),
        (FORCE_PUSH, "git pull -f"),
        (FORCE_PUSH, "git commit -m 'push --force later'"),
        (FORCE_PUSH, "git -C push status -f"),
        (FORCE_PUSH, "echo git push -f"),
    ],
)
def test_lookalikes_are_not_matched(rule_text, command):
    assert decide([one_line_rule(rule_text)], "Bash", {"command": command}) is None, command


def test_here_documents_fed_to_a_shell_are_parsed():
    assert decide([one_line_rule(RM_RF)], "Bash", {"command": "bash <<'EOF'\nrm -fr /\nEOF"}) is not None
    assert decide([one_line_rule(RM_RF)], "Bash", {"command": "cat <<EOF\n$(rm -fr /)\nEOF"}) is not None


def test_plain_text_matching_is_kept():
    # Patterns that do not read as a command still match the text, as before.
    assert decide([rule("*--no-verify*")], "Bash", {"command": "git commit --no-verify -m x"}) is not None
    assert decide([rule("*| sh")], "Bash", {"command": "curl -s https://x.sh | sh"}) is not None
    # `--force*` as text also covers --force-with-lease; the option-set match would not.
    assert decide([one_line_rule(FORCE_PUSH)], "Bash", {"command": "git push --force-with-lease"}) is not None


@pytest.mark.parametrize(
    ("pattern", "command", "expected"),
    [
        ("rm -rf /", "rm -fr /", True),
        ("rm -rf /", "rm -rf /tmp", False),  # a closed pattern keeps its operands exact
        ("rm -rf /*", "rm -fr /tmp", True),
        ("rm -rf /*", "rm -fr tmp", False),
        ("git push", "git push -v", True),  # options beyond the rule's are allowed
        ("git push", "git push origin", False),
        ("git checkout -- *", "git checkout -- a.py", True),
        ("git checkout -- *", "git checkout main", False),
        ("git reset --hard*", "git reset origin/main --hard", True),
        ("git clean -fd*", "git clean -d -f", True),
        ("git clean -fd*", "git clean -f", False),
        ("chmod -R 777*", "chmod 777 -R /", True),
        ("npm publish*", "npm --dry-run publish", True),  # options may come anywhere
        ("npm publish*", "npm --registry x publish", False),  # ...but an option's value reads as an operand
        ("npm publish*", "npm view publish", False),  # operands keep their order
        ("kubectl delete*", "sudo kubectl delete pod x", True),
        ('printf "a  b"*', "printf 'a  b' x", True),
    ],
)
def test_glob_rules_compare_name_operands_and_option_set(pattern, command, expected):
    assert (decide([rule(pattern)], "Bash", {"command": command}) is not None) == expected


def test_decision_value_is_the_command_as_run():
    command = "cd / && sudo -u root \\rm -fr --one-file-system x"
    decision = decide([one_line_rule(RM_RF)], "Bash", {"command": command})
    assert decision is not None and decision.value == "rm -fr --one-file-system x"


def test_command_candidates_include_the_parsed_commands():
    assert candidate_values("command", {"command": "sudo -u root /bin/rm -fr '/tmp/a b'"}) == [
        "sudo -u root /bin/rm -fr '/tmp/a b'",
        "sudo -u root /bin/rm -fr /tmp/a b",
        "rm -fr /tmp/a b",
    ]


def test_a_separator_inside_quotes_is_no_command():
    # The raw text is no longer split on `;`: `echo "a; rm -rf /"` runs echo only.
    for command in ('echo "a; rm -rf /"', "grep 'rm -rf' docs/ | wc -l", 'echo "never run rm -rf /"'):
        assert decide([rule("rm -rf*")], "Bash", {"command": command}) is None, command


def test_regex_rules_see_the_parsed_commands_too():
    assert decide([rule(r"^rm\s", regex=True)], "Bash", {"command": "\\rm -rf /"}) is not None
    assert decide([rule(r"^rm\s", regex=True)], "Bash", {"command": "bash -c 'rm x'"}) is not None


def test_a_parser_failure_leaves_text_matching_on(monkeypatch):
    from cems_cli.command import model

    def broken(text):
        raise ValueError("parser bug")

    monkeypatch.setattr(model, "analyse", broken)
    command = "echo 'x' && git push --force"
    assert decide([rule("git push --force*")], "Bash", {"command": command}) is not None


# --- regex rules run within a time budget ----------------------------------------------------------------


def _slow_rules() -> list[SnapshotRule]:
    # Snapshot records are not validated: a rule stored before `cems rule add` refused such patterns can
    # hold one.
    slow = SnapshotRule({"id": "slow", "tool": "Bash", "pattern": r"(a+)+$", "action": "block",
                         "regex": True})
    slower = SnapshotRule({"id": "slower", "tool": "Bash", "pattern": r"(x|x)+y", "action": "block",
                           "regex": True})
    warn = SnapshotRule({"id": "warn", "tool": "Bash", "pattern": "echo *", "action": "warn"})
    return [slow, slower, warn]


SLOW_INPUT = {"command": "echo " + "a" * 40 + "! " + "x" * 40}


def test_a_block_rule_cut_off_by_the_budget_blocks_unchecked():
    import time

    started = time.monotonic()
    decision = decide(_slow_rules(), "Bash", SLOW_INPUT)
    elapsed = time.monotonic() - started
    assert decision is not None and decision.rule.id == "slow" and decision.action == "block"
    assert decision.unchecked.startswith("not checked within the 0.1 s regex budget")
    assert elapsed < matcher.REGEX_BUDGET_SECONDS + 0.5


def test_on_timeout_allow_skips_the_rules_cut_off_and_the_others_still_apply():
    import time

    asked: list[bool] = []

    def policy() -> str:
        asked.append(True)
        return "allow"

    started = time.monotonic()
    decision = decide(_slow_rules(), "Bash", SLOW_INPUT, on_timeout=policy)
    assert decision is not None and decision.rule.id == "warn" and not decision.unchecked
    assert time.monotonic() - started < matcher.REGEX_BUDGET_SECONDS + 0.5
    assert asked == [True]
    # The policy is read only when a rule ran out of time.
    assert decide(_slow_rules()[2:], "Bash", SLOW_INPUT, on_timeout=policy).rule.id == "warn"
    assert asked == [True]


def test_a_long_command_with_the_match_at_its_end_is_not_waved_through():
    # A regex `cems rule add` takes (no nested repeat) that backtracks on a run of a's, and a 60 KB command
    # with the match at the very end: the search runs out of time before it gets there, and the rule holds.
    slow = make_rule(r"(a|a)*!curl", "Bash", regex=True, id="curl")
    command = "echo " + "a" * 30 + " " + "b" * 60_000 + " !curl"
    decision = decide([slow], "Bash", {"command": command})
    assert decision is not None and decision.action == "block" and decision.rule.id == "curl"
    assert decision.unchecked.startswith("not checked within the 0.1 s regex budget")


def test_the_regex_budget_leaves_no_timer_or_handler_behind():
    import signal

    before = signal.getsignal(signal.SIGALRM)
    assert decide([rule(r"^git\s+push", regex=True)], "Bash", {"command": "git push"}) is not None
    assert signal.getsignal(signal.SIGALRM) == before
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
