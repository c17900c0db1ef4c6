"""Merge CEMS's hooks into a Claude Code settings.json, and take exactly them out again.

Install keeps every other key and hook, is idempotent, and leaves a backup beside the file. A manifest in
`$CEMS_HOME` remembers what was written, so uninstall restores the original bytes when the file is as
install left it, and otherwise removes only CEMS's own entries.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cems_cli.resources import data_dir


@dataclass(frozen=True)
class HookSpec:
    event: str
    script: str
    matcher: str | None
    timeout: int


HOOKS = (
    HookSpec("SessionStart", "session_start.py", "startup|resume|clear|compact", 15),
    HookSpec("UserPromptSubmit", "user_prompt_submit.py", None, 5),
    HookSpec("PreToolUse", "pre_tool_use.py", "*", 5),
    HookSpec("PostToolUse", "post_tool_use.py", "*", 10),
    HookSpec("PostToolUseFailure", "post_tool_use.py", "*", 10),
    HookSpec("Stop", "stop.py", None, 10),
)


class InstallError(ValueError):
    pass


def settings_path(scope: str, explicit: Path | None, cwd: Path | None = None) -> Path:
    if explicit is not None:
        return explicit.expanduser()
    if scope == "user":
        return Path.home() / ".claude" / "settings.json"
    if scope == "project":
        return (cwd or Path.cwd()) / ".claude" / "settings.json"
    raise InstallError(f"unknown scope {scope!r} (expected user or project)")


def hook_command(script: str, python: str | None = None) -> str:
    """Absolute interpreter and script: no PATH lookup, no shell shim (a shim costs ~0.3 s per call)."""
    return f"{shlex.quote(python or sys.executable)} {shlex.quote(str(data_dir('hooks') / script))}"


def _manifest_path(home: Path) -> Path:
    return home / "hooks-installed.json"


def _load_manifest(home: Path) -> dict[str, Any]:
    try:
        data = json.loads(_manifest_path(home).read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _save_manifest(home: Path, manifest: dict[str, Any]) -> None:
    home.mkdir(parents=True, exist_ok=True)
    tmp = _manifest_path(home).with_suffix(".tmp")
    tmp.write_text(json.dumps(manifest, indent=2))
    os.replace(tmp, _manifest_path(home))


def _read_settings(path: Path) -> tuple[bytes | None, dict[str, Any]]:
    if not path.exists():
        return None, {}
    raw = path.read_bytes()
    if not raw.strip():
        return raw, {}
    try:
        data = json.loads(raw)
    except ValueError as error:
        raise InstallError(f"{path} is not valid JSON ({error}); fix it first, nothing was changed") from None
    if not isinstance(data, dict):
        raise InstallError(f"{path} does not hold a JSON object; nothing was changed")
    return raw, data


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.cems-tmp")
    tmp.write_bytes(data)
    if path.exists():
        os.chmod(tmp, path.stat().st_mode & 0o777)
    os.replace(tmp, path)


def _entries(settings: dict[str, Any], event: str) -> list[Any]:
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise InstallError("settings.json has a 'hooks' value that is not an object; nothing was changed")
    groups = hooks.setdefault(event, [])
    if not isinstance(groups, list):
        raise InstallError(f"settings.json hooks.{event} is not a list; nothing was changed")
    return groups


def _has_command(groups: list[Any], command: str) -> bool:
    return any(
        isinstance(g, dict)
        and any(isinstance(h, dict) and h.get("command") == command for h in g.get("hooks", []) or [])
        for g in groups
    )


def install(path: Path, home: Path, python: str | None = None) -> dict[str, Any]:
    """Add the missing CEMS hooks; returns what was done. Raises InstallError on an unusable file."""
    original, settings = _read_settings(path)
    added: list[str] = []
    commands: list[str] = []
    for spec in HOOKS:
        command = hook_command(spec.script, python)
        commands.append(command)
        groups = _entries(settings, spec.event)
        if _has_command(groups, command):
            continue
        group: dict[str, Any] = {"hooks": [{"type": "command", "command": command, "timeout": spec.timeout}]}
        if spec.matcher is not None:
            group = {"matcher": spec.matcher, **group}
        groups.append(group)
        added.append(spec.event)
    result: dict[str, Any] = {"settings": str(path), "added": added, "backup": None, "changed": bool(added)}
    if not added:
        return result
    new_bytes = (json.dumps(settings, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    manifest = _load_manifest(home)
    entry = manifest.get(str(path), {})
    if original is not None:
        backup = path.with_name(path.name + ".cems-backup")
        if not entry:  # the first install's backup is the user's own file: never overwrite it
            backup.write_bytes(original)
        result["backup"] = str(backup)
    _atomic_write(path, new_bytes)
    manifest[str(path)] = {
        "created_file": entry.get("created_file", original is None),
        "original_sha256": entry.get(
            "original_sha256", hashlib.sha256(original).hexdigest() if original is not None else None
        ),
        "written_sha256": hashlib.sha256(new_bytes).hexdigest(),
        "commands": sorted(set(entry.get("commands", [])) | set(commands)),
        "backup": result["backup"] or entry.get("backup"),
    }
    _save_manifest(home, manifest)
    return result


def uninstall(path: Path, home: Path, python: str | None = None) -> dict[str, Any]:
    manifest = _load_manifest(home)
    entry = manifest.get(str(path), {})
    ours = set(entry.get("commands", [])) | {hook_command(spec.script, python) for spec in HOOKS}
    current, settings = _read_settings(path)
    result: dict[str, Any] = {"settings": str(path), "removed": [], "restored": False, "changed": False}
    if current is None:
        return result
    if entry and hashlib.sha256(current).hexdigest() == entry.get("written_sha256"):
        # Untouched since install: put back the user's exact bytes (or remove the file install created).
        backup = Path(entry["backup"]) if entry.get("backup") else None
        if entry.get("created_file"):
            path.unlink()
        elif backup is not None and backup.exists():
            _atomic_write(path, backup.read_bytes())
        else:
            backup = None
        if entry.get("created_file") or backup is not None:
            result.update(restored=True, changed=True, removed=[s.event for s in HOOKS])
            del manifest[str(path)]
            _save_manifest(home, manifest)
            return result
    hooks = settings.get("hooks")
    if isinstance(hooks, dict):
        for event in list(hooks):
            groups = hooks[event]
            if not isinstance(groups, list):
                continue
            kept_groups = []
            for group in groups:
                if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                    kept = [
                        h for h in group["hooks"] if not (isinstance(h, dict) and h.get("command") in ours)
                    ]
                    if len(kept) != len(group["hooks"]):
                        result["removed"].append(event)
                        if not kept:
                            continue
                        group = {**group, "hooks": kept}
                kept_groups.append(group)
            if kept_groups:
                hooks[event] = kept_groups
            else:
                del hooks[event]
        if not hooks:
            del settings["hooks"]
    if result["removed"]:
        _atomic_write(path, (json.dumps(settings, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
        result["changed"] = True
    manifest.pop(str(path), None)
    _save_manifest(home, manifest)
    return result
