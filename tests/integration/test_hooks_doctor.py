"""`cems hooks doctor`: reads the settings files Claude Code reads, runs the installed commands the way it
does (`sh -c`, sample payload on stdin), and fails on anything missing, doubled, broken or wrongly pinned.

HOME and the working directory are temporary folders, so the real ~/.claude is never read or written.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from cems_cli.hooks_install import HOOKS, hook_command

EVENTS = {spec.event for spec in HOOKS}


@pytest.fixture
def claude_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """(user home, project folder): HOME points at the first, the working directory is the second."""
    home, project = tmp_path / "userhome", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(project)
    # The venv's bin folder holds `cems-hook`, which the portable project commands run by name.
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:/usr/bin:/bin")
    return home, project


def _one_json(stdout: str) -> dict:
    assert len(stdout.strip().splitlines()) == 1, stdout
    return json.loads(stdout)


def test_nothing_installed_fails_and_names_the_files_it_read(cli, claude_dirs):
    home, project = claude_dirs
    files = [
        home / ".claude" / "settings.json",
        project / ".claude" / "settings.json",
        project / ".claude" / "settings.local.json",
    ]
    human = cli("hooks", "doctor")
    assert human.code == 1
    text = human.stdout
    assert "cems hooks install" in text
    assert all(str(path) in text for path in files)
    doc = _one_json(cli("hooks", "doctor", "--json").stdout)
    assert doc["ok"] is False and doc["hooks"] == []
    assert [f["path"] for f in doc["files"]] == [str(p) for p in files]
    assert "cems hooks install" in doc["problems"][0]
    assert not (home / ".claude").exists()  # doctor only reads


def test_after_install_every_event_is_installed_once_and_answers(cli, env, claude_dirs, tmp_path: Path):
    settings = tmp_path / "settings.json"
    assert cli("hooks", "install", "--settings", str(settings)).code == 0
    # A store with something in it: the first hook to need the database must not pay for creating it.
    warm = cli("remember", "Run the tests with `make test`.", "--category", "patterns")
    assert warm.code == 0, warm.stderr
    try:
        result = cli("hooks", "doctor", "--settings", str(settings), "--json")
    finally:
        from cems_cli.server.daemon import stop_server

        stop_server(Path(env["CEMS_HOME"]))  # SessionStart starts the warm search server
    doc = _one_json(result.stdout)
    assert result.code == 0, doc["problems"]
    assert doc["ok"] is True and doc["problems"] == []
    assert doc["home"] == env["CEMS_HOME"]
    assert [f["path"] for f in doc["files"]] == [str(settings)]
    assert {e["event"]: e["status"] for e in doc["events"]} == dict.fromkeys(
        [spec.event for spec in HOOKS], "ok"
    )
    written = json.loads(settings.read_text())["hooks"]
    assert {h["event"] for h in doc["hooks"]} == EVENTS and len(doc["hooks"]) == len(HOOKS)
    for hook in doc["hooks"]:
        assert hook["command"] == written[hook["event"]][0]["hooks"][0]["command"]
        assert hook["style"] == "pinned" and hook["pinned_home"] == env["CEMS_HOME"]
        assert hook["ran"] and hook["ok"] and hook["exit_code"] == 0 and hook["error"] is None
        assert isinstance(hook["ms"], float) and hook["ms"] > 0


def test_wrong_store_and_missing_script_are_reported(cli, env, claude_dirs, tmp_path: Path):
    settings = tmp_path / "settings.json"
    elsewhere = tmp_path / "another-store"
    pinned_elsewhere = hook_command("stop.py", home=elsewhere)
    broken = f"CEMS_HOME={env['CEMS_HOME']} {sys.executable} {tmp_path}/gone/hooks/pre_tool_use.py"
    settings.write_text(
        json.dumps(
            {
                "hooks": {
                    "Stop": [{"hooks": [{"type": "command", "command": pinned_elsewhere}]}],
                    "PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": broken}]}],
                }
            }
        )
    )
    result = cli("hooks", "doctor", "--settings", str(settings), "--json")
    assert result.code == 1
    doc = _one_json(result.stdout)
    hooks = {h["event"]: h for h in doc["hooks"]}
    stop, pre = hooks["Stop"], hooks["PreToolUse"]
    assert stop["pinned_home"] == str(elsewhere) and not stop["ok"]
    assert any("pinned to the store" in p and str(elsewhere) in p for p in stop["problems"])
    assert stop["exit_code"] == 0  # it runs, just against the wrong store
    assert any("does not exist" in p for p in pre["problems"])
    assert pre["exit_code"] == 2 and "block" in pre["error"]  # python's "can't open file" is exit 2
    statuses = {e["event"]: e["status"] for e in doc["events"]}
    assert statuses["Stop"] == statuses["PreToolUse"] == "ok"
    assert {e for e, s in statuses.items() if s == "missing"} == EVENTS - {"Stop", "PreToolUse"}
    assert not elsewhere.exists()  # the sample Stop payload touches no store


def test_user_and_project_scopes_together_run_every_hook_twice(cli, env, claude_dirs):
    home, project = claude_dirs
    user_file, project_file = home / ".claude" / "settings.json", project / ".claude" / "settings.json"
    assert cli("hooks", "install").code == 0
    second = cli("hooks", "install", "--scope", "project", "--json")
    assert second.code == 0
    assert second.json()["also_installed_in"] == [{"scope": "user", "settings": str(user_file)}]
    assert f"CEMS_HOME={env['CEMS_HOME']} " in user_file.read_text()
    shared = project_file.read_text()
    assert "CEMS_HOME" not in shared and "/" not in shared  # portable: no path of this machine
    doc = _one_json(cli("hooks", "doctor", "--no-run", "--json").stdout)
    assert doc["ok"] is False
    assert {e["status"] for e in doc["events"]} == {"duplicate"}
    assert {h["style"] for h in doc["hooks"]} == {"pinned", "portable"}
    assert not any(h["ran"] for h in doc["hooks"])
    assert all(h["problems"] == [] for h in doc["hooks"])  # each command alone is fine
    # One file at a time is healthy; uninstall takes both back out (the files install created go).
    assert cli("hooks", "doctor", "--scope", "project", "--no-run").code == 0
    assert cli("hooks", "uninstall", "--scope", "project").code == 0
    assert cli("hooks", "uninstall").code == 0
    assert not user_file.exists() and not project_file.exists()
