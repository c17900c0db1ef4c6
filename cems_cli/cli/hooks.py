"""`cems hooks install|uninstall|doctor`: wire CEMS into Claude Code and check what Claude Code will run."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import typer

from cems_cli.cli.common import JsonOption, check_range, console, emit, emit_json, err_console, fail, say
from cems_cli.cli.hooks_doctor import diagnose, render

hooks_app = typer.Typer(help="Claude Code hooks: install, uninstall, doctor.", no_args_is_help=True)

ScopeOption = typer.Option(
    None,
    "--scope",
    help="user (~/.claude/settings.json, the default), project (./.claude/settings.json, committed: "
    "portable `cems-hook` commands) or local (./.claude/settings.local.json).",
)
SettingsOption = typer.Option(
    None,
    "--settings",
    help="Path of the settings.json to use instead of the file of --scope (the command form still follows "
    "--scope: pinned unless --scope project).",
)
McpOption = typer.Option(
    False,
    "--mcp",
    help="Also register `cems mcp` as the MCP server `cems` where Claude Code reads it for --scope: "
    "./.mcp.json (project, portable `cems mcp`), ~/.claude.json (user) or this folder's entry in it (local). "
    "Uninstall removes it when given, or when an install with --mcp under this CEMS_HOME put it there.",
)
DoctorScopeOption = typer.Option(
    None, "--scope", help="Check only this file: user, project or local (default: all three)."
)
DoctorSettingsOption = typer.Option(None, "--settings", help="Check only this settings file.")
RunOption = typer.Option(
    True,
    "--run/--no-run",
    help="Run each installed command that is exactly one CEMS writes on a sample payload (default), or "
    "only read.",
)


def _resolve(scope: str | None, settings: Path | None) -> tuple[Path, Path, str]:
    """(settings file, CEMS_HOME, scope). With --settings alone the file is treated like the user's own."""
    from cems_cli.config import get_settings
    from cems_cli.plumbing.hooks_install import InstallError, settings_path

    try:
        return settings_path(scope or "user", settings), _home(get_settings().home), scope or "user"
    except InstallError as error:
        fail(str(error))


def _home(home: Path) -> Path:
    from cems_cli.plumbing.hooks_install import absolute

    return absolute(home)


def _standard_files(cwd: Path) -> list[tuple[str, Path]]:
    """The settings files Claude Code reads hooks from (besides managed policy and plugins), deduplicated:
    started in the home folder, the project file *is* the user file."""
    from cems_cli.plumbing.hooks_install import SCOPES, settings_path

    files: list[tuple[str, Path]] = []
    seen: set[Path] = set()
    for scope in SCOPES:
        path = settings_path(scope, None, cwd)
        key = path.resolve()
        if key not in seen:
            seen.add(key)
            files.append((scope, path))
    return files


