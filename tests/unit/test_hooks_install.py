"""`cems hooks install/uninstall`: merge into settings.json, idempotent, a byte-identical round trip, and
the two command forms (store-pinned absolute paths for the user's own files, portable `cems-hook` for
shared ones)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from cems_cli.plumbing.hookentry import HANDLERS
from cems_cli.plumbing.hooks_commands import Invocation, NotRunnable, invocation, parse_command
from cems_cli.plumbing.hooks_install import (
    HOOKS,
    InstallError,
    hook_command,
    install,
    portable_hook_command,
    settings_path,
    style_for,
    uninstall,
)
from cems_cli.resources import data_dir

EXISTING = b"""{
  "model": "opus",
    "permissions": {"allow": ["Bash(git status)"]},
  "hooks": {
    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "~/guard.sh", "timeout": 3}]}]
  }
}
"""


@pytest.fixture(autouse=True)
def _home_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Path.home() is a temporary folder: no test may read or write the real ~/.claude."""
    home = tmp_path / "userhome"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


def _commands(settings: dict, event: str) -> list[str]:
    return [h["command"] for g in settings["hooks"].get(event, []) for h in g["hooks"]]


def test_install_merges_keeps_everything_and_is_idempotent(tmp_path: Path):
    path, home = tmp_path / ".claude" / "settings.json", tmp_path / "home"
    path.parent.mkdir()
    path.write_bytes(EXISTING)
    first = install(path, home)
    assert first["changed"] and set(first["added"]) == {s.event for s in HOOKS}
    assert Path(first["backup"]).read_bytes() == EXISTING
    settings = json.loads(path.read_text())
    assert settings["model"] == "opus" and settings["permissions"] == {"allow": ["Bash(git status)"]}
    assert _commands(settings, "PreToolUse") == ["~/guard.sh", hook_command("pre_tool_use.py", home=home)]
    pre = settings["hooks"]["PreToolUse"][1]
    assert pre["matcher"] == "*" and pre["hooks"][0]["timeout"] == 5 and pre["hooks"][0]["type"] == "command"
    again = install(path, home)
    assert again["changed"] is False
    assert json.loads(path.read_text()) == settings


def test_user_scope_pins_the_store_with_absolute_paths(tmp_path: Path, _home_dir: Path):
    path = settings_path("user", None)
    assert path == _home_dir / ".claude" / "settings.json"
    home = tmp_path / "my store"  # a space: the command must survive `sh -c`
    install(path, home, style=style_for("user"))
    for spec in HOOKS:
        (command,) = _commands(json.loads(path.read_text()), spec.event)
        words = shlex.split(command)
        assert words == [f"CEMS_HOME={home}", sys.executable, str(data_dir("hooks") / spec.script)]
        assert all(os.path.isabs(w.removeprefix("CEMS_HOME=")) for w in words)
        parsed = parse_command(command)
        assert parsed is not None and parsed.pinned_home == str(home) and parsed.handler == spec.handler
    # The pin reaches the interpreter when a shell runs the line, as Claude Code does.
    probe = (
        hook_command("stop.py", home=home).rsplit(" ", 1)[0]
        + " -c 'import os; print(os.environ[\"CEMS_HOME\"])'"
    )
    assert subprocess.run(["sh", "-c", probe], capture_output=True, text=True).stdout.strip() == str(home)


def test_project_scope_writes_portable_commands(tmp_path: Path):
    project = tmp_path / "repo"
    path = settings_path("project", None, project)
    assert path == project / ".claude" / "settings.json"
    install(path, tmp_path / "home", style=style_for("project"))
    text = path.read_text()
    assert "CEMS_HOME" not in text and str(tmp_path) not in text and sys.executable not in text
    settings = json.loads(text)
    for spec in HOOKS:
        assert _commands(settings, spec.event) == [f"cems-hook {spec.handler}"]
        assert spec.handler in HANDLERS
    # The local file is the user's own (not committed): absolute and pinned like the user scope.
    assert settings_path("local", None, project) == project / ".claude" / "settings.local.json"
    assert style_for("local") == "pinned" and style_for("project") == "portable"


def test_uninstall_restores_the_original_bytes(tmp_path: Path):
    path, home = tmp_path / "settings.json", tmp_path / "home"
    path.write_bytes(EXISTING)
    install(path, home)
    result = uninstall(path, home)
    assert result["restored"] is True
    assert path.read_bytes() == EXISTING


def test_uninstall_under_another_cems_home_still_restores_via_the_pinned_store(tmp_path: Path):
    path = tmp_path / "settings.json"
    path.write_bytes(EXISTING)
    install(path, tmp_path / "home-a")
    result = uninstall(path, tmp_path / "home-b")
    assert result["restored"] is True and path.read_bytes() == EXISTING


