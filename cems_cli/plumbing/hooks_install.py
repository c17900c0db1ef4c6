"""Merge CEMS's hooks into a Claude Code settings file, take exactly them out again, and find them.

Install keeps every other key and hook, is idempotent, and leaves a backup beside the file. A manifest in
`$CEMS_HOME` remembers what was written, so uninstall restores the original bytes when the file is as
install left it, and otherwise removes only CEMS's own entries.

Two command styles, because the files have different readers:

- pinned (user `~/.claude/settings.json`, the untracked `.claude/settings.local.json`, `--settings`):
  `CEMS_HOME=/abs/home /abs/python /abs/hooks/<script>.py`. Absolute paths need no PATH lookup and no
  shell shim (a shim costs ~0.3 s per call); the `CEMS_HOME=` prefix records the store the hooks were
  installed for, because a Claude Code started from another shell would otherwise open another (empty) one.
- portable (project `.claude/settings.json`, which teams commit): `cems-hook <handler>`, no path and no
  store, so it works on every teammate's machine with their own store.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shlex
import stat
import sys
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from cems_cli.plumbing.hooks_commands import PORTABLE_PROGRAM, parse_command
from cems_cli.resources import data_dir

Style = Literal["pinned", "portable"]

SCOPES = ("user", "project", "local")


@dataclass(frozen=True)
class HookSpec:
    event: str
    script: str
    matcher: str | None
    timeout: int

    @property
    def handler(self) -> str:
        return self.script.removesuffix(".py")


HOOKS = (
    HookSpec("SessionStart", "session_start.py", "startup|resume|clear|compact", 15),
    HookSpec("UserPromptSubmit", "user_prompt_submit.py", None, 5),
    HookSpec("PreToolUse", "pre_tool_use.py", "*", 5),
    HookSpec("PostToolUse", "post_tool_use.py", "*", 10),
    HookSpec("PostToolUseFailure", "post_tool_use.py", "*", 10),
    HookSpec("Stop", "stop.py", None, 10),
)
SPECS = {spec.event: spec for spec in HOOKS}


class InstallError(ValueError):
    pass


def absolute(path: Path) -> Path:
    """`~` expanded and made absolute without resolving symlinks: the spelling a pinned command and the
    manifest keep, so the same store or file is always written the same way."""
    return Path(os.path.abspath(path.expanduser()))


def settings_path(scope: str, explicit: Path | None, cwd: Path | None = None) -> Path:
    """The settings file of a scope (absolute: it is also the manifest's key, whatever the cwd later)."""
    if explicit is not None:
        return absolute(explicit)
    if scope == "user":
        return Path.home() / ".claude" / "settings.json"
    if scope == "project":
        return (cwd or Path.cwd()).absolute() / ".claude" / "settings.json"
    if scope == "local":
        return (cwd or Path.cwd()).absolute() / ".claude" / "settings.local.json"
    raise InstallError(f"unknown scope {scope!r} (expected one of: {', '.join(SCOPES)})")


def style_for(scope: str) -> Style:
    # Only the project file is shared with other machines; the others are this user's own.
    return "portable" if scope == "project" else "pinned"


def hook_command(script: str, python: str | None = None, home: Path | None = None) -> str:
    """Absolute interpreter and script, prefixed with `CEMS_HOME=<home>` when a store is to be pinned.

    Claude Code runs the string through `sh -c`, so every part is shell-quoted; the assignment prefix is
    plain POSIX shell and costs nothing, unlike a wrapper script.
    """
    parts = [shlex.quote(python or sys.executable), shlex.quote(str(data_dir("hooks") / script))]
    if home is not None:
        parts.insert(0, f"CEMS_HOME={shlex.quote(str(absolute(home)))}")
    return " ".join(parts)


def portable_hook_command(script: str) -> str:
    return f"{PORTABLE_PROGRAM} {script.removesuffix('.py')}"


def command_for(spec: HookSpec, style: Style, home: Path, python: str | None = None) -> str:
    if style == "portable":
        return portable_hook_command(spec.script)
    return hook_command(spec.script, python, home)


# --- settings files and the manifest ---------------------------------------------------------------------


MANIFEST = "hooks-installed.json"  # in CEMS_HOME; `cems hooks install --mcp` keeps its own (mcp.register)


def _load_manifest(home: Path, name: str = MANIFEST) -> dict[str, Any]:
    try:
        data = json.loads((home / name).read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _save_manifest(home: Path, manifest: dict[str, Any], name: str = MANIFEST) -> None:
    home.mkdir(parents=True, exist_ok=True)
    tmp = home / f".{name}.tmp"
    tmp.write_text(json.dumps(manifest, indent=2))
    os.replace(tmp, home / name)


def known_commands(home: Path, path: Path) -> set[str]:
    """The commands installs recorded for this settings file in `home`'s manifest."""
    entry = _load_manifest(home).get(str(path), {})
    return set(entry.get("commands", [])) if isinstance(entry, dict) else set()


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


def _write_backup(backup: Path, data: bytes, mode: int) -> None:
    """The copy of a settings file, with that file's mode: settings may hold API keys, and a 0644 backup
    of a 0600 file handed them to every user. Written owner-only, given `mode` once complete, renamed into
    place (an interrupted write never replaces a good backup)."""
    tmp = backup.with_name(f".{backup.name}.cems-tmp")
    tmp.unlink(missing_ok=True)  # O_CREAT keeps an existing file's mode: start from a new one
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            os.fchmod(handle.fileno(), mode)  # exactly the original's: not filtered by the umask
        os.replace(tmp, backup)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _dump(settings: dict[str, Any]) -> bytes:
    return (json.dumps(settings, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _entries(settings: dict[str, Any], event: str) -> list[Any]:
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise InstallError("settings.json has a 'hooks' value that is not an object; nothing was changed")
    groups = hooks.setdefault(event, [])
    if not isinstance(groups, list):
        raise InstallError(f"settings.json hooks.{event} is not a list; nothing was changed")
    return groups


def _handlers(groups: Iterable[Any]) -> Iterable[dict[str, Any]]:
    for group in groups:
        if isinstance(group, dict) and isinstance(group.get("hooks"), list):
            yield from (h for h in group["hooks"] if isinstance(h, dict))


def _commands(groups: Iterable[Any]) -> list[str]:
    return [h["command"] for h in _handlers(groups) if isinstance(h.get("command"), str)]


def _remove(groups: list[Any], doomed: Collection[str]) -> bool:
    """Drop the handlers running one of `doomed` (and groups left empty); True when something went."""
    removed = False
    kept_groups = []
    for group in groups:
        if isinstance(group, dict) and isinstance(group.get("hooks"), list):
            kept = [h for h in group["hooks"] if not (isinstance(h, dict) and h.get("command") in doomed)]
            if len(kept) != len(group["hooks"]):
                removed = True
                if not kept:
                    continue
                group = {**group, "hooks": kept}
        kept_groups.append(group)
    groups[:] = kept_groups
    return removed


def _ours(settings: dict[str, Any], known: Collection[str]) -> set[str]:
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return set()
    return {
        command
        for groups in hooks.values()
        if isinstance(groups, list)
        for command in _commands(groups)
        if parse_command(command, known) is not None
    }


# --- install / uninstall ---------------------------------------------------------------------------------


def install(path: Path, home: Path, python: str | None = None, style: Style = "pinned") -> dict[str, Any]:
    """Add the missing CEMS hooks; returns what was done. Raises InstallError on an unusable file.

    A CEMS command of another form already in the file for an event (an older install without the pin, a
    venv that moved, the other style) is replaced rather than joined: both would run on every event.
    """
    home = absolute(home)
    original, settings = _read_settings(path)
    # The file may have been installed under another CEMS_HOME: that install's manifest knows the user's
    # original bytes and where their backup is. Its entry moves to this home's manifest (the new commands
    # pin this home, so this is the manifest uninstall will find), or a second install would take the file
    # holding the first install's hooks for the user's original.
    previous_home = _manifest_home(path, home, settings)
    manifest = _load_manifest(home)
    entry = _load_manifest(previous_home).get(str(path), {})
    entry = entry if isinstance(entry, dict) else {}
    known = set(entry.get("commands", []))
    # Before the loop below changes `settings`: does the file being replaced already hold CEMS hooks?
    original_has_cems = bool(_ours(settings, ()))
    added: list[str] = []
    replaced: list[str] = []
    commands: dict[str, str] = {}
    for spec in HOOKS:
        command = command_for(spec, style, home, python)
        commands[spec.event] = command
        groups = _entries(settings, spec.event)
        present = _commands(groups)
        stale = {c for c in present if c != command and parse_command(c, known) is not None}
        if command in present and not stale:
            continue
        if stale:
            _remove(groups, stale)
            replaced.append(spec.event)
        if command not in _commands(groups):
            group: dict[str, Any] = {
                "hooks": [{"type": "command", "command": command, "timeout": spec.timeout}]
            }
            if spec.matcher is not None:
                group = {"matcher": spec.matcher, **group}
            groups.append(group)
        added.append(spec.event)
    result: dict[str, Any] = {
        "settings": str(path),
        "style": style,
        "added": added,
        "replaced": replaced,
        "commands": commands,
        "backup": None,
        "changed": bool(added),
    }
    if not added:
        return result
    new_bytes = _dump(settings)
    if original is not None:
        backup = path.with_name(path.name + ".cems-backup")
        # The first install's backup is the user's own file: never overwrite it. Without a manifest entry
        # (lost, or a store since deleted), a backup free of CEMS hooks is still never replaced by a file
        # that holds some: that would lose the only copy of the user's original.
        keep = bool(entry) or (original_has_cems and backup.exists() and _backup_is_clean(backup))
        original_mode = stat.S_IMODE(path.stat().st_mode)
        if not keep:
            _write_backup(backup, original, original_mode)
        elif backup.exists():
            # A backup kept from an older install may have been written world-readable: never let it be
            # more open than the file it copies. Best effort: someone else's backup must not stop the install.
            with contextlib.suppress(OSError):
                os.chmod(backup, stat.S_IMODE(backup.stat().st_mode) & original_mode)
        result["backup"] = str(backup)
    _atomic_write(path, new_bytes)
    manifest[str(path)] = {
        "created_file": entry.get("created_file", original is None),
        "original_sha256": entry.get(
            "original_sha256", hashlib.sha256(original).hexdigest() if original is not None else None
        ),
        "written_sha256": hashlib.sha256(new_bytes).hexdigest(),
        "commands": sorted(known | set(commands.values())),
        "backup": result["backup"] or entry.get("backup"),
    }
    _save_manifest(home, manifest)
    if previous_home != home:  # moved, not copied: one manifest speaks for a file
        old_manifest = _load_manifest(previous_home)
        if old_manifest.pop(str(path), None) is not None:
            _save_manifest(previous_home, old_manifest)
    return result


def _manifest_home(path: Path, home: Path, settings: dict[str, Any]) -> Path:
    """The CEMS_HOME whose manifest has this file: the current one, else a store the file's hooks pin (the
    install may have run under another CEMS_HOME; its manifest still knows the original bytes)."""
    if str(path) in _load_manifest(home):
        return home
    for command in sorted(_ours(settings, ())):
        parsed = parse_command(command)
        # Only an absolute pin names a store: a relative one would depend on the folder uninstall runs in.
        if parsed is not None and parsed.pinned_home and os.path.isabs(parsed.pinned_home):
            candidate = Path(parsed.pinned_home)
            if str(path) in _load_manifest(candidate):
                return candidate
    return home


def _backup_is_clean(backup: Path) -> bool:
    """The backup holds no CEMS hooks (it is not itself the output of an older, manifest-less install)."""
    try:
        _, data = _read_settings(backup)
    except (InstallError, OSError):
        return False
    return not _ours(data, ())


def uninstall(path: Path, home: Path) -> dict[str, Any]:
    current, settings = _read_settings(path)
    result: dict[str, Any] = {"settings": str(path), "removed": [], "restored": False, "changed": False}
    if current is None:
        return result
    home = _manifest_home(path, absolute(home), settings)
    manifest = _load_manifest(home)
    entry = manifest.get(str(path), {})
    if entry and hashlib.sha256(current).hexdigest() == entry.get("written_sha256"):
        # Untouched since install: put back the user's exact bytes (or remove the file install created).
        backup = Path(entry["backup"]) if entry.get("backup") else None
        if entry.get("created_file"):
            path.unlink()
        elif backup is not None and backup.exists() and _backup_is_clean(backup):
            _atomic_write(path, backup.read_bytes())
        else:
            backup = None
        if entry.get("created_file") or backup is not None:
            result.update(restored=True, changed=True, removed=[s.event for s in HOOKS])
            del manifest[str(path)]
            _save_manifest(home, manifest)
            return result
    ours = _ours(settings, set(entry.get("commands", [])))
    hooks = settings.get("hooks")
    if isinstance(hooks, dict) and ours:
        for event in list(hooks):
            groups = hooks[event]
            if not isinstance(groups, list):
                continue
            if _remove(groups, ours):
                result["removed"].append(event)
            if not groups:
                del hooks[event]
        if not hooks:
            del settings["hooks"]
    if result["removed"]:
        _atomic_write(path, _dump(settings))
        result["changed"] = True
    if str(path) in manifest:
        del manifest[str(path)]
        _save_manifest(home, manifest)
    return result
