"""The steps of `cems uninstall`: CEMS out of Claude Code, what it runs stopped, (asked) its data deleted.

Reuses what each part's own command does (`cems hooks uninstall`, the MCP registration, `cems plugin
uninstall`, `cems serve --stop`, `cems observe stop`, `cems db stop`); this module only decides where to look
and in which order:

1. registrations first, so nothing starts a server again while the rest runs: the hooks of the user's
   settings file and of every file this CEMS_HOME's install manifest names (project and local installs in
   other folders too), the MCP server the same way, and the backups CEMS kept of those files;
2. the processes of this CEMS_HOME: every search server (also one waiting to take over), the observer, and
   the embedded PostgreSQL;
3. with `purge`, the data: CEMS_HOME itself and, as root, its cluster under /var/lib/cems (and the
   root-owned copy of the PostgreSQL programs once no cluster there needs it).

Each step reports what it did; a step that fails is reported and the others still run.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from cems_cli.config import Settings

# Files only CEMS puts in a data folder: one of them must be there before the folder is deleted, so that a
# CEMS_HOME pointed at a folder of the user's own (a project, the home folder) is never removed.
MARKERS = (
    "pg.pass",
    ".pg.lock",
    "hooks-installed.json",
    "mcp-installed.json",
    "spool.db",
    "rules.snapshot.json",
    "observer.pid",
    "capture.lock",
    "pg",
)
BACKUP_SUFFIX = ".cems-backup"  # hooks_install: the copy of a settings file kept beside it


def purge_problem(home: Path) -> str | None:
    """Why `home` must not be deleted as CEMS's data folder (None: it may)."""
    try:
        info = os.lstat(home)
    except FileNotFoundError:
        return None  # nothing to delete
    except OSError as error:
        return f"{home} cannot be read ({error.strerror})"
    if os.path.islink(home):
        return f"{home} is a symbolic link; remove it and what it points to yourself"
    import stat

    if not stat.S_ISDIR(info.st_mode):
        return f"{home} is not a folder"
    resolved = home.resolve()
    user_home = Path.home().resolve()
    if resolved == Path("/") or resolved == user_home or resolved in user_home.parents:
        return f"CEMS_HOME is {home}, which holds far more than CEMS's data; delete CEMS's files yourself"
    try:
        names = set(os.listdir(home))
    except OSError as error:
        return f"{home} cannot be listed ({error.strerror})"
    if names and not names & set(MARKERS):
        return (
            f"{home} does not look like a CEMS data folder (none of {', '.join(MARKERS[:4])}, …); "
            "nothing was deleted"
        )
    return None


# --- 1. registrations ------------------------------------------------------------------------------------


def _hook_files(home: Path) -> list[Path]:
    """The user's settings file and every file this home's install manifest knows."""
    from cems_cli.plumbing.hooks_install import _load_manifest, settings_path

    files = [settings_path("user", None)]
    for key in _load_manifest(home):
        path = Path(key)
        if path.is_absolute() and path not in files:
            files.append(path)
    return files


