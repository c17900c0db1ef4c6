"""hooks/pre_tool_use.py as Claude Code runs it: a real process, JSON on stdin, one answer or none out."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cems_cli.rules.model import make_rule
from cems_cli.rules.snapshot import REFRESH_FAILED_SUFFIX, write_snapshot
from tests.support.paths import PAYLOADS

REPO = Path(__file__).resolve().parents[2]
HOOK = REPO / "hooks" / "pre_tool_use.py"

# Runs the real hook script with `cems_cli.rules.refresh` replaced, to exercise the snapshot rebuild path
# without a database: "missing" makes the import fail, "raise" makes refresh_snapshot() raise, "write"
# writes a snapshot (and prints junk to stdout at the Python and file-descriptor level, as a database
# server starting up might). Every call is counted in $CEMS_HOME/refresh-calls.
REFRESH_DRIVER = """
import os, runpy, sys, types
mode, hook, repo = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path.insert(0, repo)

def refresh_snapshot():
    with open(os.path.join(os.environ["CEMS_HOME"], "refresh-calls"), "a") as calls:
        calls.write(mode + "\\n")
    if mode == "raise":
        raise RuntimeError("database unavailable")
    if mode == "hang":
        import time
        time.sleep(60)
    print("starting database...")
    os.write(1, b"waiting for server to start.... done\\n")
    from cems_cli.rules.model import make_rule
    from cems_cli.rules.snapshot import write_snapshot
    write_snapshot([make_rule("git push --force*", "Bash", reason="from the database", id="db-rule")])

if mode == "missing":
    sys.modules["cems_cli.rules.refresh"] = None
else:
    fake = types.ModuleType("cems_cli.rules.refresh")
    fake.refresh_snapshot = refresh_snapshot
    sys.modules["cems_cli.rules.refresh"] = fake