def test_a_second_install_under_another_cems_home_keeps_the_users_backup(tmp_path: Path):
    path = tmp_path / "settings.json"
    path.write_bytes(EXISTING)
    install(path, tmp_path / "home-a")
    second = install(path, tmp_path / "home-b")
    assert set(second["replaced"]) == {s.event for s in HOOKS}  # now pinned to home-b
    assert Path(second["backup"]).read_bytes() == EXISTING
    assert not (tmp_path / "home-a" / "hooks-installed.json").read_text().count(str(path))  # moved to B
    result = uninstall(path, tmp_path / "home-b")
    assert result["restored"] is True and path.read_bytes() == EXISTING


def test_a_backup_free_of_cems_hooks_is_never_replaced_by_one_holding_them(tmp_path: Path):
    """The manifest is gone (a deleted store): the next install must still not back up its own hooks over
    the user's original."""
    path = tmp_path / "settings.json"
    path.write_bytes(EXISTING)
    install(path, tmp_path / "home-a")
    (tmp_path / "home-a" / "hooks-installed.json").unlink()
    install(path, tmp_path / "home-b")
    assert path.with_name("settings.json.cems-backup").read_bytes() == EXISTING
    assert uninstall(path, tmp_path / "home-b")["restored"] is True and path.read_bytes() == EXISTING


def test_uninstall_after_user_edits_removes_only_ours(tmp_path: Path):
    path, home = tmp_path / "settings.json", tmp_path / "home"
    path.write_bytes(EXISTING)
    install(path, home)
    settings = json.loads(path.read_text())
    settings["theme"] = "dark"
    settings["hooks"]["Stop"].append({"hooks": [{"type": "command", "command": "notify-send done"}]})
    path.write_text(json.dumps(settings))
    result = uninstall(path, home)
    assert result["restored"] is False and result["changed"] is True
    after = json.loads(path.read_text())
    assert after["theme"] == "dark"
    assert _commands(after, "PreToolUse") == ["~/guard.sh"]
    assert _commands(after, "Stop") == ["notify-send done"]
    assert "UserPromptSubmit" not in after["hooks"]


def test_older_unpinned_commands_are_replaced_by_install_and_removed_by_uninstall(tmp_path: Path):
    """Settings written by an install that did not pin the store (and left no manifest)."""
    path, home = tmp_path / "settings.json", tmp_path / "home"
    own_stop = "python3 ~/.claude/hooks/stop.py"  # someone's own script with a CEMS script name
    settings = json.loads(EXISTING)
    for spec in HOOKS:
        groups = settings["hooks"].setdefault(spec.event, [])
        groups.append({"hooks": [{"type": "command", "command": hook_command(spec.script)}]})
    settings["hooks"]["Stop"].append({"hooks": [{"type": "command", "command": own_stop}]})
    path.write_text(json.dumps(settings))
    result = install(path, home)
    assert set(result["replaced"]) == {s.event for s in HOOKS}
    after = json.loads(path.read_text())
    assert _commands(after, "PreToolUse") == ["~/guard.sh", hook_command("pre_tool_use.py", home=home)]
    assert _commands(after, "Stop") == [own_stop, hook_command("stop.py", home=home)]
    # Uninstall restores nothing here (the backup holds the older CEMS hooks): it removes ours, all forms.
    path.write_text(json.dumps(settings))  # back to the unpinned file, as if the install never happened
    removed = uninstall(path, tmp_path / "other-home")
    assert removed["restored"] is False and set(removed["removed"]) == {s.event for s in HOOKS}
    left = json.loads(path.read_text())
    assert _commands(left, "PreToolUse") == ["~/guard.sh"] and _commands(left, "Stop") == [own_stop]


def test_commands_are_recognised_as_cems_only_when_they_are():
    assert parse_command("python3 ~/.claude/hooks/stop.py") is None
    assert parse_command("~/guard.sh") is None
    assert parse_command("echo 'unbalanced") is None
    portable = parse_command(portable_hook_command("post_tool_use.py"))
    assert portable is not None and portable.portable and portable.handler == "post_tool_use"
    unpinned = parse_command(hook_command("stop.py"))
    assert unpinned is not None and unpinned.pinned_home is None and unpinned.script is not None
    # A deleted venv's copy is still recognisable, so doctor can report it and uninstall remove it.
    gone = "/gone/venv/bin/python /gone/venv/lib/site-packages/cems_cli/_data/hooks/stop.py"
    assert parse_command(gone) is not None


