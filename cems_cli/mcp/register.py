"""Register `cems mcp` with Claude Code (`cems hooks install --mcp`) and take it out again.

Where Claude Code reads stdio MCP servers (checked against the pinned CLI in tests/support/claude_code):

- project: `mcpServers` of `.mcp.json` in the project folder, the file a team commits. Written portable,
  `cems mcp` by name with no store, like the project hooks (`cems-hook`): each teammate's own install;
- user: top-level `mcpServers` of `~/.claude.json` (`$CLAUDE_CONFIG_DIR/.claude.json` when set);
- local: `projects["<project folder>"].mcpServers` of that same file: this user, this folder only.

User and local entries pin the executable and `CEMS_HOME`, as the hooks do. A manifest in `$CEMS_HOME`
remembers the original bytes (a private copy under `$CEMS_HOME/backups`, not beside a file that may be
committed): uninstall restores them exactly when the file is as install left it, and otherwise removes
only the `cems` entry. Claude Code itself rewrites `~/.claude.json` on every start, so there the second
case is the usual one.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cems_cli.plumbing.hooks_install import (
    InstallError,
    _atomic_write,
    _load_manifest,
    _read_settings,
    _save_manifest,
    _write_backup,
    absolute,
)

SERVER = "cems"
MANIFEST = "mcp-installed.json"


@dataclass(frozen=True)
class Target:
    """One `mcpServers` object: the file, and the keys leading to the object that holds it."""

    scope: str
    path: Path
    keys: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        """The manifest's key: user and local share one file."""
        return json.dumps([str(self.path), *self.keys])

    @property
    def where(self) -> str:
        inside = "".join(f"[{json.dumps(k)}]" for k in self.keys)
        return f"{self.path}: {inside + '.' if inside else ''}mcpServers.{SERVER}"


def claude_json() -> Path:
    """Claude Code's own state file, which holds user- and local-scope MCP servers."""
    folder = os.environ.get("CLAUDE_CONFIG_DIR")
    return absolute(Path(folder)) / ".claude.json" if folder else Path.home() / ".claude.json"


def target_for(scope: str, cwd: Path | None = None) -> Target:
    project = (cwd or Path.cwd()).absolute()
    if scope == "project":
        return Target(scope, project / ".mcp.json")
    if scope == "user":
        return Target(scope, claude_json())
    if scope == "local":
        return Target(scope, claude_json(), ("projects", str(project)))
    raise InstallError(f"unknown scope {scope!r} (expected one of: user, project, local)")


def server_entry(portable: bool, home: Path, python: str | None = None) -> dict[str, Any]:
    """What Claude Code runs. Pinned: this installation's `cems` (or its Python with -m) and this store."""
    if portable:
        return {"type": "stdio", "command": "cems", "args": ["mcp"]}
    interpreter = Path(python or sys.executable)
    script = interpreter.parent / "cems"  # the console script of the same environment
    if script.is_file() and os.access(script, os.X_OK):
        command, args = str(absolute(script)), ["mcp"]
    else:
        command, args = str(absolute(interpreter)), ["-m", "cems_cli.cli.app", "mcp"]
    return {"type": "stdio", "command": command, "args": args, "env": {"CEMS_HOME": str(absolute(home))}}


def is_cems_entry(entry: Any) -> bool:
    """A `cems` server that runs CEMS (any install, any path): install replaces it, uninstall removes it.
    Anything else under the name is someone else's and is never touched."""
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        return False
    args = entry.get("args") or []
    if not isinstance(args, list):
        return False
    if os.path.basename(entry["command"]) == "cems":
        return args == ["mcp"]
    return args == ["-m", "cems_cli.cli.app", "mcp"]


# --- files -----------------------------------------------------------------------------------------------


def _chain(target: Target) -> tuple[str, ...]:
    return (*target.keys, "mcpServers")