sys.argv = [hook]
runpy.run_path(hook, run_name="__main__")
"""


class Result:
    def __init__(self, proc: subprocess.CompletedProcess[bytes]) -> None:
        self.code = proc.returncode
        self.stdout = proc.stdout.decode()
        self.stderr = proc.stderr.decode()

    @property
    def answer(self) -> dict | None:
        return json.loads(self.stdout) if self.stdout.strip() else None

    @property
    def output(self) -> dict:
        return self.answer["hookSpecificOutput"]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "cems-home"
    path.mkdir()
    return path


def hook_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CEMS_")}
    env.pop("PYTHONPATH", None)  # the script must find cems_cli on its own
    env.update(CEMS_HOME=str(home), **extra)
    return env


def run_hook(home: Path, stdin: bytes | dict, refresh: str | None = None, **extra: str) -> Result:
    data = json.dumps(stdin).encode() if isinstance(stdin, dict) else stdin
    command = [sys.executable, str(HOOK)]
    if refresh is not None:
        command = [sys.executable, "-c", REFRESH_DRIVER, refresh, str(HOOK), str(REPO)]
    proc = subprocess.run(command, input=data, capture_output=True, env=hook_env(home, **extra),
                          cwd=str(home.parent), timeout=60)
    return Result(proc)


def set_rules(home: Path, *rules) -> None:
    write_snapshot(list(rules), home / "rules.snapshot.json")


def set_raw_snapshot(home: Path, document: dict) -> None:
    """A snapshot CEMS did not build from `Rule`s (one stored before a check existed), with its digest."""
    raw = json.dumps(document).encode()
    (home / "rules.snapshot.json").write_bytes(raw)
    (home / "rules.snapshot.json.sha256").write_text(hashlib.sha256(raw).hexdigest() + "\n")


def bash(command: str, cwd: str = "/tmp") -> dict:
    return {"session_id": "s1", "hook_event_name": "PreToolUse", "cwd": cwd, "tool_name": "Bash",
            "tool_input": {"command": command, "description": "test"}, "tool_use_id": "toolu_1"}


def assert_silent(result: Result) -> None:
    assert (result.code, result.stdout) == (0, ""), result.stderr
    assert "Traceback" not in result.stderr


# --- decisions ------------------------------------------------------------------------------------------

def test_block_denies_with_the_reason(home):
    set_rules(home, make_rule("git push --force*", "Bash", reason="force pushes rewrite history", id="r1"))
    result = run_hook(home, bash("cd repo && git push --force origin main"))
    assert result.code == 0
    assert result.answer == {"hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason":
            "Blocked by CEMS rule r1: force pushes rewrite history (pattern 'git push --force*')",
    }}
    assert result.stdout.count("\n") == 1


def test_ask_prompts_the_user(home):
    set_rules(home, make_rule("terraform apply*", "Bash", action="ask", reason="touches prod", id="r2"))
    output = run_hook(home, bash("terraform apply -auto-approve")).output
    assert output["permissionDecision"] == "ask"
    assert output["permissionDecisionReason"] == (
        "CEMS rule r2 asks for confirmation: touches prod (pattern 'terraform apply*')")


def test_warn_adds_context_without_a_permission_decision(home):
    set_rules(home, make_rule("rm -rf *", "Bash", action="warn", reason="check the path", id="r3"))
    output = run_hook(home, bash("rm -rf build")).output
    assert output == {"hookEventName": "PreToolUse",
                      "additionalContext": "Warning from CEMS rule r3: check the path (pattern 'rm -rf *')"}


def test_strictest_rule_wins(home):
    set_rules(home,
              make_rule("git *", "Bash", action="warn", id="w"),
              make_rule("git push*", "Bash", action="ask", id="a"),
              make_rule("git push --force*", "Bash", action="block", id="b"))
    assert run_hook(home, bash("git push --force")).output["permissionDecision"] == "deny"
    assert run_hook(home, bash("git push")).output["permissionDecision"] == "ask"
    assert "additionalContext" in run_hook(home, bash("git status")).output


def test_no_match_is_silent(home):
    set_rules(home, make_rule("git push --force*", "Bash"))
    assert_silent(run_hook(home, bash("git push origin main")))


def test_empty_snapshot_is_silent(home):
    set_rules(home)
    assert_silent(run_hook(home, bash("git push --force")))


def test_mcp_tool_rule(home):
    set_rules(home, make_rule("*", "mcp__github__*", action="ask", id="gh"))
    payload = {"hook_event_name": "PreToolUse", "cwd": "/tmp", "tool_name": "mcp__github__create_issue",
               "tool_input": {"title": "x"}}
    assert run_hook(home, payload).output["permissionDecision"] == "ask"
    assert_silent(run_hook(home, {**payload, "tool_name": "mcp__slack__post"}))


def test_other_events_are_ignored(home):
    set_rules(home, make_rule("*", "Bash"))
    assert_silent(run_hook(home, {**bash("ls"), "hook_event_name": "PostToolUse"}))


# --- the fixture payloads -------------------------------------------------------------------------------

def fixture(name: str) -> dict:
    return json.loads((PAYLOADS / name).read_text(encoding="utf-8"))


def test_fixture_bash_payload(home):
    payload = fixture("PreToolUse.json")  # rg -n "timeout=" src/
    set_rules(home, make_rule("rg *", "Bash", reason="use the Grep tool", id="grep"))
    assert run_hook(home, payload).output["permissionDecision"] == "deny"
    set_rules(home, make_rule("git push*", "Bash"))
    assert_silent(run_hook(home, payload))


def test_fixture_edit_payload(home):
    payload = fixture("PreToolUse-Edit.json")  # src/invoice_worker/webhooks.py
    set_rules(home, make_rule("*/webhooks.py", "Edit", action="ask", id="hooks"))
    assert run_hook(home, payload).output["permissionDecision"] == "ask"
    set_rules(home, make_rule("*/webhooks.py", "Write", action="ask", id="hooks"))
    assert_silent(run_hook(home, payload))


def test_fixture_write_payload_matches_paths_relative_to_cwd(home):
    payload = fixture("PreToolUse-Write.json")  # <cwd>/tests/test_webhook_timeout.py
    set_rules(home, make_rule("tests/*", "Write", action="warn", reason="keep tests small", id="t"))
    assert "keep tests small" in run_hook(home, payload).output["additionalContext"]


@pytest.mark.parametrize(
    "name", ["PostToolUse.json", "UserPromptSubmit.json", "Stop.json", "SessionStart.json"]
)
def test_fixture_payloads_of_other_events_are_ignored(home, name):
    set_rules(home, make_rule("*", "*"))
    assert_silent(run_hook(home, fixture(name)))


# --- commands as the shell runs them, files by every editing tool ----------------------------------------

def one_line(text: str, rule_id: str):
    from cems_cli.rules.parse import parse_one_line

    return make_rule(**parse_one_line(text), id=rule_id)


@pytest.mark.parametrize(
    "command",
    ["/bin/rm -rf /", "\\rm -rf /", "'rm' -rf /", "rm -fr /", "rm -r -f /", "rm -Rf /",
     "rm --recursive --force /", "bash -c 'rm -rf /'", "sh -c 'rm -rf /'", "sudo -u root rm -rf /",
     "env -i rm -rf /", "nice rm -rf /",
     "timeout 5 rm -rf /", "echo / | xargs rm -rf", "true & rm -rf /", "$(rm -rf /)", "`rm -rf /`"],
)
def test_rm_rf_is_blocked_however_it_is_spelt(home, command):
    set_rules(home, one_line("Bash: rm -rf* — never delete recursively", "rm"))
    output = run_hook(home, bash(command)).output
    assert output["permissionDecision"] == "deny", command
    assert output["permissionDecisionReason"].startswith("Blocked by CEMS rule rm: never delete recursively")


@pytest.mark.parametrize("command", ["git push -f origin main", "git push origin main --force"])
def test_force_push_is_blocked_in_any_option_order(home, command):
    set_rules(home, one_line("Bash: git push --force* — rewrites history", "fp"))
    assert run_hook(home, bash(command)).output["permissionDecision"] == "deny"


@pytest.mark.parametrize("command", ["rm -r build", "echo 'rm -rf /'", "git push origin main"])
def test_lookalikes_pass(home, command):
    set_rules(home, one_line("Bash: rm -rf*", "rm"), one_line("Bash: git push --force*", "fp"))
    assert_silent(run_hook(home, bash(command)))


def edit_payload(tool: str, file_path: str, cwd: str) -> dict:
    tool_input = {"file_path": file_path, "old_string": "a", "new_string": "b"}
    if tool == "Write":
        tool_input = {"file_path": file_path, "content": "x"}
    elif tool == "MultiEdit":
        tool_input = {"file_path": file_path, "edits": [{"old_string": "a", "new_string": "b"}]}
    return {"session_id": "s1", "hook_event_name": "PreToolUse", "cwd": cwd, "tool_name": tool,
            "tool_input": tool_input, "tool_use_id": "toolu_1"}


@pytest.mark.parametrize("tool", ["Edit", "Write", "MultiEdit"])
@pytest.mark.parametrize("path", ["/repo/migrations/001.sql", "migrations/001.sql", "./migrations/001.sql",
                                  "/repo/src/../migrations/001.sql"])
def test_edit_rules_guard_every_editing_tool_relative_to_the_session(home, tool, path):
    set_rules(home, make_rule("migrations/*", "Edit", action="ask", reason="frozen", id="mig"))
    assert run_hook(home, edit_payload(tool, path, "/repo")).output["permissionDecision"] == "ask"


def test_edit_rules_do_not_reach_outside_the_session(home):
    set_rules(home, make_rule("migrations/*", "Edit", action="ask", id="mig"))
    assert_silent(run_hook(home, edit_payload("Write", "/elsewhere/migrations/001.sql", "/repo")))
    assert_silent(run_hook(home, edit_payload("Read", "/repo/migrations/001.sql", "/repo")))


def test_catastrophic_regex_in_the_snapshot_is_cut_off_and_blocks_unchecked(home):
    import time

    # `cems rule add` refuses (a+)+$; a snapshot can still hold one (a rule stored before that check).
    set_raw_snapshot(home, {"version": 1, "rules": [
        {"id": "slow", "tool": "Bash", "pattern": "(a+)+$", "action": "block", "regex": True},
        {"id": "fp", "tool": "Bash", "pattern": "git push --force*", "action": "warn"},
    ]})
    started = time.monotonic()
    result = run_hook(home, bash("git push --force " + "a" * 60 + "!"))
    assert time.monotonic() - started < 5
    assert result.code == 0
    assert result.output["permissionDecision"] == "deny"
    reason = result.output["permissionDecisionReason"]
    assert reason.startswith("Blocked by CEMS rule slow")
    assert "not checked within the 0.1 s regex budget" in reason
    # The user may choose to let such calls through (never the agent: the setting is the hook's environment
    # or config.toml in CEMS's home).
    allowed = run_hook(home, bash("git push --force " + "a" * 60 + "!"), CEMS_RULES_ON_TIMEOUT="allow")
    assert "rule fp" in allowed.output["additionalContext"]
    (home / "config.toml").write_text('rules_on_timeout = "allow"\n')
    allowed = run_hook(home, bash("git push --force " + "a" * 60 + "!"))
    assert "rule fp" in allowed.output["additionalContext"]


def test_a_60kb_command_with_the_match_at_its_end_is_denied(home):
    set_rules(home, make_rule(r"(a|a)*!curl", "Bash", regex=True, id="curl", reason="no curl"))
    result = run_hook(home, bash("echo " + "a" * 30 + " " + "b" * 60_000 + " !curl"))
    assert result.output["permissionDecision"] == "deny"
    assert result.output["permissionDecisionReason"].startswith("Blocked by CEMS rule curl: no curl")


# --- projects -------------------------------------------------------------------------------------------

def make_repo(root: Path, remote: str) -> Path:
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "config").write_text(f'[core]\n\tbare = false\n[remote "origin"]\n\turl = {remote}\n')
    (root / "src").mkdir()
    return root


def test_project_rule_applies_only_inside_its_project(home, tmp_path):
    repo = make_repo(tmp_path / "api", "git@github.com:Acme/API.git")
    other = make_repo(tmp_path / "web", "https://github.com/acme/web.git")
    set_rules(home, make_rule("git push*", "Bash", project="acme/api", id="p"))
    assert run_hook(home, bash("git push", cwd=str(repo / "src"))).output["permissionDecision"] == "deny"
    assert_silent(run_hook(home, bash("git push", cwd=str(other))))
    assert_silent(run_hook(home, bash("git push", cwd=str(tmp_path))))
    assert_silent(run_hook(home, {k: v for k, v in bash("git push").items() if k != "cwd"}))


def test_global_rule_still_applies_when_project_lookup_is_impossible(home):
    set_rules(home, make_rule("git push*", "Bash", project="acme/api", action="block", id="p"),
              make_rule("git *", "Bash", action="warn", id="g"))
    result = run_hook(home, bash("git push", cwd="/nonexistent/dir"))
    assert "additionalContext" in result.output


# --- malformed input ------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "stdin",
    [
        b"",
        b"not json at all",
        b"[1, 2, 3]",
        b'"a string"',
        b"{}",
        b'{"hook_event_name": "PreToolUse"}',
        b'{"tool_name": "Bash"}',
        b'{"tool_name": "Bash", "tool_input": "git push --force"}',
        b'{"tool_name": 42, "tool_input": {"command": "git push --force"}}',
        b'{"tool_name": "Bash", "tool_input": {"command": ["git", "push", "--force"]}}',
        b'{"tool_name": "Bash", "tool_input": {"command": null}}',
        b"\xff\xfe\xfa not utf-8",
        b'{"tool_name": "Bash", "tool_input": {"command": "git push --force"',  # truncated
        b"[" * 200_000,
    ],
)
def test_malformed_input_exits_zero_silently(home, stdin):
    set_rules(home, make_rule("git push --force*", "Bash"))
    assert_silent(run_hook(home, stdin))


def test_twenty_megabytes_of_garbage(home):
    set_rules(home, make_rule("*", "Bash"))
    assert_silent(run_hook(home, b"x" * (20 * 1024 * 1024)))


def test_twenty_megabyte_payload_is_still_checked(home):
    set_rules(home, make_rule("git push --force*", "Bash", id="big"))
    payload = bash("git push --force " + "a" * (20 * 1024 * 1024))
    assert run_hook(home, payload).output["permissionDecision"] == "deny"


def test_invalid_utf8_inside_a_payload_does_not_disable_rules(home):
    set_rules(home, make_rule("git push --force*", "Bash"))
    raw = b'{"tool_name": "Bash", "tool_input": {"command": "git push --force \xff\xfe"}}'
    assert run_hook(home, raw).output["permissionDecision"] == "deny"


# --- switches and failures ------------------------------------------------------------------------------

def test_cems_disable_turns_the_hook_off(home):
    set_rules(home, make_rule("git push --force*", "Bash"))
    assert_silent(run_hook(home, bash("git push --force"), CEMS_DISABLE="1"))
    assert run_hook(home, bash("git push --force"), CEMS_DISABLE="0").output["permissionDecision"] == "deny"


def test_corrupt_snapshot_that_cannot_be_rebuilt_denies(home):
    (home / "rules.snapshot.json").write_text('{"version": 1, "rules": [')
    result = run_hook(home, bash("ls"), refresh="missing")
    assert result.output["permissionDecision"] == "deny"
    assert "cems rule list" in result.output["permissionDecisionReason"]
    assert "rebuild failed" in (home / "logs" / "hooks.log").read_text()


# --- the snapshot is the one CEMS wrote ------------------------------------------------------------------

EMPTY_SNAPSHOT = '{"version":1,"rules":[]}'


def test_a_snapshot_emptied_outside_cems_is_rebuilt_from_the_store(home):
    set_rules(home, make_rule("rm -rf*", "Bash", id="rm"))
    (home / "rules.snapshot.json").write_text(EMPTY_SNAPSHOT)  # what the agent would write
    result = run_hook(home, bash("git push --force"), refresh="write")
    assert result.output["permissionDecision"] == "deny"  # the store's rule, rebuilt
    assert (home / "refresh-calls").read_text().splitlines() == ["write"]


@pytest.mark.parametrize("mode", ["missing", "raise"])
def test_a_snapshot_emptied_outside_cems_that_cannot_be_rebuilt_denies_everything(home, mode):
    set_rules(home, make_rule("rm -rf*", "Bash", id="rm"))
    (home / "rules.snapshot.json").write_text(EMPTY_SNAPSHOT)
    for command in ("rm -rf build", "ls"):
        result = run_hook(home, bash(command), refresh=mode)
        assert result.output["permissionDecision"] == "deny"
        assert "changed outside CEMS" in result.output["permissionDecisionReason"]


@pytest.mark.parametrize("gone", ["rules.snapshot.json", "rules.snapshot.json.sha256"])
def test_a_snapshot_or_digest_deleted_outside_cems_denies_until_rebuilt(home, gone):
    set_rules(home, make_rule("rm -rf*", "Bash", id="rm"))
    (home / gone).unlink()
    assert run_hook(home, bash("ls"), refresh="raise").output["permissionDecision"] == "deny"


def test_both_files_deleted_beside_a_store_deny_until_rebuilt(home):
    # No snapshot and no digest, but a store: not a fresh home, so not "no rules".
    (home / "pg").mkdir()
    assert_silent(run_hook(home, bash("ls"), refresh="raise"))  # a first initdb cut short: still fresh
    (home / "pg" / "PG_VERSION").write_text("16\n")
    (home / ("rules.snapshot.json" + REFRESH_FAILED_SUFFIX)).unlink()
    assert run_hook(home, bash("ls"), refresh="raise").output["permissionDecision"] == "deny"


def test_a_rebuild_that_hangs_is_stopped_and_denies(home):
    set_rules(home, make_rule("rm -rf*", "Bash", id="rm"))
    (home / "rules.snapshot.json").write_text(EMPTY_SNAPSHOT)
    import time

    started = time.monotonic()
    result = run_hook(home, bash("ls"), refresh="hang")
    assert time.monotonic() - started < 4.5  # Claude Code kills the hook at 5 s, and then lets the call run
    assert result.output["permissionDecision"] == "deny"


@pytest.mark.parametrize("mode", ["missing", "raise"])
def test_missing_snapshot_with_failing_refresh_allows(home, mode):
    assert_silent(run_hook(home, bash("git push --force"), refresh=mode))
    assert (home / ("rules.snapshot.json" + REFRESH_FAILED_SUFFIX)).exists()


def test_failed_refresh_is_not_retried_on_every_call(home):
    for _ in range(3):
        assert_silent(run_hook(home, bash("ls"), refresh="raise"))
    assert (home / "refresh-calls").read_text().splitlines() == ["raise"]


def test_missing_snapshot_is_rebuilt_and_enforced(home):
    result = run_hook(home, bash("git push --force"), refresh="write")
    assert result.code == 0
    # The refresh's chatter went to stderr; stdout holds exactly the answer.
    reason = result.output["permissionDecisionReason"]
    assert reason.startswith("Blocked by CEMS rule db-rule: from the database")
    assert "waiting for server" in result.stderr and "starting database" in result.stderr
    assert (home / "rules.snapshot.json").exists()
    # Next call reads the rebuilt snapshot without refreshing again.
    assert run_hook(home, bash("git push --force"), refresh="write").output["permissionDecision"] == "deny"
    assert (home / "refresh-calls").read_text().splitlines() == ["write"]


def test_unwritable_home_still_fails_open(tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    assert_silent(run_hook(blocker, bash("git push --force"), refresh="raise"))


def test_hook_runs_by_absolute_path_from_any_directory(home, tmp_path):
    set_rules(home, make_rule("git push --force*", "Bash"))
    proc = subprocess.run([sys.executable, str(HOOK)], input=json.dumps(bash("git push --force")).encode(),
                          capture_output=True, env=hook_env(home), cwd="/", timeout=60)
    assert proc.returncode == 0
    assert json.loads(proc.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"


# --- cost -----------------------------------------------------------------------------------------------

# Heavy or merely slow imports that must stay off the per-tool-call path (each costs 5-40 ms on a small box).
FORBIDDEN_ON_HOT_PATH = {"json", "re", "typing", "dataclasses", "pathlib", "enum", "datetime", "configparser",
                         "traceback", "fnmatch", "tempfile", "uuid", "pydantic", "typer", "rich", "psycopg",
                         "numpy", "cems_cli.rules.model", "cems_cli.project", "cems_cli.paths"}


def imported_modules(home: Path, stdin: dict) -> set[str]:
    proc = subprocess.run([sys.executable, "-X", "importtime", str(HOOK)], input=json.dumps(stdin).encode(),
                          capture_output=True, env=hook_env(home), timeout=60)
    assert proc.returncode == 0
    lines = [line.split("|")[-1].strip() for line in proc.stderr.decode().splitlines()
             if line.startswith("import time:")]
    return {name for name in lines if name and name != "imported package"}


@pytest.mark.parametrize("command", ["git status", "cd x && git push --force",
                                     "git commit -m 'a \"b\"' && sudo -u root \\rm -rf $(pwd)/x"])
def test_hot_path_imports_nothing_heavy(home, command):
    parsed = "$(" in command  # tree-sitter's binding imports `re` and `enum` itself (~10 ms, measured)
    set_rules(home, make_rule("git push --force*", "Bash"), make_rule("*.env", "Edit", action="ask"),
              make_rule(r"^kubectl\s+delete", "Bash", regex=True),
              make_rule("terraform *", "Bash", project="acme/infra"))
    modules = imported_modules(home, bash(command))
    assert "cems_cli.rules.matcher" in modules
    forbidden = FORBIDDEN_ON_HOT_PATH - ({"re", "enum"} if parsed else set())
    assert not modules & forbidden, modules & forbidden
    assert not {m for m in modules if m.split(".")[0] in {"pydantic", "typer", "rich", "psycopg", "numpy"}}


@pytest.mark.parametrize("command", ["git status --short", "cd repo && git push --force origin main"])
def test_plain_commands_do_not_load_the_shell_parser(home, command):
    set_rules(home, make_rule("git push --force*", "Bash"), make_rule("rm -rf*", "Bash"))
    modules = imported_modules(home, bash(command))
    assert "cems_cli.rules.matcher" in modules and "cems_cli.command.tree" not in modules
    assert "cems_cli.command.model" not in modules  # the fast path splits plain lines alone
    parsed = imported_modules(home, bash("echo $(date) > x"))
    assert "cems_cli.command.tree" in parsed
    # The packages' own __init__ (typing, importlib.resources: ~15 ms) are not needed to parse.
    assert "tree_sitter_bash" not in parsed and "importlib.resources" not in parsed


def test_without_bash_or_edit_rules_a_command_is_not_parsed(home):
    # Rules on Edit do read Bash commands (the files they write); a rule on WebFetch does not.
    set_rules(home, make_rule("*evil*", "WebFetch"))
    assert "cems_cli.command.model" not in imported_modules(home, bash("echo $(date) | sh"))


# --- the built-in guard ---------------------------------------------------------------------------------

def write_payload(file_path: str, tool: str = "Write") -> dict:
    return {"session_id": "s1", "hook_event_name": "PreToolUse", "cwd": "/tmp", "tool_name": tool,
            "tool_input": {"file_path": file_path, "content": '{"version":1,"rules":[]}'}}


@pytest.mark.parametrize("with_rules", [True, False])
def test_the_agent_cannot_write_cems_home_even_without_rules(home, with_rules):
    if with_rules:
        set_rules(home, make_rule("rm -rf*", "Bash"))
    for name in ("rules.snapshot.json", "rules.snapshot.json.sha256", "config.toml"):
        for tool in ("Write", "Edit", "MultiEdit"):
            result = run_hook(home, write_payload(str(home / name), tool), refresh="raise")
            assert result.output["permissionDecision"] == "deny", (name, tool)
            reason = result.output["permissionDecisionReason"]
            assert reason.startswith("Blocked by CEMS rule builtin:cems-files")
    assert_silent(run_hook(home, write_payload(str(home / "rules.snapshot.json"), "Read"), refresh="raise"))


@pytest.mark.parametrize("command", [
    "echo '{\"version\":1,\"rules\":[]}' > $CEMS_HOME/rules.snapshot.json",
    "cp /dev/null ~/.claude/settings.json",
    "rm -f .claude/settings.local.json",
])
def test_the_agent_cannot_rewrite_the_snapshot_or_the_hook_settings_from_bash(home, command):
    set_rules(home, make_rule("git push --force*", "Bash"))
    command = command.replace("$CEMS_HOME", str(home))
    result = run_hook(home, bash(command), HOME=str(home.parent))
    assert result.output["permissionDecision"] == "deny"
    assert "builtin:cems-files" in result.output["permissionDecisionReason"]


def test_cems_rule_rm_from_the_agent_is_denied(home):
    set_rules(home, make_rule("rm -rf*", "Bash"))
    result = run_hook(home, bash("cems rule list --json && cems rule rm 1a2b3c4d"))
    assert result.output["permissionDecision"] == "deny"
    assert "builtin:rules-are-the-users" in result.output["permissionDecisionReason"]
    assert_silent(run_hook(home, bash(f"cat {home}/rules.snapshot.json")))
