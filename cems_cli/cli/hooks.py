"""`cems hooks install|uninstall|doctor`: wire CEMS into Claude Code and check that it answers in time."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

import typer

from cems_cli.cli.common import JsonOption, console, emit_json, fail

hooks_app = typer.Typer(help="Claude Code hooks: install, uninstall, doctor.", no_args_is_help=True)

ScopeOption = typer.Option("user", "--scope", help="user (~/.claude/settings.json) or project (./.claude/)")
SettingsOption = typer.Option(
    None, "--settings", help="Path of the settings.json to edit (overrides --scope)."
)


def _resolve(scope: str, settings: Path | None) -> tuple[Path, Path]:
    from cems_cli.config import get_settings
    from cems_cli.hooks_install import InstallError, settings_path

    try:
        return settings_path(scope, settings), get_settings().home
    except InstallError as error:
        fail(str(error))


@hooks_app.command("install")
def install(scope: str = ScopeOption, settings: Path = SettingsOption, as_json: bool = JsonOption) -> None:
    """Merge CEMS's hooks into settings.json (idempotent; a backup is kept beside it)."""
    from cems_cli.hooks_install import InstallError
    from cems_cli.hooks_install import install as do_install

    path, home = _resolve(scope, settings)
    try:
        result = do_install(path, home)
    except InstallError as error:
        fail(str(error))
    if as_json:
        emit_json(result)
    elif result["changed"]:
        console.print(f"Installed CEMS hooks ({', '.join(result['added'])}) into {path}")
        if result["backup"]:
            console.print(f"Backup of the previous file: {result['backup']}")
    else:
        console.print(f"CEMS hooks already installed in {path}")


@hooks_app.command("uninstall")
def uninstall(scope: str = ScopeOption, settings: Path = SettingsOption, as_json: bool = JsonOption) -> None:
    """Remove exactly the hooks install added."""
    from cems_cli.hooks_install import InstallError
    from cems_cli.hooks_install import uninstall as do_uninstall

    path, home = _resolve(scope, settings)
    try:
        result = do_uninstall(path, home)
    except InstallError as error:
        fail(str(error))
    if as_json:
        emit_json(result)
    elif result["changed"]:
        console.print(
            f"Removed CEMS hooks from {path}" + (" (original file restored)" if result["restored"] else "")
        )
    else:
        console.print(f"No CEMS hooks in {path}")


def _samples(cwd: str) -> dict[str, dict]:
    common = {
        "session_id": f"cems-doctor-{uuid.uuid4().hex[:8]}",
        "transcript_path": "",
        "cwd": cwd,
        "permission_mode": "default",
    }
    return {
        "session_start.py": {**common, "hook_event_name": "SessionStart", "source": "startup"},
        "user_prompt_submit.py": {
            **common,
            "hook_event_name": "UserPromptSubmit",
            "prompt": "How do we run the tests in this project?",
        },
        "pre_tool_use.py": {
            **common,
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "ls"},
            "tool_use_id": f"toolu_doctor_{uuid.uuid4().hex}",
        },
        "post_tool_use.py": {
            **common,
            "hook_event_name": "PostToolUse",
            "tool_name": "Read",
            "tool_input": {"file_path": f"{cwd}/README.md"},
            "tool_response": {
                "type": "text",
                "file": {"filePath": f"{cwd}/README.md", "content": "", "numLines": 0},
            },
            "tool_use_id": f"toolu_doctor_{uuid.uuid4().hex}",
        },
        "stop.py": {
            **common,
            "hook_event_name": "Stop",
            "stop_hook_active": True,
            "last_assistant_message": "",
        },
    }


@hooks_app.command("doctor")
def doctor(as_json: bool = JsonOption) -> None:
    """Run each hook on a sample payload; report its latency and any error."""
    from cems_cli.resources import data_dir

    hooks_dir = data_dir("hooks")
    report = []
    for script, payload in _samples(str(Path.cwd())).items():
        path = hooks_dir / script
        entry: dict = {"hook": script, "ok": False, "ms": None, "error": None}
        if not path.exists():
            entry["error"] = f"missing: {path}"
            report.append(entry)
            continue
        started = time.perf_counter()
        try:
            proc = subprocess.run(
                [sys.executable, str(path)],
                input=json.dumps(payload).encode(),
                capture_output=True,
                timeout=60,
            )
        except subprocess.TimeoutExpired:
            entry["error"] = "timed out after 60 s"
            report.append(entry)
            continue
        entry["ms"] = round((time.perf_counter() - started) * 1000, 1)
        out = proc.stdout.decode("utf-8", errors="replace").strip()
        if proc.returncode != 0:
            entry["error"] = (
                f"exit code {proc.returncode}: {proc.stderr.decode(errors='replace').strip()[:200]}"
            )
        elif out and not _is_json_object(out):
            entry["error"] = f"stdout is not one JSON object: {out[:120]!r}"
        else:
            entry["ok"] = True
            entry["output"] = json.loads(out) if out else None
        report.append(entry)
    healthy = all(e["ok"] for e in report)
    if as_json:
        emit_json({"ok": healthy, "hooks": report})
    else:
        from rich.table import Table

        table = Table(title="CEMS hooks")
        for column in ("hook", "status", "ms", "detail"):
            table.add_column(column, overflow="fold")
        for e in report:
            detail = e["error"] or ("answered" if e.get("output") else "no output (allow / nothing to add)")
            table.add_row(
                e["hook"],
                "[green]ok[/green]" if e["ok"] else "[red]error[/red]",
                "" if e["ms"] is None else f"{e['ms']:.0f}",
                detail,
            )
        console.print(table)
    if not healthy:
        raise typer.Exit(1)


def _is_json_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


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

    home = get_settings().home
    if stop:
        stopped = server.stop_server(home)
        emit_json({"stopped": stopped}) if as_json else console.print("stopped" if stopped else "not running")
        return
    if status:
        pid = server.server_pid(home)
        if as_json:
            emit_json({"running": pid is not None, "pid": pid})
        else:
            console.print(f"running  pid {pid}" if pid else "not running")
        return
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
    code = server.serve(idle)
    if code:
        fail(f"a search server already runs for {home} (pid {server.server_pid(home)})", code=1)


def register(app: typer.Typer) -> None:
    app.add_typer(hooks_app, name="hooks")
    app.command()(serve)