def _servers(data: dict[str, Any], target: Target, create: bool) -> tuple[dict[str, Any] | None, int]:
    """(the target's `mcpServers` object, how many objects on the way to it, itself included, were there
    before): made when `create`, else None when absent."""
    node, existing = data, 0
    for depth, key in enumerate(_chain(target)):
        child = node.get(key)
        if child is None:
            if not create:
                return None, depth
            child = node[key] = {}
        else:
            existing = depth + 1
        if not isinstance(child, dict):
            raise InstallError(f"{target.path}: {key!r} is not a JSON object; nothing was changed")
        node = child
    return node, existing


def _drop_empty(data: dict[str, Any], target: Target, existing: int) -> None:
    """Remove the objects on the way to `mcpServers` that install made and that hold nothing now."""
    chain = _chain(target)
    nodes = [data]
    for key in chain:
        nodes.append(nodes[-1][key])
    for depth in range(len(chain) - 1, existing - 1, -1):
        if nodes[depth + 1]:
            break
        del nodes[depth][chain[depth]]


def _dump(data: dict[str, Any], like: bytes | None) -> bytes:
    """Two-space JSON as Claude Code writes it, or the indentation the file had (a committed .mcp.json then
    shows the added server as its only change); a file that ended in a newline keeps it."""
    newline = like is None or like.endswith(b"\n")
    indent: int | str = 2
    if like:
        found = re.search(rb"\n([ \t]+)\S", like)
        if found:
            indent = found.group(1).decode()
    text = json.dumps(data, indent=indent, ensure_ascii=False)
    return (text + ("\n" if newline else "")).encode("utf-8")


def _sha(data: bytes | None) -> str | None:
    return hashlib.sha256(data).hexdigest() if data is not None else None


# --- the manifest ----------------------------------------------------------------------------------------


def _manifest(home: Path) -> dict[str, Any]:
    return _load_manifest(home, MANIFEST)


def _backup_path(home: Path, target: Target) -> Path:
    return home / "backups" / f"mcp-{hashlib.sha256(target.key.encode()).hexdigest()[:16]}.json"


def _record_for(target: Target, home: Path, data: dict[str, Any]) -> tuple[Path, dict[str, Any]]:
    """(the CEMS_HOME whose manifest knows this target, its record): this one, else the store the file's
    entry pins (installed under another CEMS_HOME, whose manifest still has the original bytes)."""
    record = _manifest(home).get(target.key)
    if isinstance(record, dict):
        return home, record
    entry = installed_in(data, target)
    pinned = entry.get("env", {}).get("CEMS_HOME") if entry else None
    if isinstance(pinned, str) and os.path.isabs(pinned):
        record = _manifest(Path(pinned)).get(target.key)
        if isinstance(record, dict):
            return Path(pinned), record
    return home, {}


# --- install / uninstall ---------------------------------------------------------------------------------


def check(target: Target) -> None:
    """InstallError when install would refuse the target: run before anything else is installed."""
    _, data = _read_settings(target.path)
    servers, _ = _servers(data, target, create=False)
    present = (servers or {}).get(SERVER)
    if present is not None and not is_cems_entry(present):
        raise _foreign(target)


def _foreign(target: Target) -> InstallError:
    return InstallError(
        f"{target.where} is already an MCP server that is not CEMS's; remove or rename it first, "
        "nothing was changed"
    )


def recorded(target: Target, home: Path) -> bool:
    """An install under this CEMS_HOME put the server there (so uninstall takes it out unasked)."""
    return target.key in _manifest(absolute(home))


