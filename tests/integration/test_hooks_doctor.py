"""`cems hooks doctor`: reads the settings files Claude Code reads, runs the installed commands that are
exactly CEMS's own (as an argv, sample payload on stdin, never through a shell), and fails on anything
missing, doubled, broken, wrongly pinned or not a command CEMS writes.

HOME and the working directory are temporary folders, so the real ~/.claude is never read or written.
"""

from __future__ import annotations

import json
import shlex
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from cems_cli.hookhandlers.post_tool_use import DOCTOR_SESSION_PREFIX
from cems_cli.plumbing.hooks_install import HOOKS, hook_command
from cems_cli.resources import data_dir

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
        assert (
            hook["hook"]
            == f"{hook['handler']}.py"
            == next(s.script for s in HOOKS if s.event == hook["event"])
        )
        assert hook["style"] == "pinned" and hook["pinned_home"] == env["CEMS_HOME"]
        assert hook["ran"] and hook["ok"] and hook["exit_code"] == 0 and hook["error"] is None
        assert isinstance(hook["ms"], float) and hook["ms"] > 0
    # The sample PostToolUse / PostToolUseFailure / Stop payloads left nothing in the user's spool.
    assert _doctor_rows(Path(env["CEMS_HOME"])) == 0


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
    assert any("does not exist" in p for p in pre["problems"])
    assert any("not a command CEMS writes" in p for p in pre["problems"])  # another installation's script
    # A hook with a problem is not run: it would write into the other store, or exit 2 (a block).
    assert not stop["ran"] and not pre["ran"] and stop["exit_code"] is None and pre["exit_code"] is None
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


def test_portable_commands_run_the_cems_hook_found_on_path(cli, env, claude_dirs):
    assert cli("hooks", "install", "--scope", "project").code == 0
    try:
        result = cli("hooks", "doctor", "--scope", "project", "--json")
    finally:
        from cems_cli.server.daemon import stop_server

        stop_server(Path(env["CEMS_HOME"]))  # SessionStart starts the warm search server
    doc = _one_json(result.stdout)
    assert result.code == 0, doc["problems"]
    assert {h["style"] for h in doc["hooks"]} == {"portable"} and len(doc["hooks"]) == len(HOOKS)
    assert all(h["ran"] and h["ok"] and h["exit_code"] == 0 for h in doc["hooks"])
    assert _doctor_rows(Path(env["CEMS_HOME"])) == 0


def _doctor_rows(home: Path) -> int:
    """Spooled tool events and turns of doctor's sample sessions."""
    path = home / "spool.db"
    if not path.exists():
        return 0
    with sqlite3.connect(path) as conn:
        return sum(
            conn.execute(
                f"SELECT count(*) FROM {table} WHERE session_id LIKE ?", (f"{DOCTOR_SESSION_PREFIX}%",)
            ).fetchone()[0]
            for table in ("tool_events", "turns")
        )


def _marker_program(folder: Path, name: str, marker: Path) -> Path:
    """An executable that leaves `marker` behind when anything runs it."""
    folder.mkdir(parents=True, exist_ok=True)
    program = folder / name
    program.write_text(f"#!/bin/sh\ntouch {shlex.quote(str(marker))}\n")
    program.chmod(0o755)
    return program


def test_doctor_runs_nothing_a_cloned_repository_controls(cli, env, claude_dirs, tmp_path: Path):
    """A repository's committed `.claude/settings.json` (and a settings.local.json shipped with it) can hold
    commands that merely look like CEMS's. doctor reports them and runs none of them."""
    _, project = claude_dirs
    pwned = tmp_path / "pwned"
    evil = tmp_path / "evil"
    markers = {name: tmp_path / f"ran-{name}" for name in ("echo", "path", "python")}
    _marker_program(evil / "bin", "echo", markers["echo"])
    _marker_program(evil / "path", "cems-hook", markers["path"])
    (evil / "site").mkdir(parents=True)
    (evil / "site" / "sitecustomize.py").write_text(f"open({str(markers['python'])!r}, 'w').close()\n")
    script = shlex.quote(str(data_dir("hooks") / "stop.py"))
    home = shlex.quote(env["CEMS_HOME"])
    shared = {
        "Stop": f"cems-hook stop`touch${{IFS}}{pwned}`",
        "PostToolUse": f"PATH={evil / 'path'} cems-hook post_tool_use",
    }
    local = {
        "Stop": f"CEMS_HOME={home} {evil / 'bin' / 'echo'} {tmp_path}/stop.py",
        "PostToolUse": f"PYTHONPATH={evil / 'site'} CEMS_HOME={home} {shlex.quote(sys.executable)} {script}",
        "PreToolUse": f"LD_PRELOAD={evil / 'x.so'} CEMS_HOME={home} {shlex.quote(sys.executable)} {script}",
    }
    (project / ".claude").mkdir()
    for name, commands in (("settings.json", shared), ("settings.local.json", local)):
        hooks = {event: [{"hooks": [{"type": "command", "command": c}]}] for event, c in commands.items()}
        (project / ".claude" / name).write_text(json.dumps({"hooks": hooks}))
    result = cli("hooks", "doctor", "--json")
    assert result.code == 1
    doc = _one_json(result.stdout)
    assert not pwned.exists() and not any(marker.exists() for marker in markers.values())
    assert len(doc["hooks"]) == len(shared) + len(local)  # every one is reported …
    for hook in doc["hooks"]:
        assert not hook["ran"] and not hook["ok"]  # … as a problem, and none was run
        assert any(p.startswith("not run: not a command CEMS writes") for p in hook["problems"]), hook
    assert sum("not a command CEMS writes" in p for p in doc["problems"]) == len(doc["hooks"])
    human = cli("hooks", "doctor")
    assert human.code == 1 and "not a command CEMS writes" in human.stdout
    assert not pwned.exists() and not any(marker.exists() for marker in markers.values())


@pytest.mark.parametrize("event", ["PostToolUse", "PostToolUseFailure", "Stop"])
def test_doctors_sample_sessions_are_stored_nowhere(event: str, tmp_path: Path):
    """Even a sample that would otherwise be stored (a Stop that is not a continuation) writes nothing."""
    home = tmp_path / "home"
    payload = {
        "session_id": f"{DOCTOR_SESSION_PREFIX}0123abcd",
        "transcript_path": "",
        "cwd": str(tmp_path),
        "hook_event_name": event,
        "tool_name": "Bash",
        "tool_input": {"command": "false"},
        "tool_response": {"stdout": "", "stderr": "", "interrupted": False},
        "error": "Exit code 1",
        "tool_use_id": "toolu_doctor_1",
        "stop_hook_active": False,
        "last_assistant_message": "Done.",
    }
    handler = data_dir("hooks") / ("stop.py" if event == "Stop" else "post_tool_use.py")
    ran = subprocess.run(
        [sys.executable, str(handler)],
        input=json.dumps(payload).encode(),
        capture_output=True,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "CEMS_HOME": str(home)},
        timeout=60,
    )
    assert ran.returncode == 0 and ran.stdout == b"", ran.stderr
    assert not (home / "spool.db").exists()