@hooks_app.command("install")
def install(
    scope: str | None = ScopeOption,
    settings: Path | None = SettingsOption,
    mcp: bool = McpOption,
    as_json: bool = JsonOption,
) -> None:
    """Merge CEMS's hooks into a settings file (idempotent; a backup is kept beside it).

    user, local, --settings: `CEMS_HOME=<store> <python> <hooks dir>/<handler>.py` (absolute, store pinned).

    project: `cems-hook <handler>` (no paths, no store: each teammate's own).

    --mcp: also the MCP server (`cems mcp`), pinned or portable the same way.
    """
    from cems_cli.mcp import register
    from cems_cli.plumbing.hooks_install import InstallError, style_for
    from cems_cli.plumbing.hooks_install import install as do_install
    from cems_cli.plumbing.hooks_scan import scan_settings

    path, home, scope = _resolve(scope, settings)
    style = style_for(scope)
    try:
        target = register.target_for(scope) if mcp else None
        if target is not None:
            register.check(target)  # refused before the hooks go in: all or nothing
        result = do_install(path, home, style=style)
        result["mcp"] = (
            register.install(target, home, portable=style == "portable") if target is not None else None
        )
    except InstallError as error:
        fail(str(error))
    # Another file Claude Code reads with a different CEMS command for the same event: both run (identical
    # commands are run once). An explicit --settings file may belong to another HOME or project
    # altogether, so it is not compared.
    resolved = path.resolve()
    elsewhere = []
    for other_scope, other in [] if settings is not None else _standard_files(Path.cwd()):
        if other.resolve() != resolved and any(
            result["commands"].get(hook.event, hook.command) != hook.command
            for hook in scan_settings(other, other_scope).hooks
        ):
            elsewhere.append({"scope": other_scope, "settings": str(other)})
    result["also_installed_in"] = elsewhere
    result["warnings"] = []
    if style == "portable" and shutil.which("cems-hook") is None:
        result["warnings"].append(
            "cems-hook is not on PATH here: Claude Code finds it only where cems is installed on its PATH"
        )
    if result["mcp"] is not None and style == "portable" and shutil.which("cems") is None:
        result["warnings"].append(
            "cems is not on PATH here: Claude Code starts `cems mcp` only where cems is installed on its PATH"
        )
    for duplicate in elsewhere:
        result["warnings"].append(
            f"CEMS hooks are also installed in {duplicate['settings']} ({duplicate['scope']}): Claude Code "
            "would run each of them twice; remove one with "
            f"`cems hooks uninstall --scope {duplicate['scope']}`"
        )
    if as_json:
        emit_json(result)
        return
    if result["changed"]:
        say(f"Installed CEMS hooks ({', '.join(result['added'])}) into {path}")
        if result["replaced"]:
            say(f"Replaced older CEMS commands for: {', '.join(result['replaced'])}")
        if result["backup"]:
            say(f"Backup of the previous file: {result['backup']}")
    else:
        say(f"CEMS hooks already installed in {path}")
    say(f"Command: {result['commands']['PreToolUse']}  (one per event)")
    if result["mcp"] is not None:
        _print_mcp(result["mcp"], installing=True)
    for warning in result["warnings"]:
        say(f"warning: {warning}")


@hooks_app.command("uninstall")
def uninstall(
    scope: str | None = ScopeOption,
    settings: Path | None = SettingsOption,
    mcp: bool = McpOption,
    as_json: bool = JsonOption,
) -> None:
    """Remove exactly the hooks install added (restoring the original file when it is as install left it),
    and the MCP server the same way (see --mcp)."""
    from cems_cli.mcp import register
    from cems_cli.plumbing.hooks_install import InstallError
    from cems_cli.plumbing.hooks_install import uninstall as do_uninstall

    path, home, scope = _resolve(scope, settings)
    try:
        target = register.target_for(scope)
        # An explicit --settings file says nothing about Claude Code's MCP files: only --mcp touches them.
        take_mcp = mcp or (settings is None and register.recorded(target, home))
        result = do_uninstall(path, home)
        result["mcp"] = register.uninstall(target, home) if take_mcp else None
    except InstallError as error:
        fail(str(error))
    if as_json:
        emit_json(result)
        return
    if result["changed"]:
        say(f"Removed CEMS hooks from {path}" + (" (original file restored)" if result["restored"] else ""))
    else:
        say(f"No CEMS hooks in {path}")
    if result["mcp"] is not None:
        _print_mcp(result["mcp"], installing=False)


def _print_mcp(result: dict[str, Any], installing: bool) -> None:
    where = result["where"]
    if installing:
        text = (
            f"Registered the MCP server cems in {where}"
            if result["changed"]
            else f"MCP server cems already registered in {where}"
        )
    elif result["changed"]:
        text = f"Removed the MCP server cems from {where}" + (
            " (original file restored)" if result["restored"] else ""
        )
    else:
        text = f"No CEMS MCP server in {where}"
    say(text)


