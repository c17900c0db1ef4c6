"""The Claude Code plugin (claude-plugin/): its files agree with what CEMS installs, and the pinned real
Claude Code CLI (offline, scripted fake model) loads it: hooks fire, the MCP server answers, the
`/cems:<name>` slash commands expand, and `cems plugin install` installs it for good.

What the pinned CLI does with a plugin, as these tests pin down: it loads `--plugin-dir <folder>` (or an
installed plugin), runs the plugin's hooks/hooks.json commands beside any settings hooks (an identical
settings command runs as well: no de-duplication), names the plugin's MCP tools
`mcp__plugin_<plugin>_<server>__<tool>` and its commands `/<plugin>:<file>` (a bare `/remember` is no
command), and grants a command's `allowed-tools` while it runs.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from cems_cli.cli.plugin import PLUGIN, PLUGIN_ID, TOOL_PREFIX
from cems_cli.mcp import register
from cems_cli.mcp.tools import BY_NAME
from cems_cli.plumbing.hooks_commands import parse_command
from cems_cli.plumbing.hooks_install import HOOKS, portable_hook_command
from tests.conftest import REPO, cems_subprocess
from tests.support.claude_code import FakeAnthropic, ToolUse, claude_code_or_skip, run_claude, transcripts
from tests.support.claude_code.capture import captured_turns
from tests.support.claude_code.run import OFFLINE_ENV, _inherited_env

PLUGIN_DIR = REPO / "claude-plugin"
COMMANDS = ("remember", "recall", "forget", "rule")
# The plugin runs `cems-hook` and `cems` by name: Claude Code must find this checkout's on its PATH.
BIN = str(Path(sys.executable).parent)
PATH = f"{BIN}:/usr/bin:/bin"


def _json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _frontmatter(path: Path) -> tuple[dict[str, str], str]:
    text = path.read_text(encoding="utf-8")
    match = re.match(r"---\n(.*?)\n---\n(.*)", text, re.S)
    assert match, f"{path.name} has no frontmatter"
    fields = dict(line.split(": ", 1) for line in match.group(1).splitlines())
    return fields, match.group(2)


# --- the files -------------------------------------------------------------------------------------------


def test_the_hooks_are_the_ones_a_project_install_writes():
    """Same events, matchers, timeouts and handlers as `cems hooks install --scope project`, so the plugin
    keeps the hooks' semantics and `cems hooks doctor` recognises every command as CEMS's."""
    hooks = _json(PLUGIN_DIR / "hooks" / "hooks.json")["hooks"]
    assert set(hooks) == {spec.event for spec in HOOKS}
    for spec in HOOKS:
        (group,) = hooks[spec.event]
        assert group.get("matcher") == spec.matcher, spec.event
        (handler,) = group["hooks"]
        assert handler == {
            "type": "command",
            "command": portable_hook_command(spec.script),
            "timeout": spec.timeout,
        }
        parsed = parse_command(handler["command"])
        assert parsed is not None and parsed.portable and parsed.handler == spec.handler


def test_the_mcp_server_is_the_portable_cems_entry():
    servers = _json(PLUGIN_DIR / ".mcp.json")["mcpServers"]
    assert servers == {register.SERVER: register.server_entry(portable=True, home=Path("/unused"))}
    assert TOOL_PREFIX == f"mcp__plugin_{PLUGIN}_{register.SERVER}__"


def test_the_manifests_name_the_plugin_and_its_version():
    from cems_cli import __version__

    manifest = _json(PLUGIN_DIR / ".claude-plugin" / "plugin.json")
    assert manifest["name"] == PLUGIN and manifest["version"] == __version__
    marketplace = _json(PLUGIN_DIR / ".claude-plugin" / "marketplace.json")
    assert f"{PLUGIN}@{marketplace['name']}" == PLUGIN_ID
    assert [(p["name"], p["source"]) for p in marketplace["plugins"]] == [(PLUGIN, "./")]


@pytest.mark.parametrize("name", COMMANDS)
def test_each_command_takes_arguments_and_names_real_tools(name):
    fields, body = _frontmatter(PLUGIN_DIR / "commands" / f"{name}.md")
    assert fields["description"] and fields["argument-hint"]
    assert "$ARGUMENTS" in body
    allowed = [tool.strip() for tool in fields["allowed-tools"].split(",")]
    mentioned = set(re.findall(rf"{TOOL_PREFIX}\w+", body)) | {t for t in allowed if t.startswith("mcp__")}
    assert mentioned and all(tool.removeprefix(TOOL_PREFIX) in BY_NAME for tool in mentioned), mentioned
    # Every MCP tool the body tells the agent to call is granted, so the command runs without a prompt.
    assert set(re.findall(rf"{TOOL_PREFIX}\w+", body)) <= set(allowed)
    assert any(tool.startswith("Bash(cems ") for tool in allowed)  # the CLI fallback the body names


# What an agent must never run without the user: each takes rules, or the hooks that enforce them, away.
TAKES_RULES_AWAY = ("cems rule rm 1a2b3c4d", "cems rule remove 1a2b3c4d", "cems hooks uninstall",
                    "cems plugin uninstall", "cems uninstall", "cems config set rules_on_timeout allow")


@pytest.mark.parametrize("name", COMMANDS)
def test_no_command_pre_approves_taking_a_rule_away(name):
    fields, _ = _frontmatter(PLUGIN_DIR / "commands" / f"{name}.md")
    allowed = [tool.strip() for tool in fields["allowed-tools"].split(",")]
    for tool in allowed:
        if tool.startswith("Bash("):
            # Claude Code's `Bash(prefix:*)` approves every command that starts with the prefix.
            rule = tool.removeprefix("Bash(").removesuffix(")")
            prefix = rule.removesuffix(":*") if rule.endswith(":*") else None
            for command in TAKES_RULES_AWAY:
                approved = command.startswith(prefix) if prefix is not None else command == rule
                assert not approved, (tool, command)
        else:  # the MCP tools: none of them removes or weakens a rule (test_mcp_server checks `forget`)
            assert tool.removeprefix(TOOL_PREFIX) in {
                "search", "get", "timeline", "list_recent", "remember", "forget", "rule_add", "rule_list"
            }, tool


def test_cems_plugin_path(cli):
    result = cli("plugin", "path")
    assert result.code == 0 and Path(result.stdout.strip()) == PLUGIN_DIR
    doc = cli("plugin", "path", "--json").json()
    assert Path(doc["path"]) == PLUGIN_DIR and doc["mcp_tool_prefix"] == TOOL_PREFIX
    assert doc["commands"] == sorted(f"/cems:{name}" for name in COMMANDS)


def test_install_refuses_while_the_hooks_are_installed_the_other_way(cli, tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    assert cli("hooks", "install").code == 0
    never_run = tmp_path / "claude-never-runs"  # refused before claude is looked for
    result = cli("plugin", "install", "--claude", str(never_run))
    assert result.code == 2 and "cems hooks uninstall --scope user" in result.stderr
    assert not (home / ".claude" / "plugins").exists()
    assert cli("hooks", "uninstall").code == 0  # out of the shared CEMS_HOME's install manifest again


# --- the real CLI ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def claude() -> Path:
    return claude_code_or_skip()


def _cems(args: list[str], env: dict[str, str]) -> dict:
    proc = cems_subprocess([*args, "--json"], env)
    assert proc.returncode == 0, f"cems {' '.join(args)}: {proc.stderr.decode()[-2000:]}"
    return json.loads(proc.stdout)


def _tool_events(cems_home: str, session_id: str) -> dict[str, tuple[str, str]]:
    """What the PostToolUse(Failure) hook spooled: tool_use_id → (event, tool)."""
    with contextlib.closing(sqlite3.connect(Path(cems_home) / "spool.db")) as conn:
        query = "SELECT tool_use_id, event, tool_name FROM tool_events WHERE session_id = ?"
        return {row[0]: (row[1], row[2]) for row in conn.execute(query, (session_id,))}


@pytest.fixture
def search_server_stopped(env):
    """The hooks start the search server on demand: it must not outlive the test's user and database."""
    from cems_cli.server.daemon import stop_server

    yield
    stop_server(Path(env["CEMS_HOME"]))