def install(target: Target, home: Path, portable: bool, python: str | None = None) -> dict[str, Any]:
    """Add (or update) the `cems` server; InstallError, with nothing changed, on an unusable file or a
    `cems` server that is someone else's."""
    home = absolute(home)
    original, data = _read_settings(target.path)
    entry = server_entry(portable, home, python)
    result: dict[str, Any] = {
        "file": str(target.path),
        "scope": target.scope,
        "where": target.where,
        "server": entry,
        "changed": False,
        "replaced": False,
    }
    record_home, record = _record_for(target, home, data)
    servers, existing = _servers(data, target, create=True)
    assert servers is not None
    present = servers.get(SERVER)
    if present == entry:
        return result
    if present is not None and not is_cems_entry(present):
        raise _foreign(target)
    if record and _sha(original) == record.get("written_sha256"):
        # Unchanged since the last install: what uninstall restores is still the file before that one.
        kept = {key: record.get(key) for key in ("created_file", "original_sha256", "backup", "existing")}
    elif present is None:
        # No CEMS server in it yet: these bytes are exactly what uninstall puts back.
        backup = _backup_path(home, target) if original is not None else None
        if backup is not None and original is not None:
            _keep_copy(backup, original)
        kept = {
            "created_file": original is None,
            "original_sha256": _sha(original),
            "backup": str(backup) if backup else None,
            "existing": existing,
        }
    else:
        # A CEMS entry with no install on record (or the file changed since): its bytes would bring that
        # entry back, so uninstall removes the entry instead of restoring them.
        kept = {"created_file": False, "original_sha256": None, "backup": None, "existing": existing}
    servers[SERVER] = entry
    new_bytes = _dump(data, original)
    _atomic_write(target.path, new_bytes)
    manifest = _manifest(home)
    manifest[target.key] = {
        "scope": target.scope,
        "file": str(target.path),
        "keys": list(target.keys),
        "entry": entry,
        **kept,
        "written_sha256": _sha(new_bytes),
    }
    _save_manifest(home, manifest, MANIFEST)
    if record_home != home:  # moved, not copied: one manifest speaks for a target
        old = _manifest(record_home)
        if old.pop(target.key, None) is not None:
            _save_manifest(record_home, old, MANIFEST)
    result.update(changed=True, replaced=present is not None)
    return result


def _keep_copy(backup: Path, original: bytes) -> None:
    """The original bytes, owner-only (the file may hold API keys: ~/.claude.json does)."""
    backup.parent.mkdir(parents=True, exist_ok=True)
    _write_backup(backup, original, 0o600)


def uninstall(target: Target, home: Path) -> dict[str, Any]:
    """Take the `cems` server out: the original bytes back when the file is as install left it, else only
    the entry (and the objects install made for it, if they hold nothing else)."""
    home = absolute(home)
    result: dict[str, Any] = {
        "file": str(target.path),
        "scope": target.scope,
        "where": target.where,
        "removed": False,
        "restored": False,
        "changed": False,
    }
    current, data = _read_settings(target.path)
    record_home, record = _record_for(target, home, data)
    if current is not None and record and _sha(current) == record.get("written_sha256"):
        backup = Path(record["backup"]) if record.get("backup") else None
        if record.get("created_file"):
            target.path.unlink()
            result.update(removed=True, restored=True, changed=True)
        elif backup is not None and backup.exists():
            original = backup.read_bytes()
            if _sha(original) == record.get("original_sha256"):
                _atomic_write(target.path, original)
                result.update(removed=True, restored=True, changed=True)
    if current is not None and not result["changed"]:
        servers, _ = _servers(data, target, create=False)
        present = (servers or {}).get(SERVER)
        if servers is not None and (is_cems_entry(present) or (record and present == record.get("entry"))):
            del servers[SERVER]
            _drop_empty(data, target, record.get("existing", len(_chain(target))))
            if record.get("created_file") and not data:
                target.path.unlink()  # nothing but what install put there
            else:
                _atomic_write(target.path, _dump(data, current))
            result.update(removed=True, changed=True)
    if record:
        manifest = _manifest(record_home)
        manifest.pop(target.key, None)
        _save_manifest(record_home, manifest, MANIFEST)
        if record.get("backup"):
            Path(record["backup"]).unlink(missing_ok=True)
    return result


def installed_in(data: dict[str, Any], target: Target) -> dict[str, Any] | None:
    try:
        servers, _ = _servers(data, target, create=False)
    except InstallError:
        return None
    entry = (servers or {}).get(SERVER)
    return entry if isinstance(entry, dict) else None


def installed(target: Target) -> dict[str, Any] | None:
    """The `cems` entry Claude Code would read there, if any (None on a missing or unreadable file)."""
    try:
        _, data = _read_settings(target.path)
    except (InstallError, OSError):
        return None
    return installed_in(data, target)