@hooks_app.command("doctor")
def doctor(
    scope: str | None = DoctorScopeOption,
    settings: Path | None = DoctorSettingsOption,
    run: bool = RunOption,
    as_json: bool = JsonOption,
) -> None:
    """Check what Claude Code will run: which CEMS hooks are installed in which settings file, with which
    command; run each one that is exactly a command CEMS writes on a sample payload (latency, errors; never
    through a shell, never one with a problem); report missing, doubled, broken, wrongly pinned or
    unrecognised hooks. Exits 1 when something is wrong."""
    from cems_cli.config import get_settings
    from cems_cli.plumbing.hooks_install import SCOPES, settings_path

    cwd = Path.cwd()
    home = _home(get_settings().home)
    if settings is not None:
        files = [(scope or "settings", settings_path("user", settings))]
    elif scope is not None:
        if scope not in SCOPES:
            fail(f"unknown scope {scope!r} (expected one of: {', '.join(SCOPES)})")
        files = [(scope, settings_path(scope, None, cwd))]
    else:
        files = _standard_files(cwd)
    doc = diagnose(files, home, cwd, run)
    if as_json:
        emit_json(doc)
    else:
        render(doc)
    if not doc["ok"]:
        raise typer.Exit(1)


def serve(
    daemon: bool = typer.Option(False, "--daemon", help="Start in the background and return."),
    stop: bool = typer.Option(False, "--stop", help="Stop the running server."),
    status: bool = typer.Option(False, "--status", help="Is it running?"),
    idle: float = typer.Option(None, "--idle-timeout", help="Exit after this many idle seconds."),
    as_json: bool = JsonOption,
) -> None:
    """The warm search server the prompt hook talks to (hooks start it on demand)."""
    from cems_cli.config import get_settings
    from cems_cli.server import daemon as server

    check_range("--idle-timeout", idle, 1, 7 * 86400)  # NaN never timed out; a week is "until stopped"
    home = get_settings().home
    if stop:
        report = server.stop_servers(home)
        if as_json:
            emit_json(report.to_json())
        else:
            _print_stopped(report)
        if report.still_running:
            raise typer.Exit(1)
        return
    if status:
        pid = server.server_pid(home)
        emit(as_json, {"running": pid is not None, "pid": pid},
             f"running  pid {pid}" if pid else "not running")
        return
    from cems_cli.plumbing.private_dir import NotPrivate

    try:  # checked here too, so a folder another user could reach is reported, not only logged
        server.prepare_socket_dir(home)
    except NotPrivate as error:
        fail(str(error), code=1)
    if daemon:
        from cems_cli.server.client import call, spawn

        spawn(str(home))
        for _ in range(200):
            answer = call(str(home), {"op": "ping"}, 0.5)
            if answer:
                emit_json({"running": True, "pid": answer["pid"]}) if as_json else console.print(
                    f"running  pid {answer['pid']}"
                )
                return
            time.sleep(0.1)
        fail(f"the search server did not start (see {home / 'logs' / 'server.log'})", code=1)
    try:
        code = server.serve(idle)
    except NotPrivate as error:
        fail(str(error), code=1)
    if code:
        fail(f"a search server already runs for {home} (pid {server.server_pid(home)})", code=1)


def _print_stopped(report: Any) -> None:
    """What `serve --stop` did, one line (errors on stderr: a server still running)."""
    if report.stopped:
        pids = ", ".join(str(pid) for pid in report.stopped)
        text = f"stopped the search server (pid {pids})"
        if len(report.stopped) > 1:
            text = f"stopped {len(report.stopped)} search servers, the serving one and those waiting ({pids})"
        if report.forced:
            text += f"; {', '.join(map(str, report.forced))} ignored SIGTERM and was killed"
        console.print(text, markup=False)
    elif not report.still_running:
        console.print("not running", markup=False)
    if report.still_running:
        pids = ", ".join(str(pid) for pid in report.still_running)
        err_console.print(f"error: a search server still runs: pid {pids}", markup=False)


def register(app: typer.Typer) -> None:
    app.add_typer(hooks_app, name="hooks")
    app.command()(serve)