@pytest.fixture
def warm(env, search_server_stopped):
    """The search server the prompt hook asks, started before the run: a cold start on a loaded machine
    outlasts the recall budget, and recall (rightly) gives up."""
    from cems_cli.server.client import call_or_start

    assert call_or_start(env["CEMS_HOME"], {"op": "ping"}, 60), "the search server did not start"


def _run(claude: Path, model: FakeAnthropic, tmp_path: Path, env: dict[str, str], prompt: str, *args: str):
    home = tmp_path / "home"
    result = run_claude(
        claude,
        model.root_url,
        home=home,
        cwd=tmp_path / "work",
        prompt=prompt,
        args=list(args),
        # MCP tools offered directly (not behind ToolSearch), so the first reply can call one.
        env={**env, "PATH": PATH, "ENABLE_TOOL_SEARCH": "false", "CEMS_RECALL_TIME_BUDGET": "4"},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert not model.errors, "the fake model crashed:\n" + "\n".join(model.errors)
    sessions = transcripts(home)
    assert sessions, "Claude Code wrote no transcript"
    return result, sessions[0].stem


@pytest.mark.slow
def test_claude_code_validates_the_plugin(claude, tmp_path):
    proc = subprocess.run(
        [str(claude), "plugin", "validate", "--strict", "--json", str(PLUGIN_DIR)],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        env={**_inherited_env(), **OFFLINE_ENV, "HOME": str(tmp_path)},
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]


@pytest.mark.slow
def test_hooks_and_mcp_search_of_the_plugin_reach_the_model(claude, env, tmp_path, warm):
    recalled = "Release branches are cut from main every Tuesday."
    found = "Staging deploys need a green nightly build first."
    preference = "I prefer squash merges for feature branches."
    # Not a kind the profile shows (context, learnings, decisions): the prompt's recall is what brings it.
    _cems(["remember", recalled, "--category", "patterns"], env)
    found_id = _cems(["remember", found, "--category", "decisions"], env)["id"]
    _cems(["remember", preference, "--category", "preferences"], env)
    _cems(["rule", "add", "Bash: git push --force* — force pushes rewrite shared history"], env)
    with FakeAnthropic(command=None) as model:
        model.script(
            ToolUse(f"{TOOL_PREFIX}search", {"query": "what do staging deploys need?"}),
            ToolUse("Bash", {"command": "git push --force origin main", "description": "Push"}),
            ToolUse("Bash", {"command": "ls /no/such/folder", "description": "Fails"}),
        )
        result, session = _run(
            claude,
            model,
            tmp_path,
            env,
            "When are release branches cut? Then push my branch.",
            "--plugin-dir",
            str(PLUGIN_DIR),
            "--allowedTools",
            f"Bash,{TOOL_PREFIX}search",
        )
        (turn,) = captured_turns(env["CEMS_HOME"], session)  # Stop
    first = json.dumps(model.message_bodies[0]["messages"])
    assert "<memory-profile>" in first and preference in first  # SessionStart
    assert "<memory-recall>" in first and recalled in first  # UserPromptSubmit
    assert first.count(preference) == 1  # in the profile, and not recalled a second time
    searched, denied, failed = model.tool_results
    # The plugin's MCP server answered, and its answer reached the model's next request.
    assert not searched.get("is_error") and found_id in json.dumps(searched)
    after = next(b for b in model.message_bodies if searched["tool_use_id"] in json.dumps(b["messages"]))
    assert found in json.dumps(after["messages"])
    assert denied.get("is_error") and "force pushes rewrite shared history" in json.dumps(denied)
    spooled = _tool_events(env["CEMS_HOME"], session)
    assert spooled[searched["tool_use_id"]] == ("PostToolUse", f"{TOOL_PREFIX}search")
    assert failed.get("is_error") and spooled[failed["tool_use_id"]] == ("PostToolUseFailure", "Bash")
    assert denied["tool_use_id"] not in spooled  # blocked before it ran: nothing ran to record
    assert turn["last_message"].strip() == "done." and "done." in result.stdout


@pytest.mark.slow
def test_slash_command_expands_and_stores_through_the_plugins_server(
    claude, env, tmp_path, search_server_stopped
):
    text = "In this repo we use pnpm, never npm."
    with FakeAnthropic(command=None) as model:
        model.script(ToolUse(f"{TOOL_PREFIX}remember", {"text": text, "category": "preferences"}))
        # No --allowedTools: the command's own allowed-tools lets the remember call through.
        _, session = _run(
            claude, model, tmp_path, env, f"/cems:remember {text}", "--plugin-dir", str(PLUGIN_DIR)
        )
        captured_turns(env["CEMS_HOME"], session)
    first = json.dumps(model.message_bodies[0]["messages"])
    assert "<command-name>/cems:remember</command-name>" in first
    assert "Remember this in CEMS, the user's long-term memory: " + text in first  # the command's body
    (stored,) = model.tool_results
    assert not stored.get("is_error") and "pnpm" in json.dumps(stored), stored
    listed = _cems(["list", "--category", "preferences"], env)["memories"]
    assert [m["content"] for m in listed if m["source"] == "mcp"] == [text]


@pytest.mark.slow
def test_cems_plugin_install_makes_claude_load_it_for_good(claude, env, tmp_path):
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir(parents=True)
    plain = {**_inherited_env(), **OFFLINE_ENV, **env, "HOME": str(home), "PATH": PATH}

    def cems(*args: str) -> dict:
        proc = subprocess.run(
            [sys.executable, "-m", "cems_cli.cli.app", *args, "--json"],
            env=plain,
            cwd=work,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        return json.loads(proc.stdout)

    installed = cems("plugin", "install", "--claude", str(claude))
    assert installed["installed"] and installed["warnings"] == []
    settings = _json(home / ".claude" / "settings.json")
    assert settings["enabledPlugins"] == {PLUGIN_ID: True}
    with FakeAnthropic(command=None) as model:
        model.script(ToolUse(f"{TOOL_PREFIX}status", {}))
        # CEMS_DISABLE: this run checks loading only; the hooks' effects are the tests above.
        _run(
            claude,
            model,
            tmp_path,
            {**env, "CEMS_DISABLE": "1"},
            "/cems:recall deploys",
            "--allowedTools",
            f"{TOOL_PREFIX}status",
        )
    first = json.dumps(model.message_bodies[0]["messages"])
    assert "<command-name>/cems:recall</command-name>" in first
    (status,) = model.tool_results
    assert not status.get("is_error") and env["CEMS_USER"] in json.dumps(status), status
    removed = cems("plugin", "uninstall", "--claude", str(claude))
    assert removed["uninstalled"] and len(removed["claude"]) == 2  # the plugin, then its marketplace
    settings = _json(home / ".claude" / "settings.json")
    assert not settings.get("enabledPlugins") and not settings.get("extraKnownMarketplaces")
    assert os.path.isdir(PLUGIN_DIR)  # read in place, never moved or copied back
