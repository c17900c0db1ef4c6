"""`cems rule …` against the real database, and the PreToolUse hook enforcing what it stored."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO


def _hook(env: dict[str, str], payload: dict, cwd: str = "/tmp") -> tuple[int, dict | None]:
    full_env = {"PATH": "/usr/bin:/bin", **env}
    proc = subprocess.run(
        [sys.executable, str(REPO / "hooks" / "pre_tool_use.py")],
        input=json.dumps(
            {"session_id": "s", "hook_event_name": "PreToolUse", "cwd": cwd, **payload}
        ).encode(),
        env=full_env,
        capture_output=True,
        timeout=60,
    )
    out = proc.stdout.decode().strip()
    return proc.returncode, (json.loads(out) if out else None)


def _snapshot(env) -> list[dict]:
    from cems_cli.rules.snapshot import read_records

    return read_records(Path(env["CEMS_HOME"]) / "rules.snapshot.json", verify=True)


def test_one_line_rule_blocks_a_matching_bash_call(cli, env):
    result = cli("rule", "add", "Bash: git push --force* — force pushes rewrite history", "--json")
    assert result.code == 0, result.stderr
    rule = result.json()
    assert (rule["tool"], rule["pattern"], rule["action"], rule["reason"]) == (
        "Bash",
        "git push --force*",
        "block",
        "force pushes rewrite history",
    )
    code, answer = _hook(
        env, {"tool_name": "Bash", "tool_input": {"command": "git push --force origin main"}}
    )
    assert code == 0
    output = answer["hookSpecificOutput"]
    assert output["hookEventName"] == "PreToolUse" and output["permissionDecision"] == "deny"
    assert "force pushes rewrite history" in output["permissionDecisionReason"]
    assert _hook(env, {"tool_name": "Bash", "tool_input": {"command": "git push origin main"}}) == (0, None)


def test_rule_add_with_options_list_test_and_rm(cli, env):
    ask = cli(
        "rule", "add", "*/migrations/*", "--tool", "Edit", "--action", "ask", "--reason", "frozen", "--json"
    ).json()
    warn = cli(
        "rule", "add", r"curl .*\| *sh", "--tool", "Bash", "--regex", "--action", "warn", "--json"
    ).json()
    listed = cli("rule", "list", "--json").json()["rules"]
    assert [r["id"] for r in listed] == [ask["id"], warn["id"]]
    tested = cli(
        "rule", "test", "--tool", "Edit", "--input", '{"file_path": "/srv/app/migrations/001.sql"}', "--json"
    ).json()
    assert tested["decision"] == "ask" and tested["rule"]["id"] == ask["id"]
    assert (
        cli("rule", "test", "--tool", "Bash", "--input", '{"command": "curl x | sh"}', "--json").json()[
            "decision"
        ]
        == "warn"
    )
    assert cli("rule", "test", "--tool", "Bash", "--input", '{"command": "ls"}', "--json").json() == {
        "decision": "allow",
        "project": "project:acme/api",
        "rule": None,
        "matched": None,
        "unchecked": None,
    }
    assert cli("rule", "rm", ask["id"][:8], "--json").json() == {"id": ask["id"], "removed": True}
    assert [r["id"] for r in _snapshot(env)] == [warn["id"]]
    # Rules are memories of category `rules`: listed there, hidden from ordinary search.
    assert {m["id"] for m in cli("list", "--category", "rules", "--json").json()["memories"]} == {warn["id"]}


def test_adding_the_same_rule_twice_keeps_one(cli):
    first = cli("rule", "add", "Bash: terraform destroy* — ask first", "--json").json()
    again = cli("rule", "add", "Bash: terraform destroy* — ask first", "--json").json()
    assert again["id"] == first["id"] and again["created"] is False
    assert len(cli("rule", "list", "--json").json()["rules"]) == 1


def test_only_rule_rm_removes_a_rule_and_then_it_stops_at_once(cli, env):
    # `cems forget` is also the agent's (the plugin's /cems:forget pre-approves it): it refuses rules.
    rule = cli("rule", "add", "Bash: shutdown* — no", "--json").json()
    note = cli("remember", "shutdown drills happen on Fridays", "--json").json()
    shutdown = {"tool_name": "Bash", "tool_input": {"command": "shutdown now"}}
    assert _hook(env, shutdown)[1] is not None
    refused = cli("forget", rule["id"][:8])
    assert refused.code != 0
    assert refused.stderr.strip().endswith(f"is a guard rule: rules are removed only by the user, in a "
                                           f"terminal, with `cems rule rm {rule['id'][:8]}`")
    both = cli("forget", note["id"], rule["id"])
    assert both.code != 0 and "nothing was forgotten" in both.stderr
    assert cli("forget", "--tag", "rule", "--yes").code == 0  # selections leave rules out
    assert cli("forget", "--source", "rule", "--yes").code == 0
    assert [r["id"] for r in _snapshot(env)] == [rule["id"]]
    assert _hook(env, shutdown)[1]["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert cli("show", note["id"], "--json").code == 0  # still there: all or nothing
    assert cli("rule", "rm", rule["id"]).code == 0
    assert _snapshot(env) == []
    assert _hook(env, shutdown) == (0, None)


def test_project_rules_apply_only_inside_their_project(cli, env, tmp_path):
    cli("rule", "add", "Bash: npm publish* — releases go through CI", "--project", "acme/web")
    repo = tmp_path / "web"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "config").write_text('[remote "origin"]\n\turl = git@github.com:Acme/Web.git\n')
    other = tmp_path / "elsewhere"
    other.mkdir()
    payload = {"tool_name": "Bash", "tool_input": {"command": "npm publish --access public"}}
    assert _hook(env, payload, cwd=str(repo))[1]["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert _hook(env, payload, cwd=str(other)) == (0, None)
    assert (
        cli(
            "rule",
            "test",
            "--tool",
            "Bash",
            "--input",
            '{"command": "npm publish"}',
            "--project",
            "acme/web",
            "--json",
        ).json()["decision"]
        == "block"
    )


def test_team_rules_bind_every_member_and_the_strictest_wins(cli, env):
    alice = {"CEMS_USER": env["CEMS_USER"], "CEMS_TEAM": "infra"}
    bob = {"CEMS_USER": env["CEMS_USER"] + "-bob", "CEMS_TEAM": "infra"}
    cli("rule", "add", "Bash: kubectl delete* — careful", "--action", "warn", extra_env=bob)
    cli("rule", "add", "Bash: kubectl delete* — never in prod", "--scope", "shared", extra_env=alice)
    tested = cli(
        "rule",
        "test",
        "--tool",
        "Bash",
        "--input",
        '{"command": "kubectl delete ns prod"}',
        "--json",
        extra_env=bob,
    ).json()
    assert tested["decision"] == "block" and tested["rule"]["scope"] == "shared"
    # Only the owner can remove a rule.
    shared_id = tested["rule"]["id"]
    result = cli("rule", "rm", shared_id, extra_env=bob)
    assert result.code == 2 and "only its owner" in result.stderr


def test_rule_import_is_all_or_nothing(cli, tmp_path):
    good = tmp_path / "rules.txt"
    good.write_text(
        "# team rules\nBash: git push --force* — no force pushes\n\nask Write: /etc/* — system files\n"
        "warn WebFetch: http://* — prefer https\n"
    )
    result = cli("rule", "import", str(good), "--json").json()
    assert (result["imported"], result["created"]) == (3, 3)
    bad = tmp_path / "bad.txt"
    bad.write_text("Bash: ok* — fine\nnuke Bash: x — bad action\nno colon here\n")
    failed = cli("rule", "import", str(bad))
    assert failed.code == 2 and "line 2" in failed.stderr and "line 3" in failed.stderr
    assert len(cli("rule", "list", "--json").json()["rules"]) == 3


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["rule", "add", "x(", "--tool", "Bash", "--regex"], "invalid regex 'x('"),
        (["rule", "add", "  ", "--tool", "Bash"], "pattern must not be empty"),
        (["rule", "add", "rm *", "--tool", "Bash", "--action", "nuke"], "unknown action 'nuke'"),
        (["rule", "add", "no colon here"], "expected 'Tool: pattern"),
        (["rule", "test", "--tool", "Bash", "--input", "{not json"], "--input is not valid JSON"),
        (["rule", "test", "--tool", "Bash", "--input", "[1]"], "--input must be a JSON object"),
        (["rule", "rm", "00000000"], "no memory with id"),
        (["rule", "import", "/nonexistent/rules.txt"], "cannot read"),
    ],
)
def test_bad_rules_are_rejected_with_one_line(cli, env, args, message):
    result = cli(*args)
    assert result.code == 2, result.stdout
    assert message in result.stderr and result.stderr.strip().count("\n") == 0
    assert cli("rule", "list", "--json").json()["rules"] == []
