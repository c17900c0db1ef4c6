"""`cems uninstall`: hooks, MCP server and plugin out of Claude Code, every CEMS process of this CEMS_HOME
stopped, and with --purge-data its memories deleted (the steps: uninstall_steps.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from cems_cli.cli.common import JsonOption, confirm, emit_json, fail, say, stdin_is_terminal


def uninstall(
    purge_data: bool = typer.Option(
        False,
        "--purge-data",
        help="Also delete CEMS_HOME (every memory, rule, setting and log in it) and, as root, its database "
        "under /var/lib/cems. Asks first, unless --yes.",
    ),
    yes: bool = typer.Option(False, "--yes", "-y", help="Delete with --purge-data without asking."),
    claude: Path | None = typer.Option(
        None, "--claude", help="The claude executable that removes the plugin (default: `claude` on PATH)."
    ),
    as_json: bool = JsonOption,
) -> None:
    """Remove CEMS from Claude Code and stop everything it runs; --purge-data also deletes its data.

    Takes out CEMS's hooks (the user's settings and every file an install from this CEMS_HOME wrote), its
    MCP server, the Claude Code plugin, and the backups CEMS kept of those files; stops the search server
    (and any waiting to take over), the observer and the embedded PostgreSQL. The package itself stays:
    remove it with pip, or delete the clone.
    """
    from cems_cli.cli import uninstall_steps as steps
    from cems_cli.config import get_settings

    settings = get_settings()
    home = settings.home
    if claude is not None and not claude.is_file():
        fail(f"--claude {claude}: no such file")
    if purge_data:
        problem = steps.purge_problem(home)
        if problem is not None:
            fail(problem)
        if not yes:
            where = f"{home}" + (" and its database under /var/lib/cems" if _root_cluster(settings) else "")
            if not stdin_is_terminal():
                fail(f"--purge-data deletes {where}: pass --yes to confirm (no terminal to ask)")
            if not confirm(f"Delete {where}, every memory in it included?"):
                fail("nothing was changed", 1)
    errors: list[str] = []
    hooks, failed = steps.remove_hooks(home)
    errors += failed
    mcp, failed = steps.remove_mcp(home)
    errors += failed
    plugin = steps.remove_plugin(str(claude) if claude else None)
    if plugin.get("error"):
        errors.append(f"plugin: {plugin['error']}")
    stopped, failed = steps.stop_everything(settings)
    errors += failed
    data: dict[str, Any] = {"purged": False, "removed": []}
    if purge_data and not failed:
        purged, failed = steps.purge(settings)
        errors += failed
        data = {"purged": not failed, **purged}
    elif purge_data:
        errors.append("data not deleted: a process of CEMS still runs")
    doc = {
        "home": str(home),
        "hooks": hooks,
        "mcp": mcp,
        "plugin": plugin,
        "stopped": stopped,
        "data": data,
        "errors": errors,
        "ok": not errors,
    }
    if as_json:
        emit_json(doc)
    else:
        _render(doc)
    if errors:
        raise typer.Exit(1)


def _root_cluster(settings: Any) -> bool:
    from cems_cli.paths import pgdata_path

    return pgdata_path(settings.home).is_symlink()


def _render(doc: dict[str, Any]) -> None:
    for result in doc["hooks"]:
        if result.get("changed"):
            restored = " (original restored)" if result.get("restored") else ""
            say(f"removed CEMS hooks from {result['settings']}{restored}")
        if result.get("backup_removed"):
            say(f"removed the backup {result['backup_removed']}")
    for result in doc["mcp"]:
        if result.get("backup_removed"):
            say(f"removed the backup {result['backup_removed']}")
        elif result.get("changed"):
            say(f"removed the MCP server {result['where']}")
    plugin = doc["plugin"]
    if plugin.get("skipped"):
        say(f"plugin: skipped, {plugin['skipped']}")
    elif plugin.get("uninstalled"):
        say(f"removed the Claude Code plugin ({', '.join(plugin['scopes'])})")
    stopped = doc["stopped"]
    if stopped["search_server"]["pids"]:
        say(f"stopped the search server (pid {', '.join(map(str, stopped['search_server']['pids']))})")
    if stopped["observer"].get("stopped"):
        say(f"stopped the observer (pid {stopped['observer']['pid']})")
    if stopped["database"].get("stopped"):
        say("stopped the embedded PostgreSQL")
    for path in doc["data"]["removed"]:
        say(f"deleted {path}")
    if not doc["data"]["purged"] and not doc["errors"] and Path(doc["home"]).exists():
        say(f"kept the data in {doc['home']} (delete it with --purge-data)")
    for error in doc["errors"]:
        say(f"error: {error}", err=True)
    if not doc["errors"]:
        say("CEMS is out of Claude Code; remove the package with `pip uninstall cems` (or the clone)")


def register(app: typer.Typer) -> None:
    app.command()(uninstall)
