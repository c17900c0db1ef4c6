"""`cems hooks install --mcp` / `cems hooks uninstall`: the `cems` MCP server written where Claude Code reads
it for each scope (./.mcp.json, ~/.claude.json, this folder's entry in it), and taken out again, the file
restored byte for byte when it is as install left it. The last test has the real Claude Code CLI read what
install wrote.

HOME and the working directory are temporary folders: the real ~/.claude.json is never read or written.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from tests.support.claude_code import FakeAnthropic, ToolUse, claude_code_or_skip, run_claude

OTHER_SERVERS = b"""{
    "mcpServers": {"docs": {"command": "npx", "args": ["-y", "docs-mcp"]}},
    "note": "caf\\u00e9, kept as written"
}"""  # four-space indent, escapes, no final newline: any rewrite would show

CLAUDE_JSON = b"""{
  "numStartups": 12,
  "theme": "dark",
  "projects": {
    "/elsewhere": {
      "allowedTools": [],
      "mcpServers": {}
    }
  }
}"""


@pytest.fixture
def dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """(user home, project folder): HOME points at the first, the working directory is the second."""
    home, project = tmp_path / "userhome", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.chdir(project)
    return home, project


def _json(result) -> dict:
    assert result.code == 0, result.stderr
    return json.loads(result.stdout)


def _cems_servers(path: Path, *keys: str) -> dict:
    node = json.loads(path.read_text())
    for key in (*keys, "mcpServers"):
        node = node[key]
    return node


def _leftovers(cems_home: Path) -> list[Path]:
    manifest = json.loads((cems_home / "mcp-installed.json").read_text())
    assert manifest == {}
    return sorted((cems_home / "backups").glob("mcp-*"))


def test_project_scope_is_portable_and_uninstall_restores_the_exact_bytes(cli, env, dirs):
    _, project = dirs
    mcp_json = project / ".mcp.json"
    mcp_json.write_bytes(OTHER_SERVERS)
    result = _json(cli("hooks", "install", "--scope", "project", "--mcp", "--json"))["mcp"]
    assert result["changed"] and result["file"] == str(mcp_json)
    servers = _cems_servers(mcp_json)
    # Committed with the project: `cems mcp` by name, no path and no store, like `cems-hook`.
    assert servers == {
        "docs": {"command": "npx", "args": ["-y", "docs-mcp"]},
        "cems": {"type": "stdio", "command": "cems", "args": ["mcp"]},
    }
    assert mcp_json.read_text().startswith('{\n    "mcpServers": {\n        "docs"')  # the file's own indent
    assert _json(cli("hooks", "install", "--scope", "project", "--mcp", "--json"))["mcp"]["changed"] is False
    removed = _json(cli("hooks", "uninstall", "--scope", "project", "--json"))["mcp"]
    assert removed["removed"] and removed["restored"]
    assert mcp_json.read_bytes() == OTHER_SERVERS
    assert _leftovers(Path(env["CEMS_HOME"])) == []
    assert not (project / ".claude" / "settings.json").exists()  # the hooks came out too


def test_a_mcp_json_install_created_is_deleted_again(cli, dirs):
    _, project = dirs
    assert _json(cli("hooks", "install", "--scope", "project", "--mcp", "--json"))["mcp"]["changed"]
    assert (project / ".mcp.json").exists()
    cli("hooks", "uninstall", "--scope", "project")
    assert not (project / ".mcp.json").exists()


def test_user_scope_pins_this_install_and_store_and_keeps_the_mode(cli, env, dirs):
    home, _ = dirs
    claude_json = home / ".claude.json"
    claude_json.write_bytes(CLAUDE_JSON)
    claude_json.chmod(0o600)
    human = cli("hooks", "install", "--mcp")
    assert human.code == 0 and f"Registered the MCP server cems in {claude_json}" in human.stdout
    entry = _cems_servers(claude_json)["cems"]
    assert entry["args"] == ["mcp"] and entry["env"] == {"CEMS_HOME": env["CEMS_HOME"]}
    assert os.path.isabs(entry["command"]) and os.access(entry["command"], os.X_OK)
    assert Path(entry["command"]).parent == Path(sys.executable).parent  # this venv's own `cems`
    assert json.loads(claude_json.read_text())["projects"] == json.loads(CLAUDE_JSON)["projects"]
    assert stat.S_IMODE(claude_json.stat().st_mode) == 0o600
    backups = list((Path(env["CEMS_HOME"]) / "backups").glob("mcp-*"))
    assert [stat.S_IMODE(b.stat().st_mode) for b in backups] == [0o600]  # it may hold API keys
    # Uninstall without --mcp: this store's install put it there.
    removed = _json(cli("hooks", "uninstall", "--json"))["mcp"]
    assert removed["restored"] is True
    assert claude_json.read_bytes() == CLAUDE_JSON
    assert stat.S_IMODE(claude_json.stat().st_mode) == 0o600
    assert _leftovers(Path(env["CEMS_HOME"])) == []


def test_local_scope_is_this_folder_only(cli, dirs):
    home, project = dirs
    claude_json = home / ".claude.json"
    claude_json.write_bytes(CLAUDE_JSON)
    result = _json(cli("hooks", "install", "--scope", "local", "--mcp", "--json"))["mcp"]
    assert result["where"].endswith(f'["projects"][{json.dumps(str(project))}].mcpServers.cems')
    data = json.loads(claude_json.read_text())
    assert set(data["projects"][str(project)]["mcpServers"]) == {"cems"}
    assert data["projects"]["/elsewhere"] == {"allowedTools": [], "mcpServers": {}}
    assert "mcpServers" not in data  # not the user-wide list
    cli("hooks", "uninstall", "--scope", "local")
    assert claude_json.read_bytes() == CLAUDE_JSON


def test_a_file_changed_since_loses_only_what_install_added(cli, dirs):
    """Claude Code rewrites ~/.claude.json on every start: uninstall then takes out the entry (and the
    objects install made for it) and keeps everything else."""
    home, project = dirs
    claude_json = home / ".claude.json"
    claude_json.write_bytes(CLAUDE_JSON)
    cli("hooks", "install", "--mcp")
    cli("hooks", "install", "--scope", "local", "--mcp")
    data = json.loads(claude_json.read_text())
    data["numStartups"] = 13
    data["projects"][str(project)]["allowedTools"] = ["Bash(ls)"]
    claude_json.write_text(json.dumps(data, indent=2))
    user = _json(cli("hooks", "uninstall", "--json"))["mcp"]
    local = _json(cli("hooks", "uninstall", "--scope", "local", "--json"))["mcp"]
    assert user["removed"] and not user["restored"] and local["removed"] and not local["restored"]
    expected = json.loads(CLAUDE_JSON)
    expected["numStartups"] = 13
    expected["projects"][str(project)] = {"allowedTools": ["Bash(ls)"]}
    assert json.loads(claude_json.read_text()) == expected


def test_someone_elses_cems_server_is_left_alone_and_nothing_is_installed(cli, dirs):
    _, project = dirs
    mcp_json = project / ".mcp.json"
    theirs = b'{"mcpServers": {"cems": {"command": "node", "args": ["their-cems.js"]}}}\n'
    mcp_json.write_bytes(theirs)
    result = cli("hooks", "install", "--scope", "project", "--mcp")
    assert result.code == 2
    assert "already an MCP server that is not CEMS's" in result.stderr and "\n" not in result.stderr.strip()
    assert mcp_json.read_bytes() == theirs
    assert not (project / ".claude").exists()  # the hooks were not installed either
    assert cli("hooks", "uninstall", "--scope", "project", "--mcp").code == 0
    assert mcp_json.read_bytes() == theirs  # uninstall never takes someone else's server


def test_an_unreadable_mcp_json_changes_nothing(cli, dirs):
    _, project = dirs
    (project / ".mcp.json").write_bytes(b"{not json")
    result = cli("hooks", "install", "--scope", "project", "--mcp")
    assert result.code == 2 and "is not valid JSON" in result.stderr
    assert (project / ".mcp.json").read_bytes() == b"{not json"
    assert not (project / ".claude").exists()


def test_uninstall_of_an_explicit_settings_file_leaves_the_mcp_server(cli, dirs, tmp_path):
    home, _ = dirs
    cli("hooks", "install", "--mcp")
    other = tmp_path / "other-settings.json"
    cli("hooks", "install", "--settings", str(other))
    cli("hooks", "uninstall", "--settings", str(other))
    assert "cems" in _cems_servers(home / ".claude.json")


def test_claude_config_dir_moves_the_user_file(cli, dirs, tmp_path, monkeypatch):
    config = tmp_path / "claude-config"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    result = _json(cli("hooks", "install", "--mcp", "--json"))["mcp"]
    assert result["file"] == str(config / ".claude.json") and "cems" in _cems_servers(config / ".claude.json")
    cli("hooks", "uninstall")
    assert not (config / ".claude.json").exists()


@pytest.mark.slow
@pytest.mark.parametrize("scope", ["user", "local", "project"])
def test_claude_code_runs_the_server_install_registered(cli, env, dirs, scope):
    """What install writes is what the pinned Claude Code reads: it starts `cems mcp` and its search tool
    answers from the store. Uninstall afterwards leaves what Claude Code wrote and no `cems` server."""
    claude = claude_code_or_skip()
    home, project = dirs
    assert cli("remember", "Release notes are written in the CHANGELOG, newest first.").code == 0
    assert cli("hooks", "install", "--scope", scope, "--mcp").code == 0
    with FakeAnthropic(command=None) as model:
        model.script(ToolUse("mcp__cems__search", {"query": "where do release notes go?"}))
        result = run_claude(
            claude,
            model.root_url,
            home=home,
            cwd=project,
            prompt="Where do release notes go?",
            args=["--allowedTools", "mcp__cems__search"],
            # The project entry runs `cems` by name, from PATH, with the store of Claude Code's environment.
            env={
                **env,
                "ENABLE_TOOL_SEARCH": "false",
                "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
            },
        )
    assert result.returncode == 0, result.stderr[-2000:]
    assert not model.errors, "the fake model crashed:\n" + "\n".join(model.errors)
    (found,) = model.tool_results
    assert not found.get("is_error") and "CHANGELOG, newest first" in json.dumps(found)
    assert cli("hooks", "uninstall", "--scope", scope).code == 0
    claude_json = home / ".claude.json"
    data = json.loads(claude_json.read_text())
    assert "firstStartTime" in data  # Claude Code's own state survives
    assert "cems" not in json.dumps(data.get("mcpServers", {}))
    assert "cems" not in json.dumps(data.get("projects", {}).get(str(project), {}).get("mcpServers", {}))
    assert not (project / ".mcp.json").exists()
