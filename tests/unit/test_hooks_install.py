"""`cems hooks install/uninstall`: merge into settings.json, idempotent, and a byte-identical round trip."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cems_cli.hooks_install import HOOKS, InstallError, hook_command, install, uninstall

EXISTING = b"""{
  "model": "opus",
    "permissions": {"allow": ["Bash(git status)"]},
  "hooks": {
    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "~/guard.sh", "timeout": 3}]}]
  }
}
"""


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
    assert _commands(settings, "PreToolUse") == ["~/guard.sh", hook_command("pre_tool_use.py")]
    pre = settings["hooks"]["PreToolUse"][1]
    assert pre["matcher"] == "*" and pre["hooks"][0]["timeout"] == 5 and pre["hooks"][0]["type"] == "command"
    # Absolute interpreter and absolute script path, so no PATH lookup or shell shim is involved.
    command = pre["hooks"][0]["command"]
    assert command.split()[0].startswith("/") and command.split()[1].startswith("/")
    again = install(path, home)
    assert again["changed"] is False
    assert json.loads(path.read_text()) == settings


def test_uninstall_restores_the_original_bytes(tmp_path: Path):
    path, home = tmp_path / "settings.json", tmp_path / "home"
    path.write_bytes(EXISTING)
    install(path, home)
    result = uninstall(path, home)
    assert result["restored"] is True
    assert path.read_bytes() == EXISTING


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
        assert script.name == spec.script