def remove_hooks(home: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """(one result per settings file, errors): `cems hooks uninstall` on each, then its backup."""
    from cems_cli.plumbing.hooks_install import InstallError
    from cems_cli.plumbing.hooks_install import uninstall as uninstall_hooks
    from cems_cli.plumbing.hooks_scan import scan_settings

    results: list[dict[str, Any]] = []
    errors: list[str] = []
    for path in _hook_files(home):
        backup = path.with_name(path.name + BACKUP_SUFFIX)
        try:
            result = uninstall_hooks(path, home)
        except (InstallError, OSError) as error:
            errors.append(str(error))
            results.append({"settings": str(path), "error": str(error), "changed": False})
            continue
        # The backup is the user's file from before the first install: redundant once no CEMS hook is left
        # (and a copy of a file that may hold API keys). Kept while hooks remain, or the file is unreadable.
        result["backup_removed"] = None
        scan = scan_settings(path, "user")
        if backup.is_file() and not backup.is_symlink() and not scan.hooks and scan.error is None:
            backup.unlink()
            result["backup_removed"] = str(backup)
        if result["changed"] or result["backup_removed"]:
            results.append(result)
    return results, errors


def _mcp_targets(home: Path) -> list[Any]:
    from cems_cli.mcp import register

    targets = [register.target_for("user")]
    for record in register._manifest(home).values():
        if not isinstance(record, dict) or not isinstance(record.get("file"), str):
            continue
        keys = record.get("keys") or []
        scope = str(record.get("scope", "user"))
        target = register.Target(scope, Path(record["file"]), tuple(map(str, keys)))
        if target not in targets:
            targets.append(target)
    return targets


def remove_mcp(home: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """`cems hooks uninstall --mcp` for the user's file and every target this home's manifest knows; then
    the copies of those files kept under `$CEMS_HOME/backups`."""
    from cems_cli.mcp import register
    from cems_cli.plumbing.hooks_install import InstallError

    results: list[dict[str, Any]] = []
    errors: list[str] = []
    for target in _mcp_targets(home):
        try:
            result = register.uninstall(target, home)
        except (InstallError, OSError) as error:
            errors.append(str(error))
            results.append({"where": target.where, "error": str(error), "changed": False})
            continue
        if result["changed"]:
            results.append(result)
    if not errors:
        for copy in sorted((home / "backups").glob("mcp-*.json")):
            copy.unlink(missing_ok=True)
            results.append({"where": str(copy), "backup_removed": str(copy), "changed": True})
    return results, errors


def remove_plugin(claude: str | None) -> dict[str, Any]:
    """The Claude Code plugin, through `claude` itself (skipped when there is no `claude` to ask)."""
    from cems_cli.cli.common import CliError
    from cems_cli.cli.plugin import uninstall_everywhere

    program = claude or shutil.which("claude")
    if program is None:
        skipped = "claude is not on PATH (pass --claude PATH to remove the plugin)"
        return {"skipped": skipped, "uninstalled": False, "scopes": [], "error": None, "claude": []}
    try:
        return uninstall_everywhere(program)
    except CliError as error:  # claude could not be started
        return {"uninstalled": False, "scopes": [], "error": str(error), "claude": []}


# --- 2. processes ----------------------------------------------------------------------------------------


def stop_everything(settings: Settings) -> tuple[dict[str, Any], list[str]]:
    from cems_cli.capture import observer_daemon
    from cems_cli.paths import pgdata_path
    from cems_cli.server import daemon

    home = settings.home
    errors: list[str] = []
    search = daemon.stop_servers(home).to_json()
    if search["still_running"]:
        errors.append(f"a search server still runs: pid {', '.join(map(str, search['still_running']))}")
    observer = observer_daemon.stop_running(home)
    if observer.get("running"):
        errors.append(f"the observer still runs: pid {observer['pid']}")
    database: dict[str, Any] = {"embedded": not settings.database_url, "stopped": False}
    if not settings.database_url and (pgdata_path(home).exists() or pgdata_path(home).is_symlink()):
        from cems_cli.store.embedded import ServerError, stop_server

        try:
            database["stopped"] = stop_server(pgdata_path(home))
        except (ServerError, OSError) as error:
            database["error"] = str(error)
            errors.append(str(error))
    return {"search_server": search, "observer": observer, "database": database}, errors


# --- 3. data ---------------------------------------------------------------------------------------------


def purge(settings: Settings) -> tuple[dict[str, Any], list[str]]:
    """Delete CEMS_HOME and what belongs to it elsewhere (a root cluster, short socket folders)."""
    from cems_cli.paths import pgdata_path
    from cems_cli.store.embedded import read_postmaster, remove_root_cluster

    home = settings.home
    pgdata = pgdata_path(home)
    removed: list[str] = []
    if read_postmaster(pgdata) is not None:
        return {"removed": removed}, [f"the embedded PostgreSQL of {home} still runs: nothing was deleted"]
    problem = purge_problem(home)
    if problem is not None:
        return {"removed": removed}, [problem]
    for path in _socket_folders(settings):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
            removed.append(str(path))
    removed += remove_root_cluster(pgdata)
    if home.exists():
        shutil.rmtree(home)
        removed.append(str(home))
    return {"removed": removed}, []


def _socket_folders(settings: Settings) -> list[Path]:
    """The short socket folders (`<runtime dir>/cems-<uid>/<hash>`, private_dir.short_dir) this home used
    when a socket path under it was too long."""
    from cems_cli.paths import pgdata_path
    from cems_cli.plumbing.private_dir import problem
    from cems_cli.server.client import socket_dir
    from cems_cli.store.embedded import _socket_dir, data_dir

    home = settings.home
    pgdata = pgdata_path(home)
    found = [Path(socket_dir(str(home))), _socket_dir(data_dir(pgdata), pgdata)]
    uid = os.geteuid()
    short = [folder for folder in found if folder.parent.name == f"cems-{uid}"]
    return [folder for folder in short if problem(folder.parent, uid, others_may_traverse=True) is None]