def test_install_into_a_missing_file_and_uninstall_removes_it(tmp_path: Path):
    path, home = tmp_path / "new" / "settings.json", tmp_path / "home"
    assert install(path, home)["backup"] is None
    assert path.exists()
    assert uninstall(path, home)["restored"] is True
    assert not path.exists()


@pytest.mark.parametrize("content", [b"{not json", b"[1, 2]", b'{"hooks": []}'])
def test_unusable_settings_are_refused_and_left_alone(tmp_path: Path, content: bytes):
    path = tmp_path / "settings.json"
    path.write_bytes(content)
    with pytest.raises(InstallError):
        install(path, tmp_path / "home")
    assert path.read_bytes() == content


def test_every_registered_script_exists():
    for spec in HOOKS:
        script = Path(hook_command(spec.script).split()[-1])
        assert script.name == spec.script and script.is_file()


def test_cems_hook_entry_point_is_light_and_refuses_unknown_handlers():
    # A package is in sys.modules as soon as any module of it is imported.
    heavy = {"typer", "rich", "pydantic", "click", "typing"}
    code = f"import sys, cems_cli.plumbing.hookentry; print(sorted(set(sys.modules) & {heavy!r}))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "[]"
    entry = [sys.executable, "-m", "cems_cli.plumbing.hookentry"]
    bad = subprocess.run([*entry, "nope"], input=b"{}", capture_output=True)
    assert bad.returncode == 1 and b"usage: cems-hook" in bad.stderr  # visible, and 1 does not block
    # Stop while Claude is already continuing: the handler answers nothing, touching no store.
    stop = json.dumps({"session_id": "s", "hook_event_name": "Stop", "stop_hook_active": True}).encode()
    ran = subprocess.run([*entry, "stop"], input=stop, capture_output=True)
    assert ran.returncode == 0 and ran.stdout == b""


# --- which commands doctor may run -----------------------------------------------------------------------


def test_doctor_runs_the_commands_install_writes_with_this_installations_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    home = tmp_path / "my store"
    for spec in HOOKS:
        pinned = invocation(hook_command(spec.script, home=home))
        assert pinned == Invocation(
            (sys.executable, str(data_dir("hooks") / spec.script)), {"CEMS_HOME": str(home)}
        )
        assert invocation(hook_command(spec.script)).env == {}  # an older, unpinned install
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    program = bin_dir / "cems-hook"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    assert invocation(portable_hook_command("stop.py")) == Invocation((str(program), "stop"))


@pytest.mark.parametrize(
    "command",
    [
        "cems-hook stop`touch${IFS}/tmp/pwned`",
        "cems-hook 'stop'",
        "cems-hook  stop",
        "cems-hook stop; touch /tmp/pwned",
        "cems-hook stop > /tmp/out",
        "cems-hook nope",
        "PATH=/tmp/evil cems-hook stop",
        "/tmp/evil/cems-hook stop",
        "CEMS_HOME=relative cems-hook stop",
        "CEMS_HOME=/x /bin/echo /x/stop.py",
        "CEMS_HOME=/x LD_PRELOAD=/tmp/evil.so cems-hook stop",
        "'CEMS_HOME=/x' cems-hook stop",
        "cems-hook stop extra",
    ],
)
def test_doctor_refuses_every_other_spelling(command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:/usr/bin:/bin")
    with pytest.raises(NotRunnable):
        invocation(command)


def test_doctor_refuses_other_interpreters_scripts_and_environments(tmp_path: Path):
    script = str(data_dir("hooks") / "stop.py")
    home = shlex.quote(str(tmp_path / "home"))
    for command in (
        f"LD_PRELOAD=/tmp/evil.so CEMS_HOME={home} {shlex.quote(sys.executable)} {shlex.quote(script)}",
        f"CEMS_HOME={home} PYTHONPATH=/tmp/evil {shlex.quote(sys.executable)} {shlex.quote(script)}",
        f"CEMS_HOME={home} /bin/sh {shlex.quote(script)}",
        f"CEMS_HOME={home} python3 {shlex.quote(script)}",  # found on PATH: not this installation's
        f"CEMS_HOME={home} {shlex.quote(sys.executable)} {tmp_path}/cems_cli/_data/hooks/stop.py",
        f"CEMS_HOME={home} {shlex.quote(sys.executable)} {shlex.quote(str(data_dir('hooks') / '_entry.py'))}",
        f"CEMS_HOME={home} {shlex.quote(sys.executable)} {shlex.quote(script)} && touch /tmp/pwned",
    ):
        with pytest.raises(NotRunnable):
            invocation(command)
